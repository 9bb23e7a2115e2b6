"""The index is used only while every byte of the prefix it describes is what it was (a CRC-32 of all of it, not
samples): an edit in place anywhere in a large file, with the same length and the mtime restored or an append
after it, gives a cold run's answer. A stale index that gets past that check anyway (the file changed during the
run) is found when a body is read back: it is deleted and the command answers from the file alone, never a failure
that repeats on every run."""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.errors import FileChangedError
from pi_compact.session import cachedir, index
from pi_compact.session.load import load_session
from pi_compact.session.source import read_lines
from tests.helpers.cli import run
from tests.session.test_session_index import index_usable, outcome

CHECK = ("--context-window", "200000")


def _big_session(path: Path, entries: int = 1400, pad: int = 4000) -> None:
    """A chain of user and assistant messages, about 6 MB (more than the 4 MiB an index was once hashed whole)."""
    lines = [
        orjson.dumps(
            {"type": "session", "version": 3, "id": "big", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/tmp"}
        )
    ]
    parent = None
    for i in range(entries):
        entry_id = f"e{i:07d}"
        if i % 2 == 0:
            message: dict[str, Any] = {"role": "user", "content": f"question {i} " + "x" * pad, "timestamp": 1}
        else:
            message = {
                "role": "assistant",
                "content": [{"type": "text", "text": f"answer {i} " + "y" * pad}],
                "provider": "p",
                "model": "m",
                "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20},
                "stopReason": "stop",
                "timestamp": 1,
            }
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z"}
        lines.append(orjson.dumps({**entry, "message": message}))
        parent = entry_id
    path.write_bytes(b"\n".join(lines) + b"\n")


def _sampled(size: int) -> list[tuple[int, int]]:
    """The byte ranges a sampling fingerprint read (its first and last 64 KiB and 256 blocks of 4 KiB between)."""
    edge, samples, block = 64 * 1024, 256, 4096
    span = size - 2 * edge - block
    starts = [edge + span * k // (samples - 1) for k in range(samples)]
    return [(0, edge), (size - edge, size), *((s, s + block) for s in starts)]


def _edit_parent_in_place(path: Path, entry: int) -> None:
    """Give entry ``entry`` a parentId that names nothing, same length, away from every sampled block."""
    data = bytearray(path.read_bytes())
    needle = f'"id":"e{entry:07d}","parentId":"e{entry - 1:07d}"'.encode()
    at = data.index(needle) + len(needle) - 9
    assert not any(start < at + 8 and at < end for start, end in _sampled(len(data)))
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"zzzzzzzz")


@pytest.fixture
def big(tmp_path: Path) -> Path:
    path = tmp_path / "big.jsonl"
    _big_session(path)
    assert path.stat().st_size > 4 * 1024 * 1024
    return path


@pytest.mark.parametrize("then", ["mtime restored", "appended"])
def test_an_edit_in_place_outside_any_sample_is_seen(then: str, big: Path) -> None:
    assert run("check", big, *CHECK).code == 0  # writes the index
    assert index_usable(big)
    before = big.stat()
    _edit_parent_in_place(big, 701)
    if then == "mtime restored":
        os.utime(big, ns=(before.st_atime_ns, before.st_mtime_ns))
    else:
        with open(big, "ab") as f:
            f.write(b'{"type":"custom","id":"tail0001","parentId":"e0001399"}\n')
    assert not index_usable(big)
    assert outcome(big, cache=True) == outcome(big, cache=False)
    for args in (("check", big, *CHECK), ("check", big, *CHECK, "--json"), ("grep", big, "question 7", "--json")):
        for _ in range(2):  # and again, from the index the first run wrote
            warm, cold = run(*args), run(*args, "--no-cache")
            assert (warm.code, warm.stdout, warm.stderr) == (cold.code, cold.stdout, cold.stderr)
    warm = run("check", big, *CHECK)
    assert f"branch {699 if then == 'mtime restored' else 700})" in warm.stdout
    assert "points to parent zzzzzzzz" in warm.stderr


def _stale_index(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index that the check before use cannot tell from a good one: its fingerprint always agrees."""
    fd = os.open(path, os.O_RDONLY)
    try:
        state = index.read(path, fd, os.fstat(fd))
    finally:
        os.close(fd)
    assert state is not None
    monkeypatch.setattr(index, "fingerprint", lambda fd, length: state.crc)
    before = path.stat()
    _edit_parent_in_place(path, 701)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize(
    "args",
    [("check", *CHECK, "--json"), ("grep", "answer 70", "--json"), ("grep", "answer 70"), ("check", *CHECK)],
    ids=["check-json", "grep-json", "grep", "check"],
)
def test_a_stale_index_found_later_is_dropped_and_answered_cold(
    args: tuple[str, ...], big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Either command reads back the body of the entry edited (grep: a match in it), which shows the edit."""
    command, rest = args[0], args[1:]
    assert run(command, big, *rest).code in (0, 1)
    _stale_index(big, monkeypatch)
    cold = run(command, big, *rest, "--no-cache")
    for attempt in range(3):
        warm = run(command, big, *rest)
        assert (warm.code, warm.stdout) == (cold.code, cold.stdout), attempt
        assert "changed on disk" not in warm.stderr and warm.stderr.endswith(cold.stderr)
        assert ("answering again from the file alone" in warm.stderr) == (attempt == 0)


def test_a_load_that_meets_a_stale_index_drops_it(big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_session(big, cache=True)
    _stale_index(big, monkeypatch)
    session = load_session(big, cache=True)  # resumes from the stale index: nothing up front can tell
    with pytest.raises(FileChangedError) as raised:
        for entry in session.entries:
            entry.raw  # noqa: B018 - read back every body
    assert raised.value.index_used and raised.value.code == "changed-on-disk"
    assert not cachedir.index_path(big).exists()  # dropped at once: the next load is a cold one
    assert outcome(big, cache=True) == outcome(big, cache=False)


def test_the_fingerprint_written_is_that_of_the_bytes_parsed(tmp_path: Path) -> None:
    """``PrefixHash`` gives the CRC-32 up to the last newline read, across reads of any size, resumed or not."""
    data = b"".join(f'{{"n":{i}, "pad":"{"p" * (i * 37 % 900)}"}}\n'.encode() for i in range(400)) + b'{"torn'
    path = tmp_path / "f"
    path.write_bytes(data)
    end = data.rindex(b"\n") + 1
    for chunk in (1, 7, 64, 4096, 1 << 20):
        for start in (0, data.index(b"\n") + 1, end):
            with open(path, "rb", buffering=0) as stream:
                stream.seek(start)
                hashed = index.PrefixHash(stream, start, zlib.crc32(data[:start]))
                assert b"".join(read_lines(hashed, chunk)) == data[start:]
            assert hashed.crc_of(end) == zlib.crc32(data[:end])
            assert hashed.crc_of(end - 1) is None
    fd = os.open(path, os.O_RDONLY)
    try:
        assert index.fingerprint(fd, end) == zlib.crc32(data[:end])
        assert index.fingerprint(fd, len(data) + 1) is None  # the file is shorter than the prefix
    finally:
        os.close(fd)
