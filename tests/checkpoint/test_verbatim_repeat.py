"""Repeated compaction (V13) and the cumulative file lists (V14)."""

from __future__ import annotations

from pathlib import Path

from pi_compact.checkpoint import is_verbatim_details
from tests.helpers.checkpoint import CWD, append_checkpoint, compact, span_texts
from tests.helpers.sessions import SessionBuilder


def first_round(builder: SessionBuilder, tmp_path: Path) -> tuple[str, str]:
    builder.user("first request")
    builder.tool("read", {"path": f"{CWD}/a.py"})
    builder.tool("edit", {"path": f"{CWD}/b.py", "oldText": "x", "newText": "y"})
    builder.assistant("first round done")
    builder.user("second request")
    plan, cp = compact(builder, tmp_path)
    compaction_id = append_checkpoint(builder, plan, cp)
    return compaction_id, span_texts(cp.summary)[0]


def test_v13_saved_spans_rerendered_unchanged_then_new_span(builder: SessionBuilder, tmp_path: Path) -> None:
    _, span1 = first_round(builder, tmp_path)
    builder.assistant("working on the second request")
    builder.user("third request")
    _plan, cp = compact(builder, tmp_path)
    spans = span_texts(cp.summary)
    assert len(spans) == 2
    assert spans[0] == span1
    assert spans[1].startswith('<span compaction="2" entries="e0000007..')
    # the previous checkpoint's kept range (the second request) is compacted now
    assert "[e0000007] user:\nsecond request" in spans[1]
    # its own re-orientation message, right after the compaction entry, is not rendered
    assert "picompact: context compacted" not in cp.summary
    saved = cp.details["picompact"]["spans"]
    assert [s["compaction"] for s in saved] == [1, 2]
    assert is_verbatim_details(cp.details)


def test_v13_nothing_is_summarised_again_over_three_rounds(builder: SessionBuilder, tmp_path: Path) -> None:
    summaries = []
    for round_no in range(3):
        builder.user(f"request {round_no}")
        builder.tool("bash", {"command": f"make step{round_no}"})
        builder.user(f"follow-up {round_no}")
        plan, cp = compact(builder, tmp_path)
        summaries.append(cp)
        append_checkpoint(builder, plan, cp)
    spans = span_texts(summaries[-1].summary)
    assert len(spans) == 3
    assert spans[:2] == span_texts(summaries[1].summary)
    assert summaries[-1].summary.count("# Verbatim checkpoint") == 1  # one envelope, never nested
    for round_no in range(3):
        assert summaries[-1].summary.count(f'bash(command="make step{round_no}")') == 1


def test_v13_foreign_summary_becomes_one_span(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("old request")
    builder.assistant("old answer")
    kept = builder.user("kept request")
    builder.compaction(
        "## Goal\nShip the feature\n\n## Progress\n- [x] parser",
        kept,
        details={"readFiles": ["x.py"], "modifiedFiles": []},
    )
    builder.assistant("continuing")
    builder.user("latest")
    _, cp = compact(builder, tmp_path)
    spans = span_texts(cp.summary)
    assert len(spans) == 2
    assert spans[0] == (
        '<span compaction="1" entries="e0000004" source="summary">\n'
        "[e0000004] summary of the earlier conversation:\n## Goal\nShip the feature\n\n## Progress\n- [x] parser\n"
        "</span>"
    )
    assert "[e0000003] user:\nkept request" in spans[1]
    assert "x.py" in cp.read_files  # Pi carries a non-hook summary's lists forward


def test_v13_unreadable_previous_details_fall_back_to_its_summary(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("old")
    kept = builder.user("kept")
    builder.compaction(
        "SOME EARLIER CHECKPOINT TEXT",
        kept,
        details={"picompact": {"format": "verbatim", "version": 1, "spans": "broken"}},
    )
    builder.user("latest")
    _, cp = compact(builder, tmp_path)
    assert len(span_texts(cp.summary)) == 2
    assert "SOME EARLIER CHECKPOINT TEXT" in span_texts(cp.summary)[0]
    assert any("unreadable details" in w for w in cp.warnings)


def test_v14_lists_are_cumulative_and_relative(builder: SessionBuilder, tmp_path: Path) -> None:
    first_round(builder, tmp_path)  # read a.py, edit b.py; written with fromHook, so Pi would drop its lists
    builder.tool("read", {"path": f"{CWD}/c.py"})
    builder.tool("write", {"path": f"{CWD}/a.py", "content": "new"})
    builder.user("next")
    _, cp = compact(builder, tmp_path)
    assert cp.read_files == [f"{CWD}/c.py"]
    assert cp.modified_files == [f"{CWD}/a.py", f"{CWD}/b.py"]  # a.py was read, then written: now modified
    assert cp.details["readFiles"] == cp.read_files
    assert cp.details["modifiedFiles"] == cp.modified_files
    files = cp.summary[cp.summary.index("## Files in the compacted history") :]
    assert "Read:\n- c.py" in files
    assert "Modified:\n- a.py" in files and "\n- b.py" in files
    assert CWD not in files.split("\n", 2)[2]  # only relative paths after the header
    assert files.index("Modified:") < files.index("Read:")  # modified first
    assert "no label: no read output kept" in files or "(no read output kept)" in files


def test_v14_no_duplicates_when_pi_also_carries_the_lists(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("first")
    builder.tool("read", {"path": "a.py"})
    builder.user("second")
    plan, cp = compact(builder, tmp_path)
    assert plan.first_kept is not None
    builder.compaction(cp.summary, plan.first_kept.id, details=cp.details, fromHook=False)
    builder.user("third")
    _, cp2 = compact(builder, tmp_path)
    assert cp2.read_files == ["a.py"]
