"""A corpus of damaged and odd session files, generated here (no fixtures on disk), run through every command.

For each kind of input and each of check, compact (on a copy), grep, show, list, context and sessions (and the
default-session discovery): the documented exit code, no traceback and no "internal error", a message naming the
file (and the line, when there is one), and the file's bytes unchanged unless the command is meant to write.

Each kind says what picompact must make of it: ``fatal`` (exit 2 from every command that reads it, with that
message), or readable with a warning ``warn`` naming ``line``; and what compact does with a copy.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from pi_compact.session.load import parse_json_line
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder, simple_session
from tests.oracle import NOT_INSTALLED, OracleRun, ask_oracle, oracle_installed

WINDOW = ("--context-window", "100000")
KEEP = ("--keep-recent-tokens", "500")
ENV = {"PICOMPACT_TORN_QUIET": "0", "PICOMPACT_FIXED_TIME": "2026-02-03T04:05:06.000Z", "PICOMPACT_ID_SEED": "c"}


def base() -> SessionBuilder:
    return simple_session(turns=6, size=2000)


def base_lines() -> list[bytes]:
    """The base session's lines (header first), without their newlines."""
    return base().to_bytes().split(b"\n")[:-1]


def joined(lines: list[bytes], end: bytes = b"\n") -> bytes:
    return b"\n".join(lines) + end


def entry(**fields: object) -> bytes:
    return orjson.dumps(fields)


# --------------------------------------------------------------------------- the kinds


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[Path], tuple[Path, int | None]]  # builds it in a directory: (path, the line to name)
    fatal: str | None = None  # every reading command exits 2 with this in its message
    warn: str | None = None  # a load warning saying this, naming FILE:LINE
    compact: tuple[int, str | None] = (0, None)  # compact's exit code on a copy, and a needle of its message
    regular: bool = True  # a regular file (its bytes can be compared before and after)
    rewrites: bool = False  # compact migrates it (v1/v2), rewriting the file and keeping the original beside it
    pi_throws: str | None = None  # Pi 1.6 itself fails to load it, with this in its error


def content(data: bytes | Callable[[], bytes], line: int | None = None) -> Callable[[Path], tuple[Path, int | None]]:
    def make(directory: Path) -> tuple[Path, int | None]:
        path = directory / "session.jsonl"
        path.write_bytes(data() if callable(data) else data)
        return path, line

    return make


def edited(change: Callable[[list[bytes]], tuple[bytes, int | None]]) -> Callable[[Path], tuple[Path, int | None]]:
    """The base session changed by ``change(lines) -> (bytes, line)``."""

    def make(directory: Path) -> tuple[Path, int | None]:
        data, line = change(base_lines())
        path = directory / "session.jsonl"
        path.write_bytes(data)
        return path, line

    return make


def insert(at: int, *new: bytes) -> Callable[[list[bytes]], tuple[bytes, int | None]]:
    """Insert lines before line ``at`` (1-based; the header is line 1); the first inserted line is named."""

    def change(lines: list[bytes]) -> tuple[bytes, int | None]:
        lines[at - 1 : at - 1] = list(new)
        return joined(lines), at

    return change


def append(*new: bytes, end: bytes = b"\n") -> Callable[[list[bytes]], tuple[bytes, int | None]]:
    def change(lines: list[bytes]) -> tuple[bytes, int | None]:
        at = len(lines) + 1
        return joined([*lines, *new], end), at

    return change


def replace_in(line: int, old: bytes, new: bytes) -> Callable[[list[bytes]], tuple[bytes, int | None]]:
    def change(lines: list[bytes]) -> tuple[bytes, int | None]:
        assert old in lines[line - 1]
        lines[line - 1] = lines[line - 1].replace(old, new, 1)
        return joined(lines), line

    return change


def header(**changes: object) -> Callable[[list[bytes]], tuple[bytes, int | None]]:
    def change(lines: list[bytes]) -> tuple[bytes, int | None]:
        value = orjson.loads(lines[0])
        for key, new in changes.items():
            if new is ...:
                value.pop(key, None)
            else:
                value[key] = new
        lines[0] = orjson.dumps(value)
        return joined(lines), 1

    return change


def fifo(directory: Path) -> tuple[Path, int | None]:
    path = directory / "session.jsonl"
    os.mkfifo(path)
    return path, None


def symlink_loop(directory: Path) -> tuple[Path, int | None]:
    path = directory / "session.jsonl"
    path.symlink_to(path)
    return path, None


def dangling(directory: Path) -> tuple[Path, int | None]:
    path = directory / "session.jsonl"
    path.symlink_to(directory / "gone.jsonl")
    return path, None


def a_directory(directory: Path) -> tuple[Path, int | None]:
    path = directory / "session.jsonl"
    path.mkdir()
    return path, None


def long_name(directory: Path) -> tuple[Path, int | None]:
    return directory / ("s" * 300 + ".jsonl"), None


def dev_null(directory: Path) -> tuple[Path, int | None]:
    path = directory / "session.jsonl"
    path.symlink_to("/dev/null")
    return path, None


def symlink_to_session(directory: Path) -> tuple[Path, int | None]:
    target = directory / "real" / "target.jsonl"
    target.parent.mkdir()
    base().write(target)
    path = directory / "session.jsonl"
    path.symlink_to(target)
    return path, None


def v1_session() -> bytes:
    """A v1 file as Pi 0.x wrote it: no ids, no parentIds."""
    lines = []
    for raw in base_lines():
        value = orjson.loads(raw)
        if value.get("type") == "session":
            value["version"] = 1
        else:
            value.pop("id", None)
            value.pop("parentId", None)
        lines.append(orjson.dumps(value))
    return joined(lines)


def v2_hook_session() -> bytes:
    lines = base_lines()
    value = orjson.loads(lines[0])
    value["version"] = 2
    lines[0] = orjson.dumps(value)
    hook = {"type": "message", "id": "h00k0001", "parentId": orjson.loads(lines[-1])["id"], "timestamp": "x"}
    hook["message"] = {"role": "hookMessage", "customType": "note", "content": "from a hook", "display": True}
    return joined([*lines, orjson.dumps(hook)])


def cycle(lines: list[bytes]) -> tuple[bytes, int | None]:
    first = orjson.loads(lines[1])
    last = orjson.loads(lines[-1])
    first["parentId"] = last["id"]
    lines[1] = orjson.dumps(first)
    return joined(lines), None


def all_orphans(lines: list[bytes]) -> tuple[bytes, int | None]:
    out = [lines[0]]
    for raw in lines[1:]:
        value = orjson.loads(raw)
        value["parentId"] = "nowhere0"
        out.append(orjson.dumps(value))
    return joined(out), len(out)


def last_id(lines: list[bytes]) -> str:
    return str(orjson.loads(lines[-1])["id"])


def child_of_last(**fields: object) -> Callable[[list[bytes]], tuple[bytes, int | None]]:
    def change(lines: list[bytes]) -> tuple[bytes, int | None]:
        new = {"type": "message", "id": "c0ffee01", "parentId": last_id(lines), "timestamp": "2026-01-01T01:00:00Z"}
        new.update(fields)
        return joined([*lines, orjson.dumps(new)]), len(lines) + 1

    return change


def compaction_leaf(first_kept: str | None) -> Callable[[list[bytes]], tuple[bytes, int | None]]:
    def change(lines: list[bytes]) -> tuple[bytes, int | None]:
        kept = first_kept if first_kept is not None else str(orjson.loads(lines[-2])["id"])
        new = {
            "type": "compaction",
            "id": "c0mpac71",
            "parentId": last_id(lines),
            "timestamp": "2026-01-01T01:00:00Z",
            "summary": "earlier work",
            "firstKeptEntryId": kept,
            "tokensBefore": 9000,
        }
        return joined([*lines, orjson.dumps(new)]), len(lines) + 1

    return change


def deep(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


def many_bad_lines(lines: list[bytes]) -> tuple[bytes, int | None]:
    return joined([lines[0], *(b"{bad %d" % i for i in range(3000)), *lines[1:]]), 2


def crlf(lines: list[bytes]) -> tuple[bytes, int | None]:
    return b"".join(line + b"\r\n" for line in lines), None


def blank_lines(lines: list[bytes]) -> tuple[bytes, int | None]:
    out: list[bytes] = []
    for raw in lines:
        out.extend([raw, b"", b"   \t"])
    return joined(out), None


def indented(lines: list[bytes]) -> tuple[bytes, int | None]:
    return joined([b"  \t" + raw for raw in lines]), None


def gzipped() -> bytes:
    return gzip.compress(base().to_bytes(), mtime=0)


def utf16() -> bytes:
    return base().to_bytes().decode().encode("utf-16")


def torn_header() -> bytes:
    return base_lines()[0][:40]


KINDS: list[Kind] = [
    # ---- not a session at all: exit 2, naming the file (and the line when there is one)
    Kind("empty", content(b""), fatal="empty file"),
    Kind("only-newlines", content(b"\n\n\n"), fatal="not a Pi session"),
    Kind("only-whitespace", content(b"   \n\t\n  "), fatal="not a Pi session"),
    Kind("plain-text", content(b"hello\nworld\n", 1), fatal="not a Pi session"),
    Kind("binary-png", content(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", 1), fatal="not valid UTF-8"),
    Kind("nul-bytes", content(b"\x00" * 4096, 1), fatal="not a Pi session"),
    Kind("gzip", content(gzipped, 1), fatal="not valid UTF-8"),
    Kind("utf16", content(utf16, 1), fatal="not valid UTF-8"),
    Kind("bom", content(lambda: b"\xef\xbb\xbf" + base().to_bytes(), 1), fatal="byte-order mark"),
    Kind("entry-first", edited(lambda lines: (joined(lines[1:]), 1)), fatal="not a session header"),
    Kind("header-without-id", edited(header(id=...)), fatal="not a session header"),
    Kind("header-numeric-id", edited(header(id=42)), fatal="not a session header"),
    Kind("header-type-case", edited(header(type="Session")), fatal="not a session header"),
    Kind("header-is-array", content(b'[{"type":"session","id":"x"}]\n', 1), fatal="not a session header"),
    Kind("header-is-string", content(b'"session"\n', 1), fatal="not a session header"),
    Kind("only-null", content(b"null\nnull\n"), fatal="not a Pi session"),
    Kind("torn-header", content(torn_header, 1), fatal="not a Pi session"),
    Kind("parent-cycle", edited(cycle), fatal="parentId cycle"),
    Kind("directory", a_directory, fatal="is a directory", regular=False),
    Kind("fifo", fifo, fatal="not a regular file", regular=False),
    Kind("symlink-loop", symlink_loop, fatal="symbolic links", regular=False),
    Kind("dangling-symlink", dangling, fatal="no such file", regular=False),
    Kind("name-too-long", long_name, fatal="too long", regular=False),
    Kind("dev-null", dev_null, fatal="not a regular file", regular=False),
    # ---- readable, with a warning naming FILE:LINE
    Kind("malformed-middle", edited(insert(4, b'{"type":"message",')), warn="not valid JSON"),
    Kind("nan-literal", edited(insert(4, b'{"type":"custom","id":"n1","parentId":null,"x":NaN}')), warn="not valid"),
    Kind("comment-line", edited(insert(3, b"// a comment")), warn="not valid JSON"),
    Kind("comment-before-header", edited(insert(1, b"# exported session")), warn="not valid JSON"),
    Kind(
        "torn-last-line",
        edited(append(b'{"type":"message","id":"t0rn0001","parentId":"a0', end=b"")),
        warn="incomplete",
        compact=(2, "is incomplete and has not changed"),
    ),
    Kind("no-final-newline", edited(lambda lines: (joined(lines, b""), len(lines))), warn="does not end with"),
    Kind("null-line", edited(insert(5, b"null")), warn="null"),
    Kind("false-zero-empty", edited(insert(5, b"false", b"0", b'""')), warn="null/false"),
    Kind("array-line", edited(insert(5, b"[1,2]")), warn="not an object"),
    Kind("number-line", edited(insert(5, b"42")), warn="not an object"),
    Kind("trailing-array", edited(append(b"[1,2]")), warn="Pi finds no leaf", compact=(2, "--leaf")),
    Kind("trailing-string", edited(append(b'"the end"')), warn="Pi finds no leaf", compact=(2, "--leaf")),
    Kind("trailing-number", edited(append(b"42")), warn="Pi finds no leaf", compact=(2, "--leaf")),
    Kind("trailing-true", edited(append(b"true")), warn="Pi finds no leaf", compact=(2, "--leaf")),
    Kind(
        "trailing-empty-id",
        edited(append(entry(type="custom", id="", parentId="a0000019"))),
        warn="Pi finds no leaf",
        compact=(2, "--leaf"),
    ),
    Kind(
        "v1-number-line",
        content(lambda: v1_session() + b"42\n"),
        warn="Pi 1.6 throws",
        pi_throws="Cannot create property 'id'",
        compact=(2, "Pi finds no leaf"),
    ),
    Kind("trailing-null", edited(append(b"null")), warn="null"),  # skipped: the leaf is the entry before it
    Kind(
        "trailing-zero-id",
        edited(append(entry(type="custom", id=0, parentId="a0000019"))),
        warn="Pi finds no leaf",
        compact=(2, "--leaf"),
    ),
    Kind("trailing-numeric-id", edited(append(entry(type="custom", id=7, parentId="a0000019"))), warn="no string id"),
    Kind(
        "entry-without-id", edited(insert(5, entry(type="custom", customType="x", parentId=None))), warn="no string id"
    ),
    Kind(
        "trailing-entry-without-id",
        edited(append(entry(type="message", parentId=None, message={"role": "user", "content": "hi"}))),
        warn="Pi finds no leaf",
        compact=(2, "--leaf"),  # Pi's branch is empty
    ),
    Kind("numeric-id", edited(insert(5, entry(type="custom", id=5, parentId=None))), warn="no string id"),
    Kind(
        "duplicate-id",
        edited(lambda lines: (joined([*lines, lines[3]]), len(lines) + 1)),
        warn="also used on line",
        compact=(2, "nothing to compact"),  # the later copy wins: the branch is the first three entries
    ),
    Kind(
        "orphan-parent",
        edited(replace_in(6, b'"parentId":"a0000004"', b'"parentId":"ffffffff"')),
        warn="not in the file",
    ),
    Kind("all-orphans", edited(all_orphans), warn="not in the file", compact=(2, "nothing to compact")),
    Kind("invalid-utf8", edited(replace_in(3, b"Turn 0", b"Turn \xff\xfe0")), warn="not valid UTF-8"),
    Kind("invalid-utf8-header", edited(replace_in(1, b'"/repo"', b'"/re\xc3po"')), warn="not valid UTF-8"),
    Kind("surrogate-bytes", edited(replace_in(3, b"Turn 0", b"Turn \xed\xa0\x800")), warn="not valid UTF-8"),
    Kind("overlong-utf8", edited(replace_in(3, b"Turn 0", b"Turn \xc0\xaf0")), warn="not valid UTF-8"),
    Kind(
        "deep-100000",
        edited(append(b'{"type":"custom","id":"d33p0001","parentId":"a0000019","data":' + deep(100_000) + b"}")),
        warn="nested deeper",
    ),
    Kind(
        "deep-1500-in-message",
        edited(
            append(
                b'{"type":"message","id":"d33p0002","parentId":"a0000019","message":{"role":"user","content":"x",'
                b'"extra":' + deep(1500) + b"}}"
            )
        ),
        warn="nested deeper",
    ),
    Kind("many-bad-lines", edited(many_bad_lines), warn="not valid JSON"),
    Kind("version-string-3", edited(header(version="3")), warn="not a JSON number"),
    Kind("version-abc", edited(header(version="abc")), warn="not a JSON number"),
    Kind("version-true", edited(header(version=True)), warn="not a JSON number", compact=(2, "will not rewrite")),
    Kind("version-1-with-ids", edited(header(version=1)), warn="flatten", compact=(2, "will not rewrite")),
    Kind(
        "first-kept-elsewhere",
        edited(compaction_leaf("n0t0nbr4")),
        warn="not on the branch before it",
        compact=(2, "already a compaction"),
    ),
    # ---- odd but valid: read without a fatal error (a warning is allowed, none is required)
    Kind("symlink-to-session", symlink_to_session),
    Kind("v1-no-ids", content(v1_session), rewrites=True),
    Kind("v2-hook-message", content(v2_hook_session), rewrites=True),
    Kind("version-missing", edited(header(version=...)), compact=(2, "will not rewrite")),
    Kind("version-99", edited(header(version=99))),
    Kind("crlf", edited(crlf)),
    Kind("blank-lines-between", edited(blank_lines)),
    Kind("indented-lines", edited(indented)),
    Kind("lone-surrogate-escape", edited(replace_in(3, b"Turn 0", b"Turn \\ud800 0"))),
    Kind("control-characters", edited(replace_in(3, b"Turn 0", b"Turn \\u001b[31m\\u0007\\u0000 0"))),
    Kind("lone-carriage-returns", edited(replace_in(3, b"Turn 0", b"Turn \\r 0\\r"))),
    Kind(
        "long-line-2mb",
        edited(child_of_last(message={"role": "user", "content": "z" * 2_000_000})),
        compact=(2, "nothing written"),  # the kept tail alone is most of the context: too little to gain
    ),
    Kind(
        "huge-numbers",
        edited(append(b'{"type":"custom","id":"b1g","parentId":"a0000019","n":1' + b"0" * 40 + b',"f":1e400}')),
    ),
    Kind("duplicate-keys", edited(append(b'{"type":"custom","id":"k1","id":"k2","parentId":"a0000019"}'))),
    Kind(
        "second-header",
        edited(insert(6, b'{"type":"session","version":3,"id":"other","cwd":"/x"}')),
        warn="another session header",
    ),
    Kind("compaction-leaf", edited(compaction_leaf(None)), compact=(2, None)),
    Kind("content-null", edited(child_of_last(message={"role": "user", "content": None}))),
    Kind("message-missing", edited(child_of_last()), warn="Pi 1.6 throws", pi_throws="reading 'role'"),
    Kind("unknown-role", edited(child_of_last(message={"role": "wizard", "content": "spell"}))),
    Kind("unknown-entry-type", edited(append(b'{"type":"hologram","id":"h0l0","parentId":"a0000019","x":1}'))),
    Kind("bad-timestamp", edited(child_of_last(message={"role": "user", "content": "t"}, timestamp="yesterday"))),
    Kind("usage-strings", edited(replace_in(6, b'"input":', b'"input":"lots","was":'))),
    Kind("tool-args-string", edited(replace_in(4, b'"arguments":{', b'"arguments":"raw","was":{'))),
    Kind("tool-result-unmatched", edited(replace_in(5, b'"toolCallId":"call_0"', b'"toolCallId":"nobody"'))),
    Kind("label-nowhere", edited(child_of_last(type="label", targetId="nowhere", label="x"))),
    Kind("label-leaf", edited(child_of_last(type="label", targetId="a0000002", label="start"))),
    Kind(
        "session-info-odd-name",
        edited(child_of_last(type="session_info", name=["not", "a", "string"])),
        warn="Pi 1.6 throws",
        pi_throws="trim is not a function",
    ),
    Kind("weird-keys", edited(child_of_last(message={"role": "user", "content": "k"}, **{"": 1, "é\u2028": 2}))),
    Kind(
        "image-block",
        edited(
            child_of_last(
                message={"role": "user", "content": [{"type": "image", "data": "A" * 90000, "mimeType": "image/png"}]}
            )
        ),
    ),
    Kind("trailing-blank-lines", edited(lambda lines: (joined(lines) + b"\n\n  \n", None))),
]


def test_the_corpus_is_big_enough() -> None:
    assert len(KINDS) >= 60
    assert len({k.name for k in KINDS}) == len(KINDS)


# --------------------------------------------------------------------------- running every command over it


def project(tmp_path: Path) -> tuple[Path, Path]:
    """A project directory and Pi's session directory for it (where discovery looks)."""
    cwd = tmp_path / "proj"
    cwd.mkdir()
    sessions = (
        Path(os.environ["PI_CODING_AGENT_DIR"]) / "sessions" / ("--" + str(cwd).lstrip("/").replace("/", "-") + "--")
    )
    sessions.mkdir(parents=True)
    return cwd, sessions


def digest(path: Path) -> str | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def assert_clean(result, what: str) -> None:
    assert "Traceback" not in result.stderr, (what, result.stderr)
    assert "internal error" not in result.stderr, (what, result.stderr)


def assert_fatal(result, kind: Kind, path: Path, line: int | None, what: str) -> None:
    assert_clean(result, what)
    assert result.code == 2, (what, result.code, result.stderr)
    errors = [x for x in result.stderr.splitlines() if x.startswith("picompact: error: ")]
    assert len(errors) == 1, (what, result.stderr)
    assert str(path) in errors[0], (what, errors[0])
    assert kind.fatal is not None and kind.fatal in errors[0], (what, errors[0])
    if line is not None:
        assert f"{path}:{line}:" in errors[0], (what, errors[0])


def assert_warned(result, kind: Kind, path: Path, line: int | None, what: str) -> None:
    if kind.warn is None:
        return
    warnings = [x for x in result.stderr.splitlines() if x.startswith("picompact: warning: ")]
    named = [x for x in warnings if kind.warn in x]
    assert named, (what, result.stderr)
    if line is not None:
        assert any(f"{path}:{line}:" in x for x in named), (what, line, named)
    else:
        assert all(str(path) in x for x in named), (what, named)


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_command_on_hostile_input(tmp_path: Path, kind: Kind) -> None:
    cwd, sessions = project(tmp_path)
    path, line = kind.make(sessions)
    before = digest(path)
    reading = [
        ("check", (str(path), *WINDOW)),
        ("check --json", ("check", str(path), *WINDOW, "--json")),
        ("list", ("list", str(path))),
        ("grep", ("grep", ".", str(path))),
        ("grep -v -c", ("grep", "zzz", str(path), "-v", "-c")),
        ("context", ("context", str(path))),
        ("show", ("show", "a0000002", str(path))),
    ]
    for what, args in reading:
        args = args if what != "check" else ("check", *args)
        result = run(*args, env=ENV, cwd=cwd)
        assert digest(path) == before, (what, "changed the file")
        if kind.fatal:
            assert_fatal(result, kind, path, line, what)
            if what == "check --json":
                assert result.json["error"]["exit_code"] == 2
            continue
        assert_clean(result, what)
        expected = {"check": {0, 1}, "check --json": {0, 1}, "grep": {0, 1}, "grep -v -c": {0, 1}}.get(what, {0})
        if what == "show" and result.code == 2:
            assert "no entry with id" in result.stderr or "not on the current branch" in result.stderr, result.stderr
            continue
        assert result.code in expected, (what, result.code, result.stderr)
        if what in ("check", "list", "context"):
            assert_warned(result, kind, path, line, what)

    # sessions and the default session: never hang, never crash, the file untouched
    listed = run("sessions", "--cwd", cwd, "--json", env=ENV)
    assert_clean(listed, "sessions")
    assert listed.code == 0, listed.stderr
    default = run("check", *WINDOW, env=ENV, cwd=cwd)
    assert_clean(default, "check without SESSION")
    assert default.code in ({2} if kind.fatal else {0, 1}), default.stderr
    assert digest(path) == before

    # compact works on a copy; the original is never touched
    if not kind.regular or kind.fatal:
        result = run("compact", str(path), *WINDOW, *KEEP, env=ENV, cwd=cwd)
        assert_fatal(result, kind, path, line, "compact") if kind.fatal else assert_clean(result, "compact")
        assert digest(path) == before
        return
    copy = tmp_path / "copy" / "session.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    original = copy.read_bytes()
    result = run("compact", str(copy), *WINDOW, *KEEP, env=ENV, cwd=cwd)
    assert_clean(result, "compact")
    code, needle = kind.compact
    assert result.code == code, (result.code, result.stderr)
    if needle is not None:
        assert needle in result.stderr, result.stderr
    if code != 0:
        assert copy.read_bytes() == original
        errors = [x for x in result.stderr.splitlines() if x.startswith("picompact: error: ")]
        assert len(errors) == 1 and str(copy) in errors[0], result.stderr
    elif kind.rewrites:  # a v1/v2 file is rewritten in v3 form, as Pi does, and the original kept beside it
        assert not copy.read_bytes().startswith(original)
        assert any(p.read_bytes() == original for p in copy.parent.iterdir() if p != copy)
    else:  # appended to: every byte that was there is still there
        data = copy.read_bytes()
        assert data.startswith(original), "the file was rewritten, not appended to"
        written = data[len(original) :]
        assert written.count(b"\n") >= 1 and all(parse_json_line(x) for x in written.strip().split(b"\n"))
    assert digest(path) == before


# --------------------------------------------------------------------------- and Pi agrees on what is there


READABLE = [k for k in KINDS if not k.fatal]


@pytest.fixture(scope="module")
def pi_reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str | None, OracleRun]]:
    """Pi's ``analyze --brief`` of every readable kind, each built in a directory of its own: kind name -> (the
    digest of the file Pi read, what the oracle printed and its exit status)."""
    if not oracle_installed():
        pytest.skip(NOT_INSTALLED)
    root = tmp_path_factory.mktemp("pi-reads")
    paths = {}
    for kind in READABLE:
        (root / kind.name).mkdir()
        paths[kind.name], _ = kind.make(root / kind.name)
    return {name: (digest(path), ask_oracle("analyze", path, "--brief")) for name, path in paths.items()}


@pytest.mark.parametrize("kind", READABLE, ids=[k.name for k in READABLE])
def test_the_branch_agrees_with_pi(
    tmp_path: Path, kind: Kind, pi_reads: dict[str, tuple[str | None, OracleRun]]
) -> None:
    path, _ = kind.make(tmp_path)
    read, proc = pi_reads[kind.name]
    assert read == digest(path)  # Pi read the bytes this test's file holds
    pi = proc.json
    if kind.pi_throws is not None:  # Pi 1.6 itself throws on this file; picompact reads it (checked above)
        assert proc.returncode != 0 and kind.pi_throws in str(pi.get("error")), pi
        return
    assert proc.returncode == 0, proc.stdout[-2000:]
    ours = run("check", path, *WINDOW, "--json", env=ENV).json
    assert ours["branch_length"] == pi["branchLength"]
    if pi["leaf"] is None:  # Pi finds no leaf (the last entry has no id, or is not an object): neither does picompact
        assert ours["leaf_id"] is None
        assert any(d["code"] == "leaf-without-id" for d in ours["diagnostics"])
    elif ours["session"].get("version", 3) >= 2:  # v1 ids are random in Pi
        # An id that is not a string (7) still makes Pi's leaf; picompact names entries by string ids only
        assert ours["leaf_id"] == (pi["leaf"]["id"] if isinstance(pi["leaf"]["id"], str) else None)
