"""Coverage that does not flatter: whole, shortened (with the share of characters kept), trace and gone apart,
and a score that counts only what a reader can use (V37)."""

from __future__ import annotations

from pi_compact.ops.coverage import (
    SHORTENED_MIN_SHARE,
    CategoryScore,
    _grade,
    _trigrams,
    kept_share,
    normalize,
)

MESSAGE = (
    "Please move every panel of the metrics dashboard to the new store, keep the page under 800 ms to render, "
    "and do not adopt chartkit for the print view; legal has not cleared its licence yet."
)


def grade(context: str, entry_id: str | None = None) -> tuple[str, float]:
    flat = normalize(context)
    return _grade(MESSAGE, flat, _trigrams(flat), entry_id)


def test_v37_a_message_is_whole_shortened_a_trace_or_gone() -> None:
    assert grade(f"before {MESSAGE} after") == ("verbatim", 1.0)
    half = MESSAGE[: len(MESSAGE) // 2].rsplit(" ", 1)[0]
    status, share = grade(f"[u1] user: {half}… [shortened]")
    assert status == "shortened" and 0.4 < share < 0.55
    status, share = grade(f"[u1] user: {MESSAGE[:40]}… [size cap: 40 of {len(MESSAGE)} characters]")
    assert status == "trace" and share < SHORTENED_MIN_SHARE
    assert grade("[u1] user: (removed)", "u1") == ("trace", 0.0)  # only its id is named
    assert grade("nothing of it here", "u1") == ("missing", 0.0)


def test_v37_the_share_kept_counts_runs_of_three_words_or_more() -> None:
    words = "alpha beta gamma delta epsilon zeta"
    context = _trigrams("x alpha beta gamma y zeta epsilon")
    assert abs(kept_share(words, context) - len("alpha beta gamma ") / (len(words) + 1)) < 1e-9
    assert kept_share("two words", context) == 0.0


def test_v37_a_trace_counts_nothing_in_the_score_and_a_stub_its_share() -> None:
    traces = CategoryScore("user_messages", 19, 0, 0, 19, 0, 0)
    assert traces.score == 0.0 and traces.score_any == 1.0  # 19 traces of 19 messages: nothing a reader can use
    mixed = CategoryScore("user_messages", 4, 1, 2, 1, 0, 0, shortened_kept=0.5 + 0.3)
    assert mixed.score == (1 + 0.8) / 4 and mixed.score_any == 1.0
    data = mixed.to_json()
    assert data["shortened"] == 2 and data["shortened_share"] == 0.4 and data["trace"] == 1 and data["partial"] == 3
