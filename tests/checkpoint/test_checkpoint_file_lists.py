"""V14/V15: the checkpoint's file lists, one line a file. Paths that name a line range of a file (some agents read
``Dashboard.tsx:1-104``) join the file's line with their ranges merged; modified files come before read ones; past
a count the rest are counted, with the search that lists them. Pi's own lists in ``details`` stay exactly Pi's."""

from __future__ import annotations

import math
from pathlib import Path

from pi_compact.checkpoint.verbatim.envelope import MAX_FILE_LINES, Recovery, file_lists_section, group_files
from pi_compact.js import js_len
from tests.helpers.checkpoint import CWD, compact
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

RANGES = [(1, 104), (108, 175), (150, 260), (261, 300), (400, 420)]


def files_part(summary: str) -> str:
    part = summary[summary.index("## Files in the compacted history") :]
    return part[: part.index("\n---\n")]


def test_v14_ranged_reads_of_a_file_are_one_line(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("Look at the dashboard.")
    for a, b in RANGES:
        builder.tool("read", {"path": f"{CWD}/src/Dashboard.tsx:{a}-{b}"}, "x\n" * 10)
    builder.tool("read", {"path": "src/Table.tsx#L5-L9"}, "y")
    builder.tool("read", {"path": "src/Table.tsx:12:3"}, "y")  # a line and a column
    builder.tool("edit", {"path": f"{CWD}/src/App.tsx", "edits": []})
    builder.assistant("Read them.")
    builder.user("next")
    plan, cp = compact(builder, tmp_path)
    files = files_part(cp.summary)
    assert "- src/Dashboard.tsx (lines 1-104, 108-300, 400-420; 5 reads)" in files
    assert "- src/Table.tsx (lines 5-9, 12; 2 reads)" in files
    assert files.count("Dashboard.tsx") == 1
    assert files.index("Modified:\n- src/App.tsx") < files.index("Read:")
    # Pi's lists are Pi's: every raw path, as Pi records it
    assert cp.details["readFiles"] == sorted(plan.read_files) == cp.read_files
    assert len([p for p in cp.details["readFiles"] if "Dashboard.tsx" in p]) == len(RANGES)
    assert cp.details["modifiedFiles"] == [f"{CWD}/src/App.tsx"]


def test_v14_a_whole_read_and_ranged_ones_name_no_range() -> None:
    lines = group_files([("a.ts", None), ("a.ts:3-9", "full read in tail"), ("b.ts", "full read in tail")])
    assert [line.render("reads") for line in lines] == [
        "- a.ts (2 reads; full read in tail)",
        "- b.ts (full read in tail)",
    ]


def test_v14_many_parts_are_said_as_their_extent() -> None:
    rows = [(f"big.py:{10 * n + 1}-{10 * n + 5}", None) for n in range(30)]
    (line,) = group_files(rows)
    assert line.render("reads") == "- big.py (lines 1-295 in 30 parts; 30 reads)"


def test_v14_past_the_limit_the_rest_is_counted_with_a_search_that_lists_it(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    builder.user("Survey the package.")
    for n in range(40):
        builder.tool("read", {"path": f"{CWD}/pkg/mod_{n:02d}.py"}, "z")
    builder.tool("write", {"path": f"{CWD}/pkg/new.py", "content": "x"})
    builder.assistant("Surveyed.")
    builder.user("next")
    _, cp = compact(builder, tmp_path)
    files = files_part(cp.summary)
    shown = [line for line in files.split("\n") if line.startswith("- pkg/")]
    assert len(shown) == MAX_FILE_LINES
    assert files.index("- pkg/new.py") < files.index("Read:")
    more = f"- + {41 - MAX_FILE_LINES} more read files: `picompact grep '^path: ' FILE`"
    assert more in files
    assert len(cp.details["readFiles"]) == 40  # the entry still records all of them
    # the search works as written and names every file
    result = run("grep", "^path: ", str(tmp_path / "session.jsonl"))
    assert result.code == 0
    assert all(f"pkg/mod_{n:02d}.py" in result.stdout for n in range(40))


def test_v14_inside_pi_the_count_names_the_context_tool() -> None:
    text = file_lists_section([(f"f{n}.py", None) for n in range(30)], [], Recovery("s.jsonl", False, tools=True))
    assert text.endswith('- + 6 more read files: `context_grep("^path: ")`')


def test_v14_the_lists_cost_less_than_the_reads_they_stand_for(builder: SessionBuilder, tmp_path: Path) -> None:
    """An earlier compaction (not picompact's) listed 90 ranged reads of a few files; six calls were compacted since:
    the checkpoint, lists included, is smaller than what it replaces."""
    ranged = [
        f"{CWD}/src/{name}.tsx:{10 * n + 1}-{10 * n + 9}" for name in ("Dashboard", "Chart", "Grid") for n in range(30)
    ]
    first = builder.user("Refactor the dashboard.")
    builder.assistant("Starting.")
    kept = builder.user("Go on.")
    builder.compaction("Earlier work on the dashboard.", kept, details={"readFiles": ranged, "modifiedFiles": []})
    for n in range(6):
        builder.tool("read", {"path": f"{CWD}/src/Dashboard.tsx", "offset": 1 + 100 * n, "limit": 100}, "line\n" * 100)
    builder.assistant("Read the dashboard again.")
    builder.user("next")
    plan, cp = compact(builder, tmp_path)
    assert first and len(cp.details["readFiles"]) == 91  # Pi's cumulative list: the 90 and the bare path
    files = files_part(cp.summary)
    assert files.count("\n- ") == 3
    assert "- src/Dashboard.tsx (31 reads)" in files  # the bare path was read whole: no range claimed
    span_tokens = sum(math.ceil(js_len(str(m)) / 4) for pe in plan.summarized_entries() for m in pe.messages)
    assert cp.tokens < span_tokens
    assert math.ceil(js_len(files) / 4) < 60
