"""Values no real session holds, and every command still ends with an answer or a clear message (never exit 70).

A header version of "0x" and 300 "f" (or 10^400, 1e400, -1e400, "Infinity", a 2,000-digit binary string): Pi reads
each with JavaScript's ``Number()``, so picompact does; a usage total of 1e400 (``JSON.parse`` makes it Infinity:
Pi's context is then Infinity, over any threshold, and ``JSON.stringify`` writes it as null); a header timestamp of
the year 1 or 9999 with an offset that moves it past Python's years (JavaScript holds it)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from pi_compact.js import JS_INFINITY, js_double, js_integer, js_quotient, js_to_number
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder
from tests.oracle import ask_oracle, oracle_for_comparison

VERSIONS = [
    '"0x' + "f" * 300 + '"',
    "1e400",
    "-1e400",
    "1" + "0" * 400,
    "-" + "1" + "0" * 400,
    '"1e400"',
    '"-Infinity"',
    '"Infinity"',
    '"0b' + "1" * 2000 + '"',
    "1e-400",
    "-3",
    '"  0x1F  "',
]
USAGES = ["1e400", "-1e400", "1" + "0" * 400, "-" + "1" + "0" * 400, "1e308", "1.5e300"]


def _session(path: Path, version: str = "3", total: str | None = None, replies: int = 3) -> Path:
    sb = SessionBuilder()
    for n in range(replies):
        sb.user(f"question {n} " + "word " * 40)
        sb.assistant("answer " * 20, usage=123456 + n)
    text = b"".join(line + b"\n" for line in sb.lines()).decode()
    text = text.replace('"version":3', f'"version":{version}', 1)
    if total is not None:
        text = text.replace("123457", total)  # the second reply's input and totalTokens
    path.write_text(text)
    return path


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: v[:12])
def test_a_header_version_of_any_size_is_read_as_pi_reads_it(tmp_path: Path, version: str) -> None:
    path = _session(tmp_path / "s.jsonl", version)
    before = path.read_bytes()
    for args in (("check", "--context-window", "100000"), ("list",), ("lint",), ("audit",), ("grep", "question")):
        result = run(args[0], path, *args[1:])
        assert result.code in (0, 1), (args, result.stderr)
        assert "internal error" not in result.stderr
    assert path.read_bytes() == before
    listed = run("list", path, "--json").json["entries"]
    if oracle_for_comparison():
        pi = ask_oracle("analyze", path).json
        assert len(listed) == pi["entryCount"]  # migrated (or not) as Pi migrates it


def test_a_version_pi_reads_as_infinity_is_no_migration() -> None:
    assert js_to_number("0x" + "f" * 300) == float("inf")
    assert js_to_number("0b" + "1" * 2000) == float("inf")
    assert js_to_number("0x1F") == 31.0


def test_one_such_file_in_the_sessions_tree_does_not_break_search(agent: Path) -> None:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True)
    _session(folder / "hostile.jsonl", VERSIONS[0])
    sb = SessionBuilder(session_id="other")
    sb.user("the needle is here")
    sb.write(folder / "other.jsonl")
    result = run("search", "needle")
    assert result.code == 0, result.stderr
    assert "other.jsonl" in result.stdout and "internal error" not in result.stderr
    assert run("search", "question").code == 0  # the hostile file itself is searched, as Pi reads it


@pytest.mark.parametrize("total", USAGES, ids=lambda t: t[:8])
def test_a_usage_past_any_double_is_infinity_as_in_pi(tmp_path: Path, total: str) -> None:
    path = _session(tmp_path / "s.jsonl", total=total)
    for args in (
        ("check", "--context-window", "100000"),
        ("check", "--context-window", "100000", "--json"),
        ("audit", "--context-window", "100000"),
        ("audit", "--context-window", "100000", "--json"),
        ("audit", "--context-window", "100000", "--plot"),
        ("lint",),
        ("lint", "--json"),
        ("context",),
        ("compact", "--dry-run", "--context-window", "100000"),
    ):
        result = run(args[0], path, *args[1:])
        assert result.code in ((0, 1, 2) if args[0] == "compact" else (0, 1)), (
            args,
            result.stderr,
        )  # 2: nothing to cut
        assert "internal error" not in result.stderr and len(result.stderr.splitlines()) <= 1
        if "--json" in args:
            orjson.loads(result.stdout_bytes)  # valid JSON
    if total in ("1e400", "1" + "0" * 400):
        # the leaf's reply is the third: the second's usage no longer counts for the context, but audit shows it
        replies = run("audit", path, "--context-window", "100000", "--json").json["replies"]
        assert replies[1]["usage"]["total"] is None  # Infinity, as JSON.stringify writes it


def test_check_of_a_leaf_with_an_infinite_usage_agrees_with_pi(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl", total="1e400", replies=2)  # the leaf's reply has the usage of 1e400
    result = run("check", path, "--context-window", "200000", "--json")
    assert result.code == 1, result.stderr  # over the threshold: compaction needed
    doc = result.json
    assert doc["context_tokens"] is None and doc["should_compact"] is True
    human = run("check", path, "--context-window", "200000").stdout
    assert "context tokens  Infinity" in human and "YES: Infinity tokens over the threshold" in human
    if oracle_for_comparison():
        pi = ask_oracle("analyze", path).json
        assert pi["contextEstimate"]["tokens"] is None and pi["shouldCompact"] is True


def test_the_integer_stand_in_for_infinity() -> None:
    assert js_double(JS_INFINITY) == float("inf") and js_double(JS_INFINITY + 10**6) == float("inf")
    assert js_integer(float("inf")) == JS_INFINITY and js_integer(float("-inf")) == -JS_INFINITY
    assert js_integer(float("nan")) == 0 and js_integer(2.9) == 2 and js_integer(10**400) == 10**400
    assert js_quotient(10**400, 3) == float("inf") and js_quotient(-(10**400), 3) == float("-inf")
    assert js_quotient(6, 3) == 2.0


@pytest.mark.parametrize(
    "stamp",
    ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01T03:00:00+02:00", "9999-12-31T23:00:00Z"],
)
def test_a_header_time_at_the_edge_of_the_calendar(agent: Path, stamp: str) -> None:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True)
    sb = SessionBuilder(cwd="/repo")
    sb.header["timestamp"] = stamp
    sb.user("hello")
    for entry in sb.entries:
        entry["timestamp"] = stamp
    path = sb.write(folder / "s.jsonl")
    SessionBuilder(cwd="/repo", session_id="other").write(folder / "t.jsonl")
    for args in (("sessions", "--all"), ("sessions", "--all", "--json"), ("list", str(path)), ("lint", str(path))):
        result = run(*args)
        assert result.code in (0, 1), (args, result.stderr)
        assert "internal error" not in result.stderr
    assert "s.jsonl" in run("sessions", "--all").stdout
    for since in (stamp, "0001-01-01T00:00:00+05:00"):
        result = run("list", path, "--since", since)
        assert result.code in (0, 1, 2) and "internal error" not in result.stderr


INF = 987654321987  # written as 1e400 (or -1e400 where negative) in the file


def _everywhere(path: Path, value: str) -> Path:
    """A session with ``value`` in every number Pi writes: usage and cost fields, tokensBefore, message times,
    a tool's arguments and details, an image's size, a model's contextWindow."""
    sb = SessionBuilder()
    sb.user("look at the logs " + "word " * 200)
    usage = {"input": -INF, "output": INF, "cacheRead": INF, "cacheWrite": -INF, "totalTokens": -INF}
    usage["cost"] = {"input": INF, "output": -INF, "cacheRead": INF, "cacheWrite": INF, "total": INF}
    sb.assistant("reading", tool_calls=[("c1", "bash", {"command": "cat log", "timeout": INF})], usage=usage)
    sb.tool_result("c1", "bash", "x" * 20_000, details={"exitCode": INF})
    for n in range(4):
        sb.user(f"question {n} " + "word " * 300)
        sb.assistant(
            "answer " * 200, usage={"input": 5, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": INF}
        )
    kept = sb.entries[-2]["id"]
    sb.compaction("earlier", kept, tokensBefore=INF, usage={"input": INF, "cost": {"total": INF}})
    sb.add({"type": "usage", "provider": "p", "model": "m", "usage": {"input": INF, "cost": {"total": -INF}}})
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5", "contextWindow": INF})
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png", "width": INF}
    sb.user([{"type": "text", "text": "and this " + "word " * 300}, image])
    sb.assistant("ok " * 300, usage={"input": 5, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": INF})
    for entry in sb.entries:
        if entry["type"] == "message":
            entry["message"]["timestamp"] = INF
    text = b"".join(line + b"\n" for line in sb.lines()).decode()
    path.write_text(text.replace(f"-{INF}", "-" + value.lstrip("-")).replace(str(INF), value))
    return path


@pytest.mark.parametrize("value", ["1e400", "1" + "0" * 400])
def test_numbers_past_any_double_in_every_field_end_in_an_answer(tmp_path: Path, value: str) -> None:
    path = _everywhere(tmp_path / "s.jsonl", value)
    for args in (
        ("check",),
        ("audit",),
        ("audit", "--plot"),
        ("audit", "--json"),
        ("lint",),
        ("list",),
        ("context",),
        ("coverage",),
        ("compact", "--dry-run", "--keep-recent-tokens", "100"),
        ("compact", "--dry-run", "--keep-recent-tokens", "100", "--json"),
        ("compact", "--keep-recent-tokens", "100", "-o", str(tmp_path / "copy.jsonl")),
        ("prune", "--dry-run", "--min-tokens", "1"),
    ):
        result = run(args[0], path, *args[1:])
        assert result.code in (0, 1), (args, result.stderr)
        assert "internal error" not in result.stderr
        shown = result.stdout + result.stderr
        if args[0] not in ("list", "context"):  # which show the entries' own text
            assert not re.search(r"\d{25}|(\d{3},){8}", shown), (args, shown[:2000])  # Infinity, not 309 digits
            assert not re.search(r"\b(?:inf|nan)\b", shown), (args, shown[:2000])  # nor Python's own words
        if "--json" in args:
            orjson.loads(result.stdout_bytes)
    assert run("lint", tmp_path / "copy.jsonl").code in (0, 1)
    # the leaf's own usage Infinity: Pi's context before the compaction is Infinity, and so is what it frees
    leaf = _session(tmp_path / "leaf.jsonl", total=value, replies=2)
    for args in (("--dry-run",), ("--dry-run", "--json"), ("-o", str(tmp_path / "leaf-copy.jsonl"))):
        result = run("compact", leaf, "--keep-recent-tokens", "100", *args)
        assert result.code == 0 and "internal error" not in result.stderr, result.stderr
        if "-o" in args:
            assert "Infinity -> " in result.stderr
        assert not re.search(r"\d{25}|(\d{3},){8}", result.stdout + result.stderr)
