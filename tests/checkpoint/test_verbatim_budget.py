"""The cap's one budget, spent by value: what a shortened message, a trace and a compressed block keep, and the
bounded share of the blocks the cap does not trim as it trims the spans (V20, V21, V35)."""

from __future__ import annotations

from pathlib import Path

from pi_compact.checkpoint.verbatim.cap import (
    BLOCK_MIN_CHARS,
    BLOCK_SHARE,
    GAP,
    best_sentences,
    block_budget,
    compress_lines,
    fit_block,
    sentence_value,
    user_stub,
)
from pi_compact.checkpoint.verbatim.spans import Item, Span
from pi_compact.js import js_len
from tests.helpers.checkpoint import compact
from tests.helpers.sessions import SessionBuilder

REQUEST = (
    "Now look at the chart panel, it renders slowly on the big screen. Thanks for the last change. "
    "Do not adopt chartkit for component-017; legal has not cleared its licence. "
    "It was a long week here. The cache TTL for the metrics page is 9377 seconds."
)


def test_v35_a_sentence_with_a_ruling_a_value_or_a_path_is_worth_more_than_filler() -> None:
    assert sentence_value("Do not adopt chartkit for component-017; legal has not cleared it.") > sentence_value(
        "It was a long week here."
    )
    assert sentence_value("The cache TTL for the metrics page is 9377 seconds.") > sentence_value("Thanks a lot.")
    assert sentence_value("see src/components/Dashboard.tsx for the panel") > sentence_value("see the panel")
    # a log line is worth less than the same value said in a sentence; a fragment less than a whole statement
    assert sentence_value("2025-08-26T17:13:10Z ERROR took=900ms") < sentence_value("The query takes 900 ms.")
    assert sentence_value("Do not redo it.") < sentence_value("Do not adopt chartkit for component-017 anywhere.")


def test_v35_a_shortened_message_keeps_its_best_sentences_in_order_with_the_gaps_marked() -> None:
    kept, shown = best_sentences(REQUEST, 150)
    assert kept.startswith("Now look at the chart panel")  # the first sentence: the ask
    assert "Do not adopt chartkit for component-017" in kept  # before the filler sentence between them
    assert "Thanks for the last change" not in kept and "long week" not in kept
    assert f" {GAP} " in kept  # where sentences were left out
    first, ruling = REQUEST.split(". ")[0] + ".", REQUEST.split(". ")[2] + "."
    assert len(kept) <= 150 and shown == len(first) + len(ruling)
    wider, _ = best_sentences(REQUEST, 300)
    assert "9377 seconds" in wider and wider.index("component-017") < wider.index("9377")  # in their order


def test_v35_a_trace_keeps_the_sentence_worth_most_not_the_opening_words() -> None:
    trace = user_stub(REQUEST, 45)
    assert trace.startswith("Do not adopt chartkit for component-017")
    assert trace.endswith(f"… [40 of {len(REQUEST)} chars]")
    stub = user_stub(REQUEST, 200)
    assert f" of {len(REQUEST)} chars" in stub and not stub.endswith(f"… [40 of {len(REQUEST)} chars]")


def test_v21_a_block_over_its_share_keeps_its_first_line_and_its_most_telling_lines() -> None:
    lines = ["- [u0] Build the exporter for the acme dashboard, one CSV per station."]
    lines += [f"- [u{n}] Keep it that way." for n in range(1, 30)]
    lines += ["- [u30] Never modify data/ledger.db, it is the production ledger."]
    lines += ["- [u31] The dev server listens on port 4100."]
    kept = compress_lines(lines, 400)
    assert kept[0] == lines[0]
    assert lines[-1] in kept and lines[-2] in kept
    assert sum(len(line) + 1 for line in kept) <= 400
    assert any(line.startswith("- … ") and "more left out by the size cap" in line for line in kept)
    block = "## Standing instructions\nSaid by the user in the compacted part, in their words (never trimmed):\n"
    fitted = fit_block(block + "\n".join(lines), 500)
    assert fitted.startswith("## Standing instructions\n") and "never trimmed" not in fitted
    assert js_len(fitted) <= 500
    assert fit_block(block + lines[0], 500) == block + lines[0]  # within its share: unchanged


def test_v21_the_blocks_share_is_bounded_and_leaves_room_for_a_trace_of_every_message() -> None:
    assert block_budget(10_000) == int(10_000 * BLOCK_SHARE)
    assert block_budget(100) == BLOCK_MIN_CHARS
    users = Span(1, "u0", "u9", "verbatim", tuple(Item(f"u{n}", "user", "user:", "hello") for n in range(10)))
    assert block_budget(10_000, [users]) == min(int(10_000 * BLOCK_SHARE), 10_000 - 10 * 100)
    many = Span(1, "u0", "u999", "verbatim", tuple(Item(f"u{n}", "user", "user:", "hi") for n in range(1000)))
    assert block_budget(10_000, [many]) == 10_000 * 3 // 4  # the reserve for traces: at most a quarter


def test_v21_many_standing_instructions_no_longer_take_the_whole_cap(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("Build the metrics exporter for the acme dashboard, one CSV file per station and hour.")
    builder.assistant("On it.")
    for n in range(1, 31):
        builder.user(
            f"Request {n}: look at panel {n}. Do not adopt chartkit for component-{n:03d}; it breaks printing."
        )
        builder.tool("read", {"path": f"/repo/src/panel{n}.ts"}, "x" * 400)
        builder.assistant(f"Panel {n} done: the query takes {1000 + n} ms.")
    builder.user("kept")
    _, free = compact(builder, tmp_path)
    _, cp = compact(builder, tmp_path, cap=1000)
    assert cp.tokens <= 1000
    assert "## Standing instructions" not in free.summary  # uncapped, every message is shown whole in the span
    block = cp.summary.split("## Standing instructions\n", 1)[1].split("\n\n", 1)[0]
    lines = block.split("\n")
    assert "never trimmed" not in block
    assert lines[1].endswith("Build the metrics exporter for the acme dashboard, one CSV file per station and hour.")
    assert len(lines) == 3 and "component-{001..030}" in lines[2] and "(30 messages)" in lines[2]  # one line, merged
    conversation = cp.summary.split("<span", 1)[1].split("## Files in the compacted history", 1)[0]
    # the conversation keeps the newest turns, each by the sentence worth most in it
    assert "Do not adopt chartkit for component-029;… [" in conversation


def test_v35_a_trace_does_not_repeat_what_the_standing_instructions_already_show() -> None:
    seen = (
        "## Standing instructions\n- [u1] Do not adopt chartkit for component-017; legal has not cleared its licence."
    )
    trace = user_stub(REQUEST, 45, " ".join(seen.split()).lower())
    assert "component-017" not in trace and trace.startswith("The cache TTL for the metrics page is 9377")
    assert user_stub("Do not redo it.", 45, "do not redo it.").startswith("Do not redo it")  # nothing else: kept
