"""What picompact finds in its cache is not trusted for what it claims to be: another local user who shares
``XDG_CACHE_HOME`` can plant a FIFO, a symlink or a file of their own at an index's predictable name, and a forged
index can hold any number. Each is no index (the answer is a cold run's, promptly); the cache directory is the
user's own, mode 0700; and each write deletes abandoned temporaries and the indexes of sessions that are gone, so
grep's index (which holds text of the session) does not outlive it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.session import cachedir, index, index_format
from pi_compact.session.load import load_session
from tests.helpers.cli import picompact_exe, run
from tests.helpers.fixtures import PI_FIXTURES
from tests.session.test_session_index import index_usable, outcome

FIXTURE = PI_FIXTURES / "gen-multi-compaction-101.jsonl"
CHECK = ("check", "--json", "--context-window", "200000")
GREP_DECORATED = r"command: \w+q"  # a pattern whose grep keeps decorated lines: grep's own index


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(FIXTURE, path)
    return path


def _cache() -> Path:
    directory = cachedir.cache_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    return directory


def _process(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """``picompact ARGS`` as a process: a regression that blocks fails after ``timeout`` instead of hanging."""
    return subprocess.run([*picompact_exe(), *map(str, args)], capture_output=True, timeout=timeout, check=False)


# ---------------------------------------------------------------------------------------------------------------
# What is found at an index's name


def test_a_fifo_at_the_index_path_does_not_block_check_or_grep(session: Path) -> None:
    cold_check = _process(CHECK[0], session, *CHECK[1:], "--no-cache")
    cold_grep = _process("grep", session, GREP_DECORATED, "--no-cache")
    _cache()
    for decorated in (False, True):
        os.mkfifo(cachedir.index_path(session, decorated), 0o600)
    warm_check = _process(CHECK[0], session, *CHECK[1:])  # opened blocking, this would wait for a writer forever
    warm_grep = _process("grep", session, GREP_DECORATED)
    assert (warm_check.returncode, warm_check.stdout, warm_check.stderr) == (
        cold_check.returncode,
        cold_check.stdout,
        cold_check.stderr,
    )
    assert (warm_grep.returncode, warm_grep.stdout) == (cold_grep.returncode, cold_grep.stdout)
    for decorated in (False, True):  # the write that followed replaced each FIFO with a real index
        assert stat.S_ISREG(os.lstat(cachedir.index_path(session, decorated)).st_mode)
    assert index_usable(session) and index_usable(session, decorated=True)


@pytest.mark.parametrize("target", ["/dev/zero", "elsewhere"])
def test_a_symlink_at_the_index_path_is_not_followed(target: str, session: Path, tmp_path: Path) -> None:
    expected = outcome(session, cache=False)
    _cache()
    if target == "elsewhere":  # a good index of this very session, but behind a symlink
        load_session(session, cache=True)
        real = tmp_path / "planted.idx"
        shutil.move(cachedir.index_path(session), real)
        target = str(real)
    os.symlink(target, cachedir.index_path(session))
    assert not index_usable(session)
    assert outcome(session, cache=True) == expected
    assert not cachedir.index_path(session).is_symlink()  # replaced by an index of its own
    assert index_usable(session)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="only root can give a file away")
def test_an_index_owned_by_another_user_is_not_read(session: Path) -> None:
    expected = outcome(session, cache=False)
    load_session(session, cache=True)
    assert index_usable(session)
    os.chown(cachedir.index_path(session), 65534, 65534)
    assert not index_usable(session)
    assert outcome(session, cache=True) == expected


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="only root can give a directory away")
def test_a_cache_directory_of_another_user_is_neither_read_nor_written(session: Path) -> None:
    expected = outcome(session, cache=False)
    directory = _cache()
    os.chown(directory, 65534, 65534)
    assert outcome(session, cache=True) == expected
    assert list(directory.iterdir()) == []  # nothing written for that user to read


def test_a_symlinked_cache_directory_is_neither_read_nor_written(session: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "planted"
    elsewhere.mkdir()
    cachedir.cache_dir().parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, cachedir.cache_dir())
    assert outcome(session, cache=True) == outcome(session, cache=False)
    assert list(elsewhere.iterdir()) == []


def test_an_index_larger_than_its_bound_is_not_read(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_session(session, cache=True)
    size = cachedir.index_path(session).stat().st_size
    assert size <= index.size_limit(session.stat().st_size)
    monkeypatch.setattr(index, "size_limit", lambda session_size: size - 1)
    assert not index_usable(session)
    assert outcome(session, cache=True) == outcome(session, cache=False)


# ---------------------------------------------------------------------------------------------------------------
# Forged numbers


def _forge(data: bytes, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> bytes:
    """The index with ``change`` made to its document and columns, its checksums made to match."""
    parts = index_format.split(data)
    assert parts is not None
    doc, arrays = index_format.unpack(parts[1])
    columns = {name: list(values) for name, values in arrays.items()}
    change(doc, columns)
    for name in ("columns", "byteorder"):
        doc.pop(name)
    return index_format.seal(index_format.pack(doc, columns), parts[0])


def _set(column: str, at: int, value: int) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(doc: dict[str, Any], columns: dict[str, Any]) -> None:
        columns[column][at] = value

    return change


def _doc(key: str, value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(doc: dict[str, Any], columns: dict[str, Any]) -> None:
        doc[key] = value

    return change


def _huge_head_length(data: bytes) -> bytes:
    parts = index_format.split(data)
    assert parts is not None
    return index_format.seal(b"\xff\xff\xff\xff" + parts[1][4:], parts[0])


def _huge_column_count(data: bytes) -> bytes:
    parts = index_format.split(data)
    assert parts is not None
    size = int.from_bytes(parts[1][:4], "big")
    head = orjson.loads(parts[1][4 : 4 + size])
    head["columns"][0][3] = 2**62
    new = orjson.dumps(head)
    return index_format.seal(len(new).to_bytes(4, "big") + new + parts[1][4 + size :], parts[0])


FORGERIES: dict[str, Callable[[bytes], bytes]] = {
    "length-2^64-1": lambda d: _forge(d, _set("length", 0, 2**64 - 1)),
    "length-2^40": lambda d: _forge(d, _set("length", 3, 2**40)),
    "offset-2^63": lambda d: _forge(d, _set("offset", 5, 2**63)),
    "offset-past-the-file": lambda d: _forge(d, _set("offset", 1, FIXTURE.stat().st_size + 10)),
    "line-2^50": lambda d: _forge(d, _set("line", 2, 2**50)),
    "lines-2^60": lambda d: _forge(d, _doc("lines", 2**60)),
    "malformed-2^62": lambda d: _forge(d, _doc("malformed", [2**62])),
    "head-length-2^32-1": _huge_head_length,
    "column-count-2^62": _huge_column_count,
}


@pytest.mark.parametrize("forge", FORGERIES.values(), ids=FORGERIES.keys())
def test_a_forged_index_with_huge_numbers_is_ignored_not_a_crash(
    forge: Callable[[bytes], bytes], session: Path
) -> None:
    cold = run(CHECK[0], session, *CHECK[1:], "--no-cache")
    load_session(session, cache=True)
    idx = cachedir.index_path(session)
    idx.write_bytes(forge(idx.read_bytes()))
    assert not index_usable(session)
    warm = run(CHECK[0], session, *CHECK[1:])
    assert (warm.code, warm.stdout, warm.stderr) == (cold.code, cold.stdout, cold.stderr)  # not 70: no crash
    assert index_usable(session)  # rebuilt


# ---------------------------------------------------------------------------------------------------------------
# The directory, and what a write tidies


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    saved = os.umask(0o022)
    os.umask(saved)
    yield os.umask
    os.umask(saved)


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o777])
def test_the_cache_directory_is_made_0700_whatever_the_umask(
    mask: int, umask: Callable[[int], None], session: Path
) -> None:
    umask(mask)
    load_session(session, cache=True)
    umask(0o022)
    assert stat.S_IMODE(cachedir.cache_dir().stat().st_mode) == 0o700
    assert stat.S_IMODE(cachedir.index_path(session).stat().st_mode) == 0o600
    assert index_usable(session)


def test_an_open_cache_directory_is_closed_at_the_next_write(session: Path) -> None:
    directory = _cache()
    directory.chmod(0o755)
    load_session(session, cache=True)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_write_deletes_abandoned_temporaries_and_keeps_live_ones(session: Path) -> None:
    directory = _cache()
    dead = directory / f".tmp-{_dead_pid()}-1-0.idx"  # a write killed before its rename
    old = directory / f".tmp-{os.getppid()}-2-0.idx"  # its writer alive (or its pid reused), but an hour old
    live = directory / f".tmp-{os.getppid()}-3-0.idx"  # a write under way in another process
    mine = directory / f".tmp-{os.getpid()}-4-0.idx"
    other = directory / "notes.txt"  # not a name picompact writes
    for path in (dead, old, live, mine, other):
        path.write_bytes(b"partial")
    an_hour_ago = time.time() - cachedir.STALE_TEMPORARY_SECONDS - 60
    os.utime(old, (an_hour_ago, an_hour_ago))
    load_session(session, cache=True)
    assert not dead.exists() and not old.exists()
    assert live.exists() and mine.exists() and other.exists()


def test_a_killed_write_leaves_a_temporary_that_the_next_write_deletes(session: Path, tmp_path: Path) -> None:
    """A process killed between creating its temporary file and renaming it (``os._exit`` in its place)."""
    directory = _cache()
    code = (
        "import os; from pi_compact.session import cachedir\n"
        "fd = cachedir.open_cache(create=True)\n"
        "name, out = cachedir._create_temporary(fd)\n"
        "os.write(out, b'half an index')\n"
        "os._exit(9)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=False, timeout=60)
    (left,) = directory.glob(".tmp-*")
    load_session(session, cache=True)
    assert not left.exists()
    assert [p.name for p in directory.iterdir()] == [cachedir.index_name(session)]


def test_indexes_of_sessions_that_are_gone_are_deleted_at_the_next_write(session: Path, tmp_path: Path) -> None:
    deleted, replaced = tmp_path / "deleted.jsonl", tmp_path / "replaced.jsonl"
    for path in (deleted, replaced):
        shutil.copyfile(PI_FIXTURES / "gen-small-101.jsonl", path)
        assert run("grep", path, GREP_DECORATED).code in (0, 1)  # grep's index, with text of the session
        load_session(path, cache=True)  # and check's
        assert cachedir.index_path(path).exists() and cachedir.index_path(path, decorated=True).exists()
    deleted.unlink()
    replaced.unlink()
    shutil.copyfile(PI_FIXTURES / "gen-cut-points-101.jsonl", replaced)  # another file (inode) at the same path
    load_session(session, cache=True)  # any write tidies the directory
    for path in (deleted, replaced):
        assert not cachedir.index_path(path).exists() and not cachedir.index_path(path, decorated=True).exists()
    assert index_usable(session)


def test_indexes_of_another_format_and_strays_at_index_names_are_deleted(session: Path) -> None:
    directory = _cache()
    old = directory / ("0" * 16 + ".idx")
    old.write_bytes(index_format.MAGIC + (3).to_bytes(2, "big") + b"\x00" * 64)  # an older picompact's
    fifo = directory / ("1" * 16 + ".grep.idx")
    os.mkfifo(fifo)
    link = directory / ("2" * 16 + ".idx")
    os.symlink("/dev/zero", link)
    load_session(session, cache=True)
    assert not old.exists() and not fifo.exists() and not os.path.lexists(link)
    assert os.path.exists("/dev/zero")


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o777])
def test_a_missing_cache_home_is_made_0700_too(
    mask: int, umask: Callable[[int], None], session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``~/.cache`` itself, when picompact makes it first (the XDG rule: 0700), not 0777 under umask 000."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    umask(mask)
    load_session(session, cache=True)
    umask(0o022)
    assert cachedir.cache_dir() == home / ".cache" / "picompact"
    assert stat.S_IMODE((home / ".cache").stat().st_mode) == 0o700
    assert stat.S_IMODE(cachedir.cache_dir().stat().st_mode) == 0o700
    assert index_usable(session)
