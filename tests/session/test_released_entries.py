"""Entries whose parsed body the loader drops (old messages before a compaction's first kept entry) read back
exactly as a full parse gives them, and a file changed in place under a loaded session is an error, not a
different answer."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_compact.errors import SessionError
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.ops.forecast import GROWTH_WINDOW
from pi_compact.session.load import load_session, load_session_bytes
from tests.helpers.sessions import SessionBuilder, simple_session

PI_FIXTURES = Path(__file__).parents[1] / "fixtures" / "pi"


def compacted_session() -> SessionBuilder:
    """Two rounds of conversation, each followed by a compaction that keeps from the round's last user turn."""
    sb = simple_session(turns=5, size=300)
    sb.assistant("delegating", tool_calls=[("sub_1", "subagent", {"task": "write n.py"})])
    nested = {"complete": True, "calls": [{"name": "write", "arguments": {"path": "/repo/n.py", "content": "x"}}]}
    sb.tool_result("sub_1", "subagent", "wrote it", nestedCalls=nested)
    sb.user("one more turn " + "q" * 300)
    sb.assistant("fine", usage=6000)
    first_kept = [e["id"] for e in sb.entries if e["type"] == "message" and e["message"]["role"] == "user"][-1]
    sb.add({"type": "compaction", "summary": "round one", "firstKeptEntryId": first_kept, "tokensBefore": 5000})
    for i in range(4):
        sb.user(f"later turn {i} " + "z" * 300)
        sb.assistant(f"answer {i}", tool_calls=[(f"late_{i}", "edit", {"path": f"/repo/late{i}.py"})])
        sb.tool_result(f"late_{i}", "edit", "ok")
        sb.assistant("done", usage=9000 + i)
    first_kept = [e["id"] for e in sb.entries if e["type"] == "message" and e["message"]["role"] == "user"][-2]
    details = {"readFiles": ["/repo/src/mod1.py"], "modifiedFiles": ["/repo/n.py", "/repo/late0.py"]}
    sb.add(
        {
            "type": "compaction",
            "summary": "round two",
            "firstKeptEntryId": first_kept,
            "tokensBefore": 9000,
            "details": details,
        }
    )
    sb.user("after the second compaction")
    return sb


def same_entries(path: Path) -> None:
    lazy = load_session(path)
    full = load_session_bytes(path.read_bytes(), str(path))
    assert len(lazy.entries) == len(full.entries)
    for a, b in zip(lazy.entries, full.entries, strict=True):
        assert (a.id, a.parent_id, a.type, a.role, a.line, a.offset, a.length) == (
            b.id,
            b.parent_id,
            b.type,
            b.role,
            b.line,
            b.offset,
            b.length,
        )
        assert a.raw == b.raw


@pytest.mark.parametrize("fixture", sorted(PI_FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_fixture_reads_back_as_a_full_parse(fixture: Path) -> None:
    same_entries(fixture)


def test_old_messages_are_released_and_read_back(tmp_path: Path) -> None:
    path = compacted_session().write(tmp_path / "s.jsonl")
    session = load_session(path)
    released = [e for e in session.entries if not e.loaded]
    assert released, "old messages before the compaction's first kept entry are not held in memory"
    assert all(e.type == "message" for e in released)
    same_entries(path)


def test_check_answers_the_same_as_a_full_parse(tmp_path: Path) -> None:
    path = compacted_session().write(tmp_path / "s.jsonl")
    options = CheckOptions(context_window=20000, keep_recent_tokens=50)
    lazy = check_session(load_session(path), options).to_json()
    full = check_session(load_session_bytes(path.read_bytes(), str(path)), options).to_json()
    assert lazy == full
    assert lazy["file_evidence"] is not None  # the evidence walk reads released entries


def test_a_file_rewritten_in_place_is_an_error(tmp_path: Path) -> None:
    sb = compacted_session()
    path = sb.write(tmp_path / "s.jsonl")
    session = load_session(path)
    victim = next(e for e in session.entries if not e.loaded)
    data = path.read_bytes()
    # Same length, different entry at the victim's offset: rewrite in place (same inode).
    with open(path, "r+b") as fh:
        fh.seek(victim.offset)
        fh.write(data[victim.offset : victim.offset + victim.length].replace(victim.id.encode(), b"ffffffff"))
    with pytest.raises(SessionError, match="changed on disk"):
        _ = victim.raw


def test_a_file_renamed_over_still_reads_the_loaded_version(tmp_path: Path) -> None:
    path = compacted_session().write(tmp_path / "s.jsonl")
    expected = load_session_bytes(path.read_bytes(), str(path))
    session = load_session(path)
    other = tmp_path / "other.jsonl"
    other.write_bytes(b'{"type":"session","version":3,"id":"x"}\n')
    os.replace(other, path)
    for a, b in zip(session.entries, expected.entries, strict=True):
        assert a.raw == b.raw


def test_the_mutation_walk_finds_the_same_calls_in_released_entries(tmp_path: Path) -> None:
    # The walk skips a released entry whose line cannot hold a mutating call without parsing it again.
    from pi_compact.checkpoint.evidence import _collect_mutations, _Evidence
    from pi_compact.session.tree import get_branch

    path = compacted_session().write(tmp_path / "s.jsonl")
    found = []
    for session in (load_session(path), load_session_bytes(path.read_bytes(), str(path))):
        evidence = _Evidence()
        _collect_mutations(get_branch(session).entries, "/repo", evidence)
        found.append(evidence.mutations)
    assert found[0] == found[1]
    assert {"/repo/n.py", "/repo/late0.py"} <= set(found[0])


@pytest.mark.parametrize("pattern", ["Turn 3", "contents of mod1", "round two", "ok$", "late[0-9]"])
def test_grep_over_released_entries_finds_what_a_full_parse_finds(tmp_path: Path, pattern: str) -> None:
    from pi_compact.search.grepping import grep
    from pi_compact.search.transcript import build_transcript

    path = compacted_session().write(tmp_path / "s.jsonl")
    lazy_session = load_session(path)
    released = {id(e) for e in lazy_session.entries if not e.loaded}
    lazy = grep(build_transcript(lazy_session), pattern, max_count=1000)
    full_transcript = build_transcript(load_session_bytes(path.read_bytes(), str(path)))
    full_transcript.attach_raw(path.read_bytes())
    full = grep(full_transcript, pattern, max_count=1000)
    assert [m.to_json() for m in lazy.matches] == [m.to_json() for m in full.matches]
    assert lazy.matches
    # Bodies read back for rendering are dropped again: a search over every entry holds at most the matches'.
    matched = {m.entry_id for m in lazy.matches}
    assert all(not e.loaded for e in lazy_session.entries if id(e) in released and e.id not in matched)


def test_check_leaves_old_bodies_on_disk(tmp_path: Path) -> None:
    # What keeps check's memory and time near the file's tail: analysing the session reads back only a few of the
    # bodies the loader dropped (the forecast's last replies with usage), however long the session.
    sb = simple_session(turns=40, size=200)
    first_kept = [e["id"] for e in sb.entries if e["type"] == "message" and e["message"]["role"] == "user"][-2]
    sb.add({"type": "compaction", "summary": "s", "firstKeptEntryId": first_kept, "tokensBefore": 9000})
    sb.user("after the compaction")
    sb.assistant("fine", usage=12000)
    session = load_session(sb.write(tmp_path / "s.jsonl"))
    released = [e for e in session.entries if not e.loaded]
    assert len(released) > 100
    check_session(session, CheckOptions(context_window=200000)).to_json(evidence=False)
    read_back = [e for e in released if e.loaded]
    assert len(read_back) <= 3 * GROWTH_WINDOW
    assert all(e.role == "assistant" for e in read_back)


def test_keep_bodies_parses_once_and_keeps_everything(tmp_path: Path) -> None:
    path = compacted_session().write(tmp_path / "s.jsonl")
    kept = load_session(path, keep_bodies=True)
    assert all(e.loaded for e in kept.entries)
    full = load_session_bytes(path.read_bytes(), str(path))
    assert [e.raw for e in kept.entries] == [e.raw for e in full.entries]


def test_decorated_lines_kept_by_the_loader_are_the_rendering(tmp_path: Path) -> None:
    from pi_compact.search.render import render_entry

    path = compacted_session().write(tmp_path / "s.jsonl")
    session = load_session(path, decorate=lambda e: render_entry(e, decorated_only=True).lines)
    full = load_session_bytes(path.read_bytes(), str(path))
    released = [e for e in session.entries if not e.loaded]
    assert released and set(session.decorated) == {e.index for e in released}
    for entry in released:
        expected = render_entry(full.entries[entry.index], decorated_only=True).lines
        assert session.decorated[entry.index] == expected


@pytest.mark.parametrize(
    ("pattern", "sections"),
    [
        ("mod[0-9]", None),
        ("/repo/late", None),
        ("subagent", None),
        ("ENTRY", ["header"]),
        (r"\[toolResult\] read", ["meta"]),
        ("nothing like this", None),
    ],
)
def test_grep_with_kept_decorated_lines_finds_what_a_full_parse_finds(
    tmp_path: Path, pattern: str, sections: list[str] | None
) -> None:
    from pi_compact.search.grepping import GrepQuery, grep
    from pi_compact.search.render import render_entry
    from pi_compact.search.transcript import build_transcript

    path = compacted_session().write(tmp_path / "s.jsonl")
    kept = load_session(path, decorate=lambda e: render_entry(e, decorated_only=True).lines)
    assert kept.decorated
    lazy = grep(build_transcript(kept), GrepQuery.of(pattern, sections=sections), max_count=1000)
    full_transcript = build_transcript(load_session_bytes(path.read_bytes(), str(path)))
    full_transcript.attach_raw(path.read_bytes())
    full = grep(full_transcript, GrepQuery.of(pattern, sections=sections), max_count=1000)
    assert [m.to_json() for m in lazy.matches] == [m.to_json() for m in full.matches]
