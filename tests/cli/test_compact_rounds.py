"""V13 through the real CLI: compact, append more turns, compact again — five rounds."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson

from pi_compact.pi.projection import build_projection
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

_ids = (f"{n:08x}" for n in itertools.count(0xB0000001))


def append_turns(path: Path, round_no: int, turns: int = 6) -> None:
    """Append turns the way Pi would: each entry a child of the file's last entry."""
    leaf = load_session(path).entries[-1].id
    lines = []
    for t in range(turns):
        for message in (
            {"role": "user", "content": f"round {round_no} turn {t}: please continue " + "u" * 600, "timestamp": 1},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"round {round_no} turn {t} answer " + "a" * 600},
                    {
                        "type": "toolCall",
                        "id": f"r{round_no}t{t}",
                        "name": "read",
                        "arguments": {"path": f"/repo/f{t}.py"},
                    },
                ],
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "stopReason": "toolUse",
                "timestamp": 2,
            },
            {
                "role": "toolResult",
                "toolCallId": f"r{round_no}t{t}",
                "toolName": "read",
                "content": [{"type": "text", "text": "x = 1\n" * 1000}],
                "isError": False,
                "timestamp": 3,
            },
        ):
            entry_id = next(_ids)
            entry = {"type": "message", "id": entry_id, "parentId": leaf, "timestamp": "2026-01-02T00:00:00.000Z"}
            entry["message"] = message
            lines.append(orjson.dumps(entry))
            leaf = entry_id
    with open(path, "ab") as f:
        f.write(b"".join(line + b"\n" for line in lines))


def test_v13_five_rounds_carry_spans_forward_unchanged(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd="/repo")
    sb.user("start " + "s" * 600)
    sb.assistant("ok", usage=10)
    path = sb.write(tmp_path / "s.jsonl")
    flags = ("--context-window", "100000", "--keep-recent-tokens", "1500", "--cap", "3000")
    saved: list[list[dict]] = []
    for round_no in range(1, 6):
        append_turns(path, round_no)
        before = path.read_bytes()
        result = run("compact", path, "--mode", "verbatim", "--json", *flags)
        assert result.code == 0, result.stderr
        data = result.json
        assert data["status"] == "written"
        assert path.read_bytes().startswith(before)  # appended, never rewritten
        session = load_session(path)
        compaction = session.get(data["compaction_id"])
        assert compaction is not None
        spans = compaction.raw["details"]["picompact"]["spans"]
        assert len(spans) == round_no  # one new span per round
        for old, new in zip(saved, spans, strict=False):
            assert old == new  # earlier spans re-rendered from details, unchanged
        saved = spans
        # The cap applies to the whole checkpoint, every round.
        assert data["stats"]["checkpoint_tokens"] <= 3000 or data["trimmed"]
        # Pi's projection: the summary first, then the kept tail, the newest reminder last among our entries.
        projection = build_projection(get_branch(session))
        assert projection.entries[0].entry.id == data["compaction_id"]
        reminders = [
            pe.entry.id
            for pe in projection.entries
            if pe.entry.type == "custom_message"
            and pe.messages
            and pe.entry.raw.get("customType") == "picompact.reorientation"
        ]
        assert reminders == [data["reminder_id"]]
    # The checkpoint text of the last round shows every round's span, oldest first.
    summary = compaction.raw["summary"]
    positions = [summary.find(f'<span compaction="{n}"') for n in range(1, 6)]
    assert all(p >= 0 for p in positions) and positions == sorted(positions)
