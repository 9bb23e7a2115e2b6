"""The index of a session file kept in the user's cache (``session.index``) never changes an answer: a load that
resumes from it gives what a cold load gives, after appends, rewrites in place and truncations; a corrupt,
truncated or foreign index is ignored and rebuilt; ``--no-cache`` and ``PICOMPACT_NO_CACHE`` leave it out."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.errors import SessionError
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.session import cachedir, index, index_format
from pi_compact.session.load import load_session
from pi_compact.session.tree import get_branch
from tests.helpers.cli import picompact_exe, run
from tests.helpers.fixtures import PI_FIXTURES

SESSIONS = sorted(PI_FIXTURES.glob("*.jsonl"))
POOL = [line + b"\n" for f in SESSIONS for line in f.read_bytes().split(b"\n") if line.strip()]
HOSTILE = [
    b"null\n",
    b"[1, 2]\n",
    b'"text"\n',
    b"{not json\n",
    b"\n",
    b"   \n",
    b'{"type":"session","version":3,"id":"again","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}\n',
    b'{"type":"custom","id":""}\n',
    b'{"type":"message","id":"u8bad","parentId":null,"message":{"role":"user","content":"\xff\xfe"}}\n',
    b'{"type":"session_info","id":"inf1","parentId":null,"name":42}\n',
    b"[" * 1100 + b"]" * 1100 + b"\n",
    b'{"type":"custom","id":"deep1","parentId":null,"data":' + b"[" * 1100 + b"]" * 1100 + b"}\n",
    b'{"type":"custom","id":"big1","parentId":null,"n":1e400,"m":123456789012345678901234567890}\n',
    b'{"type":"custom","id":"\\ud800","parentId":null}\n',
]


def summary(session: Any) -> dict[str, Any]:
    """Everything a command reads from a loaded session, bodies included (read last, as commands do)."""
    out: dict[str, Any] = {}
    try:
        out["check"] = check_session(session, CheckOptions(context_window=200_000)).to_json(evidence=True)
    except SessionError as exc:
        out["check"] = ("error", str(exc))
    branch = get_branch(session)
    out["branch"] = [e.id for e in branch.entries]
    out["branch_diagnostics"] = [d.to_json() for d in branch.diagnostics]
    out["leaf"] = session.leaf.id if session.leaf is not None else None
    out["diagnostics"] = [d.to_json() for d in session.diagnostics]
    out["header"] = session.header
    out["by_id"] = {k: v.index for k, v in session.by_id.items()}
    out["flags"] = (session.size, session.ends_with_newline, session.torn_last_line, session.tail, session.no_leaf)
    out["name"], out["labels"] = session.name(), session.labels()
    out["entries"] = [
        (e.line, e.index, e.offset, e.length, e.id, e.parent_id, e.type, e.role, e.timestamp, e.raw)
        for e in session.entries
    ]
    return out


def outcome(path: Path, cache: bool) -> Any:
    try:
        return summary(load_session(path, cache=cache))
    except SessionError as exc:
        return ("error", exc.code, str(exc))


def index_usable(path: Path, decorated: bool = False) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return index.read(path, fd, os.fstat(fd), decorated) is not None
    finally:
        os.close(fd)


def compaction_line(rng: random.Random, data: bytes) -> bytes:
    ids = [v["id"] for v in map(_loads, data.split(b"\n")) if isinstance(v, dict) and isinstance(v.get("id"), str)]
    kept = rng.choice(ids) if ids else "none"
    entry = {
        "type": "compaction",
        "id": f"c{rng.randrange(10**6):06x}",
        "parentId": ids[-1] if ids else None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "summary": "s",
        "firstKeptEntryId": kept,
        "tokensBefore": 9,
    }
    return orjson.dumps(entry) + b"\n"


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def mutate(rng: random.Random, path: Path) -> str:
    """One change of the kind files see: mostly appends (some torn), else rewrites and truncations."""
    data = path.read_bytes()
    op = rng.choice(["append", "append", "append", "torn", "flip", "rewrite", "truncate", "truncate-line"])
    if op in ("append", "torn"):
        lines = [rng.choice(POOL if rng.random() < 0.7 else HOSTILE) for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.3:
            lines.append(compaction_line(rng, data))
        if data and not data.endswith(b"\n") and rng.random() < 0.5:
            lines.insert(0, b"\n")  # complete a torn line
        extra = b"".join(lines)
        if op == "torn":
            extra = extra[: rng.randint(1, len(extra))]
        with open(path, "ab") as f:
            f.write(extra)
    elif op == "flip" and data:  # a byte changed in place, length kept
        at = rng.randrange(len(data))
        new = bytes([rng.choice(b'abc0{}[]":,')])
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(new)
    elif op == "rewrite":  # the same file, other content (its lines shuffled, one dropped)
        lines = data.split(b"\n")
        head, rest = lines[:1], lines[1:]
        rng.shuffle(rest)
        with open(path, "r+b") as f:
            f.write(b"\n".join(head + rest[1:]))
            f.truncate()
    else:
        cut = rng.randrange(len(data) + 1)
        if op == "truncate-line":
            cut = data.rfind(b"\n", 0, cut) + 1
        os.truncate(path, cut)
    return op


@pytest.mark.parametrize("fixture", SESSIONS, ids=lambda p: p.stem)
@pytest.mark.parametrize("seed", range(4))
def test_cached_load_equals_cold_after_random_changes(fixture: Path, seed: int, tmp_path: Path) -> None:
    rng = random.Random(f"{fixture.name}:{seed}")
    path = tmp_path / "s.jsonl"
    shutil.copyfile(fixture, path)
    assert outcome(path, cache=True) == outcome(path, cache=False)
    v3 = load_session(path).header.get("version") == 3  # older files are migrated in memory: never indexed
    assert index_usable(path) == v3
    resumed = 0
    for _ in range(8):
        usable = index_usable(path)
        op = mutate(rng, path)
        if usable and index_usable(path):
            resumed += 1
        assert outcome(path, cache=True) == outcome(path, cache=False), op
    assert (resumed > 0) == v3  # the index was really used, not rebuilt every time


def test_append_resumes_from_the_index(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-multi-compaction-101.jsonl", path)
    cold = load_session(path, cache=True)
    before = len(cold.entries)
    with open(path, "ab") as f:
        f.write(compaction_line(random.Random(1), path.read_bytes()))
    warm = load_session(path, cache=True)
    assert not any(e.loaded for e in warm.entries[:before])  # the prefix came from the index
    assert warm.entries[-1].loaded
    assert summary(warm) == summary(load_session(path))


def _cli(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``picompact ARGS`` in this process (the index is on disk either way)."""
    result = run(*args, env=env)
    return subprocess.CompletedProcess(args, result.code, result.stdout_bytes, result.stderr_bytes)


def _process(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*picompact_exe(), *map(str, args)], capture_output=True, check=False)


def _index_files() -> list[Path]:
    return sorted(cachedir.cache_dir().glob("*.idx")) if cachedir.cache_dir().is_dir() else []


def test_warm_run_reports_what_a_cold_run_reports(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = (PI_FIXTURES / "gen-branchy-101.jsonl").read_bytes()
    lines = data.split(b"\n")
    path.write_bytes(b"\n".join([lines[0], b"{broken", b"null", b"[1]", *lines[1:]]))
    first = _cli("check", path, "--json", "--context-window", "200000")
    assert first.returncode in (0, 1), first.stderr
    assert len(_index_files()) == 1
    with open(path, "ab") as f:
        f.write(b"{also broken\n" + lines[-2] + b"\n")
    warm = _cli("check", path, "--json", "--context-window", "200000")
    cold = _cli("check", path, "--json", "--context-window", "200000", "--no-cache")
    assert b"malformed-line" in warm.stderr or b"not valid JSON" in warm.stderr
    assert (warm.returncode, warm.stdout, warm.stderr) == (cold.returncode, cold.stdout, cold.stderr)


def test_no_cache_flag_and_environment_write_no_index(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-small-101.jsonl", path)
    assert _cli("check", path, "--no-cache").returncode in (0, 1)
    assert _cli("check", path, env={"PICOMPACT_NO_CACHE": "1"}).returncode in (0, 1)
    assert _index_files() == []
    assert _cli("check", path).returncode in (0, 1)
    assert len(_index_files()) == 1
    assert str(_index_files()[0]).startswith(os.environ["XDG_CACHE_HOME"])


def _corrupt_flip(data: bytes) -> bytes:
    at = len(data) * 2 // 3
    return data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]


def _parts(data: bytes) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    """The owner record, document and columns of an index file."""
    parts = index_format.split(data)
    assert parts is not None
    doc, columns = index_format.unpack(parts[1])
    return parts[0], doc, columns


def _foreign_but_well_formed(data: bytes) -> bytes:
    """A valid index whose body claims other entries (its hash made to match): still never trusted blindly."""
    owner, doc, columns = _parts(data)
    columns["offset"] = [o + 1 for o in columns["offset"]]
    return index_format.seal(index_format.pack(doc, columns), owner)


def _column_cut_short(data: bytes) -> bytes:
    """A valid index one of whose columns lacks its last entry (its hash made to match)."""
    owner, doc, columns = _parts(data)
    columns["role"] = columns["role"][:-1]
    return index_format.seal(index_format.pack(doc, columns), owner)


def _other_byte_order(data: bytes) -> bytes:
    owner, doc, columns = _parts(data)
    body = index_format.pack(doc, columns)
    other = b'"big"' if b'"byteorder":"little"' in body else b'"little"'
    body = body.replace(b'"byteorder":"little"', b'"byteorder":' + other).replace(
        b'"byteorder":"big"', b'"byteorder":' + other
    )
    size = len(body) - len(index_format.pack(doc, columns))  # the document grew or shrank by a byte
    head_len = int.from_bytes(body[:4], "big") + size
    return index_format.seal(head_len.to_bytes(4, "big") + body[4:], owner)


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda d: d[: len(d) // 2], id="truncated"),
        pytest.param(_corrupt_flip, id="corrupt"),
        pytest.param(lambda d: b"\x00" * 64, id="zeros"),
        pytest.param(lambda d: b"", id="empty"),
        pytest.param(lambda d: orjson.dumps({"entries": []}), id="foreign-json"),
        pytest.param(
            lambda d: d.replace(
                index_format.MAGIC + index_format.FORMAT.to_bytes(2, "big"), index_format.MAGIC + b"\x00\x09", 1
            ),
            id="other-version",
        ),
        pytest.param(_column_cut_short, id="column-cut-short"),
        pytest.param(_other_byte_order, id="other-byte-order"),
        pytest.param(lambda d: b"\x80\x04\x95" + d, id="pickle-like"),
    ],
)
def test_spoiled_index_is_ignored_and_rebuilt(spoil: Any, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-multi-compaction-101.jsonl", path)
    expected = outcome(path, cache=False)
    load_session(path, cache=True)
    (idx,) = _index_files()
    idx.write_bytes(spoil(idx.read_bytes()))
    assert not index_usable(path)
    assert outcome(path, cache=True) == expected
    assert index_usable(path)  # rebuilt


def test_index_of_another_file_is_not_used(tmp_path: Path) -> None:
    """An index copied from another session (other path, other inode) is refused, whatever it holds."""
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-multi-compaction-101.jsonl", one)
    shutil.copyfile(PI_FIXTURES / "gen-branchy-101.jsonl", two)
    load_session(one, cache=True)
    shutil.copyfile(cachedir.index_path(one), cachedir.index_path(two))
    assert not index_usable(two)
    assert outcome(two, cache=True) == outcome(two, cache=False)


def test_well_formed_index_with_wrong_offsets_is_refused(tmp_path: Path) -> None:
    """The hash of the body matches, so the file is read: its offsets run past the prefix and the shape check
    refuses it."""
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-multi-compaction-101.jsonl", path)
    load_session(path, cache=True)
    idx = cachedir.index_path(path)
    idx.write_bytes(_foreign_but_well_formed(idx.read_bytes()))
    assert not index_usable(path)
    assert outcome(path, cache=True) == outcome(path, cache=False)


def test_two_processes_at_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-medium-101.jsonl", path)
    for round_ in range(3):
        with open(path, "ab") as f:
            f.write(POOL[round_])
        expected = _process("check", path, "--json", "--no-cache")
        procs = [
            subprocess.Popen(
                [*picompact_exe(), "check", str(path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            for _ in range(2)
        ]
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert (proc.returncode, out, err) == (expected.returncode, expected.stdout, expected.stderr)
    assert index_usable(path)
    assert not list(cachedir.cache_dir().glob(".tmp-*"))


@pytest.mark.parametrize(
    "extra",
    [b'"n":1e400', b'"n":123456789012345678901234567890', b'"n":"\\ud800"', b'"n":' + b"[" * 300 + b"]" * 300],
    ids=["infinity", "bigint", "lone-surrogate", "deep"],
)
def test_header_values_orjson_cannot_write_back(extra: bytes, tmp_path: Path) -> None:
    """A header holding a value the index could not hold exactly: no index, the same answers."""
    path = tmp_path / "s.jsonl"
    lines = (PI_FIXTURES / "gen-small-101.jsonl").read_bytes().split(b"\n", 1)
    path.write_bytes(lines[0][:-1] + b"," + extra + b"}\n" + lines[1])
    assert outcome(path, cache=True) == outcome(path, cache=False)
    with open(path, "ab") as f:
        f.write(POOL[0])
    assert outcome(path, cache=True) == outcome(path, cache=False)


def test_unwritable_cache_is_only_slower(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache directory that cannot be made (its parent is a file) leaves check's answer as it is."""
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-small-101.jsonl", path)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    cached = _cli("check", path, "--json")
    cold = _cli("check", path, "--json", "--no-cache")
    assert (cached.returncode, cached.stdout, cached.stderr) == (cold.returncode, cold.stdout, cold.stderr)
    assert blocker.read_text() == "x"


def test_relative_xdg_cache_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert cachedir.cache_dir() == Path.home() / ".cache" / "picompact"


GREP_PATTERNS = [["e", "-m", "100000"], ["-F", "ENOENT"], ["-i", "error|fail|the"], ["-c", "a"]]


@pytest.mark.parametrize("fixture", SESSIONS, ids=lambda p: p.stem)
def test_grep_with_the_index_prints_what_a_cold_grep_prints(fixture: Path, tmp_path: Path) -> None:
    rng = random.Random(f"grep:{fixture.name}")
    path = tmp_path / "s.jsonl"
    shutil.copyfile(fixture, path)
    v3 = load_session(path).header.get("version") == 3
    run("grep", path, "x", "--json")  # writes an index: grep's own (with decorated lines) or check's, as it needs

    def usable() -> bool:
        return index_usable(path) or index_usable(path, decorated=True)

    assert usable() == v3
    resumed = 0
    for step in range(8):
        if step:
            before = usable()
            mutate(rng, path)
            resumed += before and usable()
        args = ["grep", path, *GREP_PATTERNS[step % len(GREP_PATTERNS)], "--json"]
        cached, cold = run(*args), run(*args, "--no-cache")
        assert (cached.code, cached.stdout_bytes) == (cold.code, cold.stdout_bytes)
        assert cached.stderr_bytes == cold.stderr_bytes
    assert (resumed > 0) == v3


def test_grep_and_check_keep_separate_indexes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-multi-compaction-101.jsonl", path)
    load_session(path, cache=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert index.read(path, fd, os.fstat(fd), decorated=True) is None  # check's index has no decorated lines
        load_session(path, cache=True, decorate=lambda e: ("line",))
        assert index.read(path, fd, os.fstat(fd), decorated=True) is not None
        assert index.read(path, fd, os.fstat(fd)) is not None  # check's index is still there
    finally:
        os.close(fd)


def test_small_appends_resume_from_the_index_without_writing_it_again(tmp_path: Path) -> None:
    """Writing the index costs about what it covers: a few appended lines are parsed again by each run instead, until
    the part after the index has grown enough to be worth indexing."""
    path = tmp_path / "s.jsonl"
    shutil.copyfile(PI_FIXTURES / "gen-multi-compaction-101.jsonl", path)
    load_session(path, cache=True)
    written = cachedir.index_path(path).read_bytes()
    for line in POOL[:3]:
        with open(path, "ab") as f:
            f.write(line)
        assert summary(load_session(path, cache=True)) == summary(load_session(path))
        assert cachedir.index_path(path).read_bytes() == written  # not written again, and still used:
        assert index_usable(path)
    with open(path, "ab") as f:
        while path.stat().st_size - len(PI_FIXTURES.joinpath("gen-multi-compaction-101.jsonl").read_bytes()) < 70_000:
            f.write(POOL[-1])
    assert summary(load_session(path, cache=True)) == summary(load_session(path))
    assert cachedir.index_path(path).read_bytes() != written
    fd = os.open(path, os.O_RDONLY)
    try:
        state = index.read(path, fd, os.fstat(fd))
    finally:
        os.close(fd)
    assert state is not None and state.prefix_len == path.stat().st_size  # it now covers the whole file


def _entry_line(entry_id: str, parent: str | None) -> bytes:
    entry = {"type": "custom", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z"}
    return orjson.dumps(entry) + b"\n"


def _walk_outcome(path: Path, cache: bool) -> Any:
    session = load_session(path, cache=cache)
    try:
        branch = get_branch(session)
    except SessionError as exc:
        return ("error", str(exc), exc.line), session
    return ([e.id for e in branch.entries], [d.to_json() for d in branch.diagnostics]), session


@pytest.mark.parametrize(
    "extra",
    ["continue", "takes-a-dangling-parent", "repeats-a-prefix-id", "points-into-the-prefix"],
)
def test_branch_walk_through_the_index_equals_a_cold_walk(extra: str, tmp_path: Path) -> None:
    """The walk follows the index's parent links through the prefix only while they hold for the whole file."""
    path = tmp_path / "s.jsonl"
    data = (PI_FIXTURES / "gen-branchy-101.jsonl").read_bytes()
    ids = [v["id"] for v in map(_loads, data.split(b"\n")[1:]) if isinstance(v, dict) and "id" in v]
    # an entry whose parent is missing: a later entry with that id would become its parent
    path.write_bytes(data + _entry_line("orphan01", "missing9") + _entry_line("child001", "orphan01"))
    load_session(path, cache=True)
    lines = {
        "continue": _entry_line("next0001", "child001"),
        "takes-a-dangling-parent": _entry_line("missing9", ids[3]) + _entry_line("next0001", "child001"),
        "repeats-a-prefix-id": _entry_line(ids[5], ids[2]) + _entry_line("next0001", "child001"),
        "points-into-the-prefix": _entry_line("next0001", ids[len(ids) // 2]),
    }[extra]
    with open(path, "ab") as f:
        f.write(lines)
    warm, session = _walk_outcome(path, cache=True)
    cold, _ = _walk_outcome(path, cache=False)
    assert warm == cold
    assert (session.parent_slots is not None) == (extra in ("continue", "points-into-the-prefix"))


def test_a_cycle_inside_the_prefix_is_refused_alike(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = (PI_FIXTURES / "gen-small-101.jsonl").read_bytes()
    path.write_bytes(data + _entry_line("cyc00001", "cyc00002") + _entry_line("cyc00002", "cyc00001"))
    load_session(path, cache=True)
    with open(path, "ab") as f:
        f.write(_entry_line("next0001", "cyc00002"))
    warm, session = _walk_outcome(path, cache=True)
    assert session.parent_slots is not None
    assert warm == _walk_outcome(path, cache=False)[0]
    assert warm[0] == "error"
