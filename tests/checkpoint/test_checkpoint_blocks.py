"""The parts a checkpoint adds to the compacted conversation: standing instructions, the progress ledger, facts
from removed tool output, the errors no later call resolved, and stubs that keep what identifies a message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pi_compact.checkpoint.verbatim.cap import user_stub
from pi_compact.checkpoint.verbatim.facts import error_line, facts_of_output
from pi_compact.checkpoint.verbatim.ledger import parse_call, resolutions, segment_lines
from pi_compact.checkpoint.verbatim.spans import Item
from pi_compact.checkpoint.verbatim.standing import classify, render_standing, standing_instructions
from tests.helpers.checkpoint import append_checkpoint, compact
from tests.helpers.sessions import SessionBuilder

# Statements users make that hold for the whole task: each must be found, with its kind.
STANDING = [
    ("Never modify data/ledger.db, that's the production ledger.", "rule"),
    ("Please don't touch deploy/prod.env, it holds the live credentials.", "rule"),
    ("Always run scripts/verify.sh before you call anything done.", "rule"),
    ("One rule: don't add files under gen/, that directory is generated.", "rule"),
    ("We moved, deploy to eu-west-2 from now on.", "rule"),
    ("It must stay compatible with Python 3.9, the build hosts still run it.", "constraint"),
    ("Heads up: no new third-party dependencies, only the stdlib.", "constraint"),
    ("Peak memory has to stay under 512 MB on the workers.", "constraint"),
    ("I prefer small commits, one change each.", "preference"),
    ("Also, use tabs, not spaces, in the Makefile.", "preference"),
    ("Keep docstrings in the numpydoc style please.", "preference"),
    ("I like descriptive test names, like test_rejects_empty_station.", "preference"),
    ("The service listens on port 4100.", "value"),
    ("For reference, the import batch size is 1412 rows.", "value"),
    ("The forecast bucket got renamed to wx-forecast-data.", "value"),
    ("Scratch that, the importer has to run as a cron job instead.", "goal"),
]
# Ordinary requests and remarks: none of them is a standing instruction.
ORDINARY = [
    "Please update the README with the new payment option.",
    "Profile it and suggest fixes.",
    "Can you add a --verbose flag to the CLI?",
    "Now add tests for the refund edge cases (zero, negative, very large values).",
    "Next, rename `parse_request_cache` to something clearer everywhere and update the docs.",
    "Run the full test suite and fix whatever is red.",
    "The service is slow when there are 100k users.",
    "The tests are failing on main.",
    "Fix the bug in src/app.py line 42.",
    "I think the problem is in the parser.",
    "Refactor src/net/server.rs so that the queue logic is separated from the I/O.",
    "Please explain how src/db/schema.ts works, I inherited this code and I'm lost.",
    "Move src/utils/config.ts to src/.",
    "I don't think the component invalidate works correctly.",
    "It doesn't work on my machine.",
    "Why did you change the port?",
    "I like that, thanks!",
    "I want you to do a deep analysis, then give me a plan.",
    "Error: ENOENT: no such file or directory, open '/repo/package.json'",
]


@pytest.mark.parametrize(("sentence", "kind"), STANDING)
def test_v31_standing_statements_are_found_with_their_kind(sentence: str, kind: str) -> None:
    assert classify(sentence) == kind


@pytest.mark.parametrize("sentence", ORDINARY)
def test_v31_ordinary_requests_are_not_standing_instructions(sentence: str) -> None:
    assert classify(sentence) is None


def test_v31_a_later_value_of_the_same_setting_supersedes_the_earlier_with_both_ids() -> None:
    messages = [
        ("u0", "Fix the login page."),
        ("u1", "The dev server listens on port 4100."),
        ("u2", "For reference, the upstream timeout is 2500 ms."),
        ("u3", "Actually, no: make the dev server port 4317."),
        ("u4", "Raise the upstream timeout to 3000 ms."),
        ("u5", "no, make it 3500"),
    ]
    found = standing_instructions(messages)
    block = render_standing(found)
    assert '- [u3] Actually, no: make the dev server port 4317. (supersedes [u1] "The dev server listens' in block
    assert '- [u5] no, make it 3500 (supersedes [u4] "Raise the upstream timeout to 3000 ms.")' in block
    assert block.count("4100") == 1  # the old value only inside the line that supersedes it
    assert block.index("[u0] Fix the login page.") < block.index("[u3]")  # the opening request, as the goal


def test_v31_a_value_superseded_in_the_kept_tail_is_marked_with_the_tail_id() -> None:
    found = standing_instructions([("u1", "start"), ("u2", "The service listens on port 4100.")], [("t1", "No, 4317.")])
    assert "- [u2] The service listens on port 4100. (superseded by [t1])" in render_standing(found)


def test_v31_a_restated_instruction_is_listed_once_with_its_latest_id() -> None:
    messages = [
        ("u1", "start here"),
        ("u2", "Wait, that's wrong - we must not touch the public API."),
        ("u3", "Now wait, that's wrong - we must not touch the public API."),
    ]
    block = render_standing(standing_instructions(messages))
    assert block.count("must not touch the public API") == 1 and "[u3]" in block


def test_v31_standing_instructions_survive_five_chained_compactions_at_a_small_cap(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    builder.user("Build the export. Never modify data/ledger.db, it is the production ledger.")
    builder.assistant("ok")
    builder.user("The service listens on port 4100.")
    for round_ in range(5):
        for turn in range(6):
            builder.user(f"round {round_} request {turn}: " + "please do the next thing " * 10)
            builder.tool("bash", {"command": f"make step-{round_}-{turn}"}, "done " * 50)
            builder.assistant(f"Done with step {round_}-{turn}. " + "details " * 40)
        if round_ == 2:
            builder.user("Actually, no: make the service port 4317.")
        plan, cp = compact(builder, tmp_path, cap=600)
        append_checkpoint(builder, plan, cp)
    block = cp.summary.split("## Standing instructions\n", 1)[1].split("\n\n", 1)[0]
    assert "Never modify data/ledger.db" in block  # in the block the cap never trims, not only in a span
    assert "port 4317. (supersedes [" in block and '"The service listens on port 4100."' in block
    assert len(cp.details["picompact"]["spans"]) == 5  # five compactions, each carried forward


def test_v33_a_ledger_line_says_what_was_done_and_which_errors_a_later_call_resolved() -> None:
    items = [
        Item("a1", "call", "assistant:", "▸ edit(path=src/tax.ts, edits=2) → ok\n  ↳ read(path=src/b.ts) → ok"),
        Item("a1", "call", "assistant:", '▸ bash(command="npm test") → error'),
        Item("a2", "call", "assistant:", "▸ write(path=src/round.ts, content=<120 chars>) → ok"),
        Item("a3", "call", "assistant:", '▸ bash(command="npm test") → ok'),
        Item("a3", "call", "assistant:", '▸ bash(command="git commit -m \\"fix rounding\\"") → ok'),
        Item("a4", "assistant", "assistant:", "I'll round once, at the end, instead of per line. The tests pass now."),
    ]
    resolved = resolutions([items])
    assert resolved == {(0, 1, 0): "a3"}
    full, short, terse, found = segment_lines(items, 0, 0, len(items), resolved)
    assert full.startswith("[a1..a4] edited src/tax.ts; wrote src/round.ts; read src/b.ts; ran ")
    assert '"npm test" → error (ok later, [a3])' in full
    assert 'said: "I\'ll round once, at the end, instead of per line."' in full
    assert len(short) < len(full)
    assert "ran 3 commands (1 failed): " in short and '"git commit -m \\"fix rounding\\"" → ok' in short
    # The terse line: the decision as its clause, the files changed and the commit; no reads, no lead sentence.
    assert terse == (
        "[a1..a4] round once, at the end, instead of per line; changed src/tax.ts, src/round.ts; "
        '"git commit -m \\"fix rounding\\"" → ok'
    )
    assert len(terse) < len(short)
    # The finding line: only what no other part shows (the file lists name the files changed).
    assert found == '[a1..a4] round once, at the end, instead of per line; "git commit -m \\"fix rounding\\"" → ok'


def test_v33_signatures_read_back_into_calls() -> None:
    call = parse_call('▸ bash(command="pytest -q", timeout=120) → error')
    assert call is not None and call.name == "bash" and call.command == '"pytest -q"' and call.outcome == "error"
    nested = parse_call("  ↳ read(path=src/a b.ts) → ok")
    assert nested is not None and nested.path == "src/a b.ts"
    assert parse_call("not a signature") is None


def test_v34_facts_of_a_removed_output() -> None:
    failed = {
        "content": [
            {
                "type": "text",
                "text": 'Traceback (most recent call last):\n  File "x.py", line 3\n'
                "KeyError: 'ledger_id'\n\nCommand exited with code 1",
            }
        ]
    }
    facts = facts_of_output("r1", "bash", {"command": "python x.py"}, failed, "error", "/repo", "bash(…) → error")
    assert [(f.kind, f.text) for f in facts] == [("error", "KeyError: 'ledger_id'")]
    found = {"content": [{"type": "text", "text": "src/a/loader.py:12: def load()\nsrc/b/loader.py:40: x\n"}]}
    paths = facts_of_output("r2", "bash", {"command": "grep -rn load src"}, found, "ok", "/repo")
    assert [f.text for f in paths] == ["src/a/loader.py:12", "src/b/loader.py:40"]
    tests = {"content": [{"type": "text", "text": "FAILED tests/test_u.py::test_boundary - AssertionError\n"}]}
    assert facts_of_output("r3", "bash", {"command": "pytest"}, tests, "error", "/repo")[0].kind == "error"
    pip = {"content": [{"type": "text", "text": "Name: pyproj\nVersion: 3.6.1\nSummary: x"}]}
    assert [
        (f.kind, f.text) for f in facts_of_output("r4", "bash", {"command": "pip show pyproj"}, pip, "ok", "/")
    ] == [("version", "pyproj 3.6.1")]


def test_v32_the_error_line_is_the_specific_one_not_a_count_or_the_exit_notice() -> None:
    assert error_line("src/a.py:3: error: Incompatible types\nFound 1 error in 1 file\n") == (
        "src/a.py:3: error: Incompatible types"
    )
    assert error_line("boom\nCommand exited with code 2") == "boom"


def test_v35_a_stub_keeps_the_head_and_what_identifies_the_rest() -> None:
    text = "Please look at this log.\n" + "noise line\n" * 300 + "KeyError: 'ledger_id' in src/billing/ledger.py:214\n"
    text += "noise line\n" * 300 + "Can you find out what's wrong?"
    stub = user_stub(text)
    assert stub.startswith("Please look at this log.")
    kept = re.split(r" \[\d+ of \d+ chars", stub, maxsplit=1)[0]  # chosen by value, not by position
    assert "Can you find out what's wrong?" in kept and "KeyError: 'ledger_id'" in kept
    assert "src/billing/ledger.py:214" in stub
    assert len(stub) <= 520


def test_v32_errors_not_resolved_later_are_listed_once_and_never_trimmed(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    builder.user("start")
    builder.tool("bash", {"command": "npm test"}, "Error: cannot find module 'tax'", is_error=True)
    builder.tool("bash", {"command": "npm test"}, "ok", is_error=False)  # resolved by the same command
    builder.tool("bash", {"command": "make deploy"}, "fatal: permission denied (publickey)", is_error=True)
    for turn in range(20):
        builder.user(f"request {turn} " + "x" * 300)
        builder.assistant("reply " * 50)
    builder.user("kept")
    _, free = compact(builder, tmp_path)
    _, tight = compact(builder, tmp_path, cap=300)
    for cp in (free, tight):
        block = cp.summary.split("## Errors not resolved later\n", 1)[1].split("\n\n", 1)[0]
        assert block.count("\n") == 0 and "make deploy" in block and "fatal: permission denied" in block
        assert "cannot find module" not in block


def test_v31_the_block_is_bounded_whatever_the_session_keeping_the_goal_and_the_newest() -> None:
    # Sentences that differ in several places far apart: no two of them merge into one line.
    messages = [("u0", "Build the exporter.")] + [
        (f"u{n}", f"Never modify data/ledger-{n}.db, the job {n} reads it every {n} minutes for region {n}.")
        for n in range(1, 101)
    ]
    block = render_standing(standing_instructions(messages))
    lines = block.split("\n")[2:]
    assert lines[0] == "- [u0] Build the exporter."
    assert lines[1] == "- … 61 more not shown here (in the spans and the session file)"
    assert lines[-1].startswith("- [u100] ") and len(lines) == 41
