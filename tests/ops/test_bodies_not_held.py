"""``lint`` and ``audit`` hold no more of a session than loading it does: the bodies the loader drops (old messages
before a compaction's kept range) are read back as they are needed and dropped again, so a long session's size does
not decide their memory; their answers are those given with every body held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pi_compact.session.load as loader
from pi_compact.ops.audit import audit_session
from pi_compact.ops.coverage import measure_coverage
from pi_compact.ops.lint import lint_file
from pi_compact.session.entries import Session
from tests.helpers.sessions import SessionBuilder

BIG = 256 * 1024


def long_session(rounds: int, damaged: bool) -> SessionBuilder:
    """``rounds`` rounds of big tool output, each closed by a compaction keeping from its last user turn; with
    ``damaged``, problems lint finds inside old bodies: an orphan result, a call without a result, impossible
    usage, a timestamp going backwards and a duplicate re-orientation message."""
    sb = SessionBuilder()
    for r in range(rounds):
        sb.user(f"round {r}: look at the logs")
        sb.assistant("reading", tool_calls=[(f"call_{r}", "bash", {"command": "cat log"})])
        sb.tool_result(f"call_{r}", "bash", f"line {r} " * (BIG // 8))
        if damaged and r == 1:
            sb.tool_result("nobody_called", "bash", "x" * BIG)
            sb.assistant("again", tool_calls=[("never_answered", "bash", {"command": "ls"})])
            sb.assistant("too big", usage=10**9)
            sb.add({"type": "custom_message", "customType": "note", "content": "x", "display": False})
            sb.entries[-1]["timestamp"] = "2001-01-01T00:00:00.000Z"
        kept = sb.user(f"round {r} done")
        sb.assistant("ok")
        compaction = sb.compaction(f"summary {r}", kept)
        if damaged and r == 1:
            for _ in range(2):
                sb.add(
                    {
                        "type": "custom_message",
                        "customType": "picompact.reorientation",
                        "content": "y" * BIG,
                        "display": False,
                        "details": {"compactionId": compaction},
                    }
                )
    sb.user("the last turn")
    return sb


def test_lint_reads_back_no_body_for_good(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = long_session(8, damaged=True).write(tmp_path / "long.jsonl")
    held_by_a_load = [e.line for e in loader.load_session(path).entries if e.loaded]
    sessions: list[Session] = []
    real = loader.load_session

    def recording(*args: Any, **kwargs: Any) -> Session:
        session = real(*args, **kwargs)
        sessions.append(session)
        return session

    monkeypatch.setattr(loader, "load_session", recording)
    report = lint_file(path)
    (session,) = sessions
    assert [e.line for e in session.entries if e.loaded] == held_by_a_load
    assert not [e for e in session.entries if e.loaded and e.role == "toolResult"]  # every big output compacted
    assert {"orphan-tool-result", "missing-tool-result", "usage-over-window", "time-backwards"} <= set(report.codes)
    assert "duplicate-reminder" in report.codes


@pytest.mark.parametrize("damaged", [False, True])
def test_lint_finds_what_a_lint_holding_every_body_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damaged: bool
) -> None:
    path = long_session(6, damaged=damaged).write(tmp_path / "long.jsonl")
    released = lint_file(path)
    real = loader.load_session
    monkeypatch.setattr(loader, "load_session", lambda p, **kw: real(p, keep_bodies=True))
    held = lint_file(path)
    assert released == held
    assert bool(released.findings) == damaged


def test_audit_drops_again_what_it_reads_back(tmp_path: Path) -> None:
    path = long_session(8, damaged=False).write(tmp_path / "long.jsonl")
    held_by_a_load = [e.line for e in loader.load_session(path).entries if e.loaded]
    session = loader.load_session(path)
    result = audit_session(session, cl100k=False)
    assert [e.line for e in session.entries if e.loaded] == held_by_a_load
    assert result.to_json() == audit_session(loader.load_session(path, keep_bodies=True), cl100k=False).to_json()
    assert len(result.markers) == 8


def test_coverage_reads_the_span_and_no_more(tmp_path: Path) -> None:
    path = long_session(8, damaged=False).write(tmp_path / "long.jsonl")
    held_by_a_load = {e.line for e in loader.load_session(path).entries if e.loaded}
    session = loader.load_session(path)
    result = measure_coverage(session)
    at = session.entries.index(result.compaction)
    span = {e.line for e in session.entries[at - result.to_json()["span_entries"] - 3 : at]}  # and what it keeps
    assert len(span) < len(session.entries) / 4
    assert {e.line for e in session.entries if e.loaded} <= held_by_a_load | span
    held = measure_coverage(loader.load_session(path, keep_bodies=True))
    assert result.to_json() == held.to_json()
    assert result.to_json()["categories"]["progress"]["missing"] == 1  # the span's `cat log`: grep finds it
    assert result.to_json()["categories"]["progress"]["recovered"] == 1


def uncompacted(rounds: int) -> SessionBuilder:
    """``rounds`` rounds of big tool output and no compaction: every body is live, one of them lint finds fault in."""
    sb = SessionBuilder()
    for r in range(rounds):
        sb.user(f"round {r}: look at the logs")
        sb.assistant("reading", tool_calls=[(f"call_{r}", "bash", {"command": "cat log"})])
        sb.tool_result(f"call_{r}" if r != 3 else "nobody_called", "bash", f"line {r} " * (BIG // 8))
    sb.user("the last turn")
    return sb


def test_lint_of_a_session_never_compacted_holds_a_bounded_share_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = uncompacted(12).write(tmp_path / "long.jsonl")
    assert all(e.loaded for e in loader.load_session(path).entries)  # a load holds every body: none is before a cut
    held = lint_file(path)
    sessions: list[Session] = []
    real = loader.load_session

    def recording(*args: Any, **kwargs: Any) -> Session:
        sessions.append(real(*args, **kwargs))
        return sessions[-1]

    monkeypatch.setattr(loader, "load_session", recording)
    monkeypatch.setattr(loader, "HOLD_BYTES", 2 * BIG)
    report = lint_file(path)
    assert report == held and {"orphan-tool-result", "missing-tool-result"} <= set(report.codes)
    (session,) = sessions
    results = [e for e in session.entries if e.role == "toolResult"]
    assert len(results) == 12 and sum(e.loaded for e in results) <= 2


@pytest.mark.parametrize("shape", ["uncompacted", "compacted"])
def test_a_load_that_drops_bodies_as_it_reads_answers_as_one_that_holds_them(tmp_path: Path, shape: str) -> None:
    from pi_compact.ops.check import CheckOptions, check_session

    builder = uncompacted(10) if shape == "uncompacted" else long_session(6, damaged=True)
    path = builder.write(tmp_path / "s.jsonl")
    dropped = loader.load_session(path, release_bytes=BIG)
    whole = loader.load_session(path, keep_bodies=True)
    assert sum(e.loaded for e in dropped.entries) < len(dropped.entries) / 2
    assert [(e.id, e.parent_id, e.type, e.role, e.line) for e in dropped.entries] == [
        (e.id, e.parent_id, e.type, e.role, e.line) for e in whole.entries
    ]
    assert dropped.diagnostics == whole.diagnostics
    assert [e.raw for e in dropped.entries] == [e.raw for e in whole.entries]
    options = CheckOptions(context_window=200_000)
    assert check_session(dropped, options).to_json() == check_session(whole, options).to_json()


@pytest.mark.parametrize("shape", ["uncompacted", "compacted"])
def test_list_grep_and_show_answer_the_same_dropping_bodies_as_they_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    import pi_compact.cli.search as commands
    from tests.helpers.cli import run

    builder = uncompacted(10) if shape == "uncompacted" else long_session(6, damaged=True)
    path = builder.write(tmp_path / "s.jsonl")
    some = builder.entries[len(builder.entries) // 2]["id"]
    asked = [
        ("list", path, "--all-branches"),
        ("list", path, "--json"),
        ("grep", "line 3", path, "-C", "1"),
        ("grep", "-c", "round", path),
        ("grep", "-l", "nobody", path),
        ("show", some, path),
        ("show", some, path, "--raw"),
        ("context", path),
    ]
    held = [run(*args) for args in asked]
    monkeypatch.setattr(commands, "HOLD", BIG)
    for _ in range(2):  # without, then with the file's index (written by the first round)
        dropped = [run(*args) for args in asked]
        assert [(r.code, r.stdout_bytes, r.stderr) for r in dropped] == [
            (r.code, r.stdout_bytes, r.stderr) for r in held
        ]
    assert all(r.code == 0 for r in held[:3])
