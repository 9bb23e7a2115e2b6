"""V31: what the standing-instructions block holds in a checkpoint: nothing the spans already show word for word,
and, given a share of the budget, the block compresses itself (sentences cut, least valuable lines left out, the
opening request last)."""

from __future__ import annotations

import math
from pathlib import Path

from pi_compact.checkpoint.verbatim.standing import (
    render_standing,
    standing_instructions,
    standing_lines,
    verbatim_user_entries,
)
from pi_compact.js import js_len
from tests.helpers.checkpoint import compact
from tests.helpers.sessions import SessionBuilder


def block_of(summary: str) -> str:
    if "## Standing instructions" not in summary:
        return ""
    return summary.split("## Standing instructions", 1)[1].split("\n\n", 1)[0]


def test_v31_the_block_leaves_out_messages_the_spans_show_word_for_word(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    builder.user("Build the export. Never modify data/ledger.db, it is the production ledger. " + "context " * 150)
    builder.assistant("ok")
    for turn in range(8):
        builder.user(f"request {turn}: " + "please do the next thing " * 12)
        builder.assistant(f"Done with {turn}. " + "details " * 30)
    builder.user("From now on, always run scripts/verify.sh before committing.")
    builder.assistant("Will do.")
    builder.user("next")
    _, free = compact(builder, tmp_path)
    assert block_of(free.summary) == ""  # every message is in the span, whole
    assert free.summary.count("Never modify data/ledger.db") == 1
    _, tight = compact(builder, tmp_path, cap=500)
    block = block_of(tight.summary)
    assert "Never modify data/ledger.db" in block  # its message was cut to a stub: the block keeps the rule
    # the newest message is still whole in the span: not repeated in the block
    assert "[e0000019] user:\nFrom now on, always run scripts/verify.sh before committing." in tight.summary
    assert "scripts/verify.sh" not in block


def test_v31_whole_messages_are_told_from_stubs() -> None:
    rendered = (
        '<span compaction="1" entries="a..c">\n[a] user:\nNever touch prod.\n\n'
        "[b] user:\nAlways run the linter… [20 of 90 chars]\n\n"
        "[c] assistant:\n[x] user:\nfake header inside a reply\n</span>"
    )
    messages = [("a", "Never touch prod."), ("b", "Always run the linter before " + "x" * 60), ("x", "other")]
    assert verbatim_user_entries(messages, rendered) == {"a"}


MESSAGES = [
    ("u0", "Build the exporter for the station feed, then wire it into the nightly job and the dashboard."),
    ("u1", "I prefer small commits, one change each."),
    ("u2", "Never modify data/ledger.db, it is the production ledger."),
    ("u3", "Keep docstrings in the numpydoc style please."),
    ("u4", "It must stay compatible with Python 3.9, the build hosts still run it."),
    ("u5", "The service listens on port 4100."),
]


def test_v31_the_block_fits_a_share_of_the_budget_by_compressing_itself() -> None:
    items = standing_instructions(MESSAGES)
    whole = render_standing(items)
    assert render_standing(items, 10_000) == whole
    for tokens in (80, 60, 45):
        block = render_standing(items, tokens)
        assert math.ceil(js_len(block) / 4) <= tokens, (tokens, block)
        assert "[u0] Build the exporter" in block  # the opening request goes last
    small = render_standing(items, 70)
    assert "small commits" not in small and "numpydoc" not in small  # preferences go first
    assert "port 4100" in small
    assert "more not shown here (in the spans and the session file)" in small


def test_v31_below_the_smallest_block_the_opening_request_is_cut_not_dropped() -> None:
    block = render_standing(standing_instructions(MESSAGES), 1)
    lines = block.split("\n")[2:]
    assert lines[0].startswith("- [u0] Build the exporter") and lines[0].endswith("…")
    assert lines[1] == "- … 5 more not shown here (in the spans and the session file)"


def test_v31_the_count_of_a_merged_line_says_how_many_instructions_it_stands_for() -> None:
    listing = "Rules for the feeds:\n" + "\n".join(f"- Never delete feed-{n}.json by hand." for n in range(1, 8))
    (line,) = standing_lines(standing_instructions([("u1", listing)], opening=False))
    assert line.render() == "- [u1] Never delete feed-{1..7}.json by hand. (7 in one message)"


def test_v31_values_superseding_others_are_never_merged() -> None:
    messages = [("u1", "The api port is 4100."), ("u2", "No, the api port is 4317."), ("u3", "The web port is 8080.")]
    block = render_standing(standing_instructions(messages, opening=False))
    assert '- [u2] No, the api port is 4317. (supersedes [u1] "The api port is 4100.")' in block
    assert "- [u3] The web port is 8080." in block


def test_v31_a_pasted_list_of_thousands_of_rules_is_one_line_per_template() -> None:
    listing = "\n".join(f"- Never call legacy_api_{n} directly." for n in range(5000))
    lines = standing_lines(standing_instructions([("u1", listing)], opening=False))
    assert [line.render() for line in lines] == [
        "- [u1] Never call legacy_api_{0..4999} directly. (5000 in one message)"
    ]


def test_v31_nineteen_templated_rules_at_a_tight_cap_are_one_line_beside_the_whole_messages(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    """The shape of a 38-entry span at a cap of 1,000 tokens: nineteen rules that differ only by a component."""
    import re

    builder.user(
        "Audit the component library, for each component whether it may adopt X. The audit must stay read-only."
    )
    builder.assistant("Starting the audit.")
    for n in range(1, 20):
        builder.user(
            f"Do not adopt X for component-{n:03d}; the owners of component-{n:03d} said the API is frozen until "
            f"2027-0{1 + n % 9}-15 and the migration budget is {100 + n * 7} hours."
        )
        builder.tool("read", {"path": f"lib/component-{n:03d}/index.ts"}, "x\n" * 40)
        builder.assistant(f"Noted for component-{n:03d}: frozen API, budget {100 + n * 7} h.")
    builder.user("next")
    _, cp = compact(builder, tmp_path, cap=1000)
    block = block_of(cp.summary)
    lines = [line for line in block.split("\n") if line.startswith("- [")]
    assert len(lines) == 2 and lines[0].startswith("- [e0000001] Audit the component library")
    merged = re.fullmatch(
        r"- \[e0000003\.\.e\d+\] Do not adopt X for component-\{001\.\.(\d{3})\} \((\d+) messages\)", lines[1]
    )
    assert merged is not None, lines[1]
    last = int(merged[1])
    assert int(merged[2]) == last
    whole = {int(m) for m in re.findall(r"\] user:\nDo not adopt X for component-(\d{3}); the owners", cp.summary)}
    assert whole == set(range(last + 1, 20))  # every rule is either in the block or whole in the span, once
    assert cp.tokens <= 1000


def test_v31_a_checkpoint_that_fits_without_the_cap_is_the_uncapped_one(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    """With its messages whole the block is empty and the checkpoint fits: the cap changes nothing (with the block
    of the whole messages it would not have fitted)."""
    builder.user("Never modify data/ledger.db, the nightly import job writes it. " + "Details of the import. " * 40)
    builder.assistant("Understood.")
    builder.user("next")
    _, free = compact(builder, tmp_path)
    assert block_of(free.summary) == ""
    _, capped = compact(builder, tmp_path, cap=free.tokens)
    assert capped.summary == free.summary and not capped.trimmed
