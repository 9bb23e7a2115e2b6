"""What summary mode asks for, how big it may answer, and which answers it accepts."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pi_compact.checkpoint.summary import (
    NO_PRIOR_HISTORY,
    SECTIONS,
    SPLIT_TURN_SEPARATOR,
    SYSTEM_PROMPT,
    SummaryOptions,
    clean_reply,
    combine_usage,
    history_prompt,
    merge_summary,
    output_limit,
    pi_usage,
    plan_requests,
    reply_problem,
    request_input_tokens,
    resolve_summary_model,
)
from pi_compact.checkpoint.summary.serialize import serialize_messages
from pi_compact.llm import Usage, resolve_model
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.pi.catalog import find_model
from tests.checkpoint.summary.conftest import (
    GOOD_PREFIX,
    GOOD_SUMMARY,
    KEEP,
    OPENAI_MODEL,
    history_session,
    split_turn_session,
)


def _check(path: Path, model: str = OPENAI_MODEL, **kw):
    return check_session(path, CheckOptions(model=model, keep_recent_tokens=KEEP, **kw))


def _model(check, model: str = OPENAI_MODEL):
    return resolve_summary_model(resolve_model(model), check.mode_context())


def test_first_summary_wraps_the_conversation_and_asks_for_the_six_sections(tmp_path: Path) -> None:
    check = _check(history_session(tmp_path))
    [request] = plan_requests(check.plan, _model(check), SummaryOptions()).first
    conversation = serialize_messages(check.plan.messages_to_summarize)
    assert request.kind == "history"
    assert request.system == SYSTEM_PROMPT
    assert request.user.startswith(f"<conversation>\n{conversation}\n</conversation>\n\n")
    assert "<previous-summary>" not in request.user
    for name in SECTIONS:
        assert f"## {name}\n" in request.user
    for sub in ("### Done\n- [x]", "### In Progress\n- [ ]", "### Blocked", "- **[Decision]**:", "1. "):
        assert sub in request.user


def test_an_update_carries_the_previous_summary_and_the_update_rules() -> None:
    first = history_prompt("[User]: hi")
    update = history_prompt("[User]: hi", previous_summary="## Goal\nOld goal")
    assert "<previous-summary>\n## Goal\nOld goal\n</previous-summary>\n\n" in update
    assert update.index("</conversation>") < update.index("<previous-summary>")
    instructions = update.split("</previous-summary>\n\n", 1)[1]
    assert instructions != first.split("</conversation>\n\n", 1)[1]
    for rule in ("KEEP", "ADD", "MOVE", '"In Progress" to "Done"', "Next Steps"):
        assert rule in instructions
    # An empty previous summary is no summary (Pi tests it for truthiness).
    assert history_prompt("[User]: hi", previous_summary="") == first


def test_focus_text_comes_last_in_every_request(tmp_path: Path) -> None:
    check = _check(split_turn_session(tmp_path))
    focus = "focus on the failing tests in tests/api"
    requests = plan_requests(check.plan, _model(check), SummaryOptions(instructions=focus)).first
    assert [r.kind for r in requests] == ["history", "turn_prefix"]
    for request in requests:
        assert request.user.endswith(focus)


def test_a_split_turn_asks_for_the_turn_prefix_separately(tmp_path: Path) -> None:
    check = _check(split_turn_session(tmp_path))
    history, prefix = plan_requests(check.plan, _model(check), SummaryOptions()).first
    assert serialize_messages(check.plan.messages_to_summarize) in history.user
    prefix_text = serialize_messages(check.plan.turn_prefix_messages)
    assert prefix.user.startswith(f"# Conversation\n{prefix_text}\n\n# Instructions\n")
    assert prefix_text not in history.user
    for name in ("## Original Request", "## Early Progress", "## Context for Suffix"):
        assert name in prefix.user


def test_no_history_request_when_the_split_turn_is_all_there_is(tmp_path: Path) -> None:
    check = _check(split_turn_session(tmp_path, earlier_turns=0))
    assert check.plan.cut.is_split_turn and not check.plan.messages_to_summarize
    [request] = plan_requests(check.plan, _model(check), SummaryOptions()).first
    assert request.kind == "turn_prefix"


def test_include_thinking_reaches_the_prompt(tmp_path: Path) -> None:
    from tests.helpers.sessions import SessionBuilder

    sb = SessionBuilder()
    sb.user("start " + "s" * 800)
    sb.assistant("first answer", thinking="a private chain of thought")
    sb.user("next " + "n" * 2000)
    sb.assistant("second answer " + "m" * 2000)
    check = _check(sb.write(tmp_path / "t.jsonl"))
    model = _model(check)
    plain = "".join(r.user for r in plan_requests(check.plan, model, SummaryOptions()).first)
    thinking = "".join(r.user for r in plan_requests(check.plan, model, SummaryOptions(include_thinking=True)).first)
    assert "a private chain of thought" not in plain
    assert "[Assistant thinking]: a private chain of thought" in thinking


def test_output_limit_is_the_models_own_when_the_window_is_large(tmp_path: Path) -> None:
    check = _check(history_session(tmp_path))
    model = _model(check)
    info = find_model("openai", "gpt-4.1-mini")
    assert info is not None
    assert (model.context_window, model.max_tokens) == (info.context_window, info.max_tokens)
    [request] = plan_requests(check.plan, model, SummaryOptions()).first
    assert request.max_tokens == info.max_tokens
    assert request.input_tokens == math.ceil(len(SYSTEM_PROMPT) / 3.5) + math.ceil(len(request.user) / 3.5)


@pytest.mark.parametrize(
    ("window", "input_tokens", "model_max", "expected"),
    [
        (1_000_000, 10_000, 32_768, 32_768),  # plenty of room: the model's limit
        (300_000, 200_000, 128_000, 70_000),  # 15% margin: 300000 - 200000 - 30000
        (200_000, 150_000, 64_000, 32_768),  # the 15% margin leaves < 32768: fixed margin, output capped at 32768
        (128_000, 100_000, 16_384, 16_384),  # small room: fixed 4096 margin, capped at 32768, then model max
        (32_000, 20_000, 16_384, 7_904),  # 32000 - 20000 - 4096
        (32_000, 40_000, 16_384, 1),  # no room at all: Pi still asks for one token
        (0, 40_000, 16_384, 16_384),  # unknown window: the model's limit
    ],
)
def test_output_limit_follows_pis_clamp(window: int, input_tokens: int, model_max: int, expected: int) -> None:
    assert output_limit(model_max, window, input_tokens) == expected


def test_request_input_estimate_counts_utf16_units() -> None:
    assert request_input_tokens("abcdefg", "\U0001f680") == 2 + 1


def test_context_window_flag_applies_when_the_summariser_is_the_judged_model(tmp_path: Path) -> None:
    path = history_session(tmp_path)
    check = _check(path, context_window=50_000)
    assert _model(check).context_window == 50_000
    other = resolve_summary_model(resolve_model("anthropic/claude-sonnet-4-5"), check.mode_context())
    assert other.context_window == 200_000


def test_an_unknown_model_gets_pis_custom_defaults_and_a_warning(tmp_path: Path) -> None:
    check = _check(history_session(tmp_path))
    model = resolve_summary_model(
        resolve_model("vllm/my-local-model", base_url="http://127.0.0.1:9/v1"), check.mode_context()
    )
    assert (model.context_window, model.max_tokens) == (128_000, 16_384)
    assert model.warnings and "my-local-model" in model.warnings[0]


def test_a_complete_summary_is_accepted() -> None:
    assert reply_problem(GOOD_SUMMARY, "history", 32_768) is None
    assert reply_problem(GOOD_PREFIX, "turn_prefix", 32_768) is None


@pytest.mark.parametrize("missing", SECTIONS)
def test_each_missing_section_is_named(missing: str) -> None:
    text = GOOD_SUMMARY.replace(f"## {missing}\n", "")
    problem = reply_problem(text, "history", 32_768)
    assert problem is not None and f"## {missing}" in problem


def test_an_empty_goal_an_empty_reply_and_an_oversized_reply_are_refused() -> None:
    empty_goal = GOOD_SUMMARY.replace("Refactor the modules under src/ one by one.", "  ")
    assert "Goal" in (reply_problem(empty_goal, "history", 32_768) or "")
    assert "empty" in (reply_problem("", "history", 32_768) or "")
    assert "longer than the output limit" in (reply_problem(GOOD_SUMMARY, "history", 10) or "")
    assert reply_problem(GOOD_PREFIX, "history", 32_768) is not None
    assert reply_problem(GOOD_SUMMARY, "turn_prefix", 32_768) is not None


def test_a_fenced_reply_is_unwrapped_and_blank_space_trimmed() -> None:
    assert clean_reply(f"\n```markdown\n{GOOD_SUMMARY}\n```\n") == GOOD_SUMMARY
    assert clean_reply(f"  {GOOD_SUMMARY}\n\n") == GOOD_SUMMARY
    inner = "## Goal\n```py\nx = 1\n```"
    assert clean_reply(inner) == inner


def test_merge_joins_history_and_turn_prefix_as_pi_does(tmp_path: Path) -> None:
    plan = _check(split_turn_session(tmp_path)).plan
    assert merge_summary(plan, {"history": "H"}) == "H"
    assert merge_summary(plan, {"history": "H", "turn_prefix": "P"}) == f"H{SPLIT_TURN_SEPARATOR}P"
    assert SPLIT_TURN_SEPARATOR == "\n\n---\n\n**Turn Context (split turn):**\n\n"
    assert merge_summary(plan, {"turn_prefix": "P"}) == f"{NO_PRIOR_HISTORY}{SPLIT_TURN_SEPARATOR}P"


def test_usage_has_pis_shape_and_table_prices() -> None:
    info = find_model("openai", "gpt-4.1-mini")
    usage = pi_usage(Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=200), info)
    assert list(usage) == ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"]
    assert usage["totalTokens"] == 1700
    assert info is not None
    assert usage["cost"]["input"] == pytest.approx(1000 * info.input_cost / 1e6)
    assert usage["cost"]["output"] == pytest.approx(500 * info.output_cost / 1e6)
    assert usage["cost"]["cacheRead"] == pytest.approx(200 * info.cache_read_cost / 1e6)
    assert usage["cost"]["total"] == pytest.approx(
        sum(v for k, v in usage["cost"].items() if k != "total" and k != "totalFromProvider")
    )
    assert usage["cost"]["totalFromProvider"] is False
    assert pi_usage(Usage(input_tokens=5), None)["cost"]["total"] == 0


def test_combined_usage_sums_everything() -> None:
    info = find_model("openai", "gpt-4.1-mini")
    a = pi_usage(Usage(100, 10, 5, 1), info)
    b = pi_usage(Usage(200, 20, 6, 2), info)
    both = combine_usage(a, b)
    assert (both["input"], both["output"], both["cacheRead"], both["cacheWrite"]) == (300, 30, 11, 3)
    assert both["totalTokens"] == a["totalTokens"] + b["totalTokens"]
    assert both["cost"]["total"] == pytest.approx(a["cost"]["total"] + b["cost"]["total"])
    assert both["cost"]["totalFromProvider"] is False
    assert "reasoning" not in both
    assert combine_usage({**a, "reasoning": 4}, b)["reasoning"] == 4


def test_options_are_checked() -> None:
    from pi_compact.errors import UsageError

    with pytest.raises(UsageError, match="timeout must be a positive number"):
        SummaryOptions(timeout=0)
    with pytest.raises(UsageError, match="instructions is empty"):
        SummaryOptions(instructions="   ")
