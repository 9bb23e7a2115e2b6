"""What the cap keeps per character: a segment's terse ledger line keeps a decision as the clause that carries it
once the short line no longer fits, and on a generated session of pasted logs more room never keeps fewer whole
sentences of the user's messages (V20, V33, V35)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from pi_compact.checkpoint import VerbatimOptions, build_verbatim_checkpoint
from pi_compact.checkpoint.verbatim.cap import _shorten_line, fit_spans, layouts_of
from pi_compact.checkpoint.verbatim.spans import CONDENSED_HEAD, GONE, Item, Span, TrimState, render_span
from pi_compact.js import js_len
from tests.helpers.checkpoint import plan_for

BENCH = Path(__file__).resolve().parents[2] / "bench"
DECISION = (
    "Looking at src/lookup.py, the provider part needs a choice. I'll use a trie for the tyve7 lookups instead of "
    "a hash map, because every query is a prefix match."
)


def _turn(n: int, decision: bool) -> list[Item]:
    reads = "\n".join(f"  ↳ read(path=src/module_{n}_{k}.py) → ok" for k in range(8))
    prose = DECISION if decision else f"Read module {n} and the tests; nothing to change there yet."
    return [
        Item(f"u{n}", "user", "user:", f"Next, look at module {n}."),
        Item(f"c{n}", "call", "assistant:", f"▸ read(path=src/module_{n}.py) → ok\n{reads}"),
        Item(f"c{n}", "call", "assistant:", f'▸ bash(command="pytest tests/test_module_{n}.py -q") → ok'),
        Item(f"a{n}", "assistant", "assistant:", prose + " The tests of this module pass as they are."),
    ]


def _span(decided_in: int, turns: int = 6) -> Span:
    items = [item for n in range(turns) for item in _turn(n, n == decided_in)]
    return Span(1, items[0].entry, items[-1].entry, "verbatim", tuple(items))


def test_v33_a_decision_survives_a_tight_cap_as_its_value_bearing_clause() -> None:
    span = _span(decided_in=1)
    layout = layouts_of([span])[0]
    full, short, terse, found = layout.ledger[1]
    assert terse.endswith("] a trie for the tyve7 lookups instead of a hash map")  # the clause, no lead-in
    assert found == terse  # nothing in it that the file lists or the errors block show
    assert len(terse) < len(short) < len(full)
    assert all(line[2] == "" for k, line in enumerate(layout.ledger) if k != 1)  # nothing the agent needs there
    users = "\n".join(item.text for item in span.items if item.kind == "user")
    # Room for every user message whole and the terse line, not for the short lines: the decision stays, as its
    # clause, and no user message is shortened for it.
    with_short = fit_spans([span], 10**6)
    budget = len(users) + 6 * 40 + len(terse) + 100
    assert budget < with_short.chars
    result = fit_spans([span], budget)
    assert result.fits and result.chars <= budget
    assert "\n[c1..a1] assistant, condensed: a trie for the tyve7 lookups instead of a hash map\n" in result.text
    assert all(f"[u{n}] user:\nNext, look at module {n}.\n" in result.text for n in range(6))
    assert "said:" not in result.text and result.text.count("\n[…]\n") == 5  # the other runs: removed, marked
    # With more room the newest runs come back as short lines, the decision staying terse or better.
    wider = fit_spans([span], budget + 300)
    assert "tyve7 lookups" in wider.text and 'said: "Read module 5' in wider.text


def test_v20_a_terse_line_goes_before_any_user_message_is_shortened() -> None:
    long_ask = "Please look at the lookup module now and tell me what the provider part should do. " * 12
    items = [Item("u0", "user", "user:", long_ask), *_turn(1, True)[1:]]
    span = Span(1, "u0", items[-1].entry, "verbatim", tuple(items))
    alone = js_len(render_span(layouts_of([span])[0], TrimState(levels={0: GONE})))  # whole, the run removed
    for budget in range(len(long_ask) - 300, len(long_ask) + 400, 10):
        result = fit_spans([span], budget)
        if long_ask not in result.text:  # shortened: only when the message could not stay whole without the line
            assert alone > budget, budget
        elif "tyve7" in result.text:  # the line shown next to the whole message: both fit
            assert result.chars <= budget


@pytest.fixture(scope="module")
def generator() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("quality_sessions")
    finally:
        sys.path.remove(str(BENCH))


def test_v35_more_room_never_keeps_fewer_whole_sentences_of_pasted_messages(
    generator: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "pasted.jsonl"
    generator.write(path, 30_000, 5, "pasted")
    plan = plan_for(path, 2000)
    whole_span = build_verbatim_checkpoint(plan, VerbatimOptions(str(path), None)).details["picompact"]["spans"][0]
    users = [item["text"] for item in whole_span["items"] if item["kind"] == "user"]
    sentences = {
        " ".join(s.split())
        for text in users
        for s in text.replace("\n", ". ").split(". ")
        if len(s) >= 20 and "```" not in s and any(c.isalpha() for c in s)
    }
    assert len(sentences) > 30

    def whole(cap: int) -> int:
        summary = " ".join(build_verbatim_checkpoint(plan, VerbatimOptions(str(path), cap)).summary.split())
        return sum(1 for s in sentences if s in summary)

    counts = [whole(cap) for cap in (1000, 1500, 2000, 3000, 4000, 6000)]
    assert counts == sorted(counts), counts  # a larger cap keeps every whole sentence a smaller one kept, or more
    assert counts[0] < counts[-1]


def _traced_span(turns: int = 16) -> Span:
    """Turns whose user messages must be cut to traces under a tight budget, one of them with a decision."""
    items: list[Item] = []
    for n in range(turns):
        ask = f"Next, look at module {n} and its callers in src/module_{n}.py. " + "Mind the details there. " * 12
        items += [Item(f"u{n}", "user", "user:", ask), *_turn(n, n == 3)[1:]]
    return Span(1, items[0].entry, items[-1].entry, "verbatim", tuple(items))


def test_v20_once_every_message_is_cut_to_a_trace_room_is_kept_for_a_decision_never_for_a_removal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The finding lines get a bounded room only when the user messages must be cut to traces anyway; a user
    message is never removed for it: every budget removes the same messages with and without the room."""
    import pi_compact.checkpoint.verbatim.cap as cap

    span = _traced_span()
    users = [item.entry for item in span.items if item.kind == "user"]
    clause = "a trie for the tyve7 lookups instead of a hash map"
    kept_with = kept_without = 0
    for budget in range(1200, 4000, 100):
        with_room = fit_spans([span], budget)
        monkeypatch.setattr(cap, "FINDING_SHARE", 0.0)
        without = fit_spans([span], budget)
        monkeypatch.undo()
        assert with_room.chars <= budget and without.chars <= budget
        gone = [[u for u in users if f"[{u}] user:" not in result.text] for result in (with_room, without)]
        assert gone[0] == gone[1], budget
        kept_with += clause in with_room.text
        kept_without += clause in without.text
        if clause in with_room.text and not gone[0]:
            assert f"] {CONDENSED_HEAD} {clause}" in with_room.text
    assert kept_with > kept_without


def test_v33_a_finding_line_holds_what_was_decided_and_commits_not_files_failures_or_plans() -> None:
    items = [
        Item("u0", "user", "user:", "Fix the cache."),
        Item("a1", "call", "assistant:", "▸ edit(path=src/cache.py, edits=2) → ok"),
        Item("a1", "call", "assistant:", '▸ bash(command="pytest -q") → error'),
        Item("a2", "call", "assistant:", '▸ bash(command="git commit -m \\"cache: ttl\\"") → ok'),
        Item("a3", "assistant", "assistant:", "I'll check how loadCache is used. Decision: keep the ttl at 300 s."),
    ]
    _, _, terse, found = layouts_of([Span(1, "u0", "a3", "verbatim", tuple(items))])[0].ledger[0]
    assert "changed src/cache.py" in terse and '"pytest -q" → error' in terse
    assert found == '[a1..a3] keep the ttl at 300 s; "git commit -m \\"cache: ttl\\"" → ok'


def test_v21_a_standing_value_cut_to_its_share_keeps_the_new_value_and_the_id_it_supersedes() -> None:
    line = (
        '- [u9] Change of mind on the import batch: use 8848 rows. (supersedes [u2] "Also, the import batch '
        'size is 7973 rows, as the nightly job expects it.")'
    )
    assert _shorten_line(line) == "- [u9] Change of mind on the import batch: use 8848 rows. (supersedes [u2])"
