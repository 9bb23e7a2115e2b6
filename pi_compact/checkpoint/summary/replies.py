"""Replies: checked before anything is written; Pi's Usage for what they cost."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pi_compact.checkpoint.summary.prompts import PREFIX_SECTIONS, SECTIONS, RequestKind
from pi_compact.checkpoint.summary.requests import SummaryModel, SummaryRequest, pi_token_estimate
from pi_compact.session.entries import JsonDict

if TYPE_CHECKING:
    from pi_compact.llm import Response, Usage
    from pi_compact.pi.catalog import ModelInfo


# ---------------------------------------------------------------------------------------------------------------
# Replies


_HEADING = re.compile(r"^#{1,6}[ \t]", re.MULTILINE)
_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\n(?P<body>.*)\n```[ \t]*\Z", re.DOTALL)


def clean_reply(text: str) -> str:
    """The reply without surrounding blank space or a code fence wrapped around the whole of it."""
    text = text.strip()
    fenced = _FENCE.match(text)
    return fenced.group("body").strip() if fenced else text


def _section_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"^##[ \t]*{re.escape(name)}[ \t]*:?[ \t]*$", re.MULTILINE | re.IGNORECASE)


def reply_problem(text: str, kind: RequestKind, max_tokens: int) -> str | None:
    """Why a (cleaned) reply cannot be stored, or None when it is a usable summary."""
    if not text:
        return "the reply is empty"
    if pi_token_estimate(text) > max_tokens:
        return f"the reply (~{pi_token_estimate(text):,} tokens) is longer than the output limit of {max_tokens:,}"
    sections = SECTIONS if kind == "history" else PREFIX_SECTIONS
    missing = [name for name in sections if not _section_pattern(name).search(text)]
    if missing:
        return (
            "the reply lacks the section"
            + ("s " if len(missing) > 1 else " ")
            + ", ".join(f"'## {name}'" for name in missing)
        )
    if kind == "history":
        start = _section_pattern("Goal").search(text)
        assert start is not None
        rest = text[start.end() :]
        following = _HEADING.search(rest)
        if not (rest[: following.start()] if following else rest).strip():
            return "the reply's '## Goal' section is empty"
    return None


def hard_failure(response: Response, request: SummaryRequest, model: SummaryModel) -> str | None:
    """Failures Pi refuses at once (no second try): a reply cut off by the limit, or a tool call."""
    if response.stop_reason == "length":
        return (
            f"the reply hit the output limit of {request.max_tokens:,} tokens and is incomplete "
            f"({model.name} allows {model.max_tokens:,}; the window is {model.context_window:,})"
        )
    if response.tool_calls:
        return "the model asked to call a tool instead of writing the summary"
    if response.usage.output_tokens > request.max_tokens:
        return (
            f"the reply used {response.usage.output_tokens:,} output tokens, more than the limit "
            f"of {request.max_tokens:,}"
        )
    return None


# ---------------------------------------------------------------------------------------------------------------
# Usage in Pi's shape


def pi_usage(usage: Usage, info: ModelInfo | None) -> JsonDict:
    """Pi's Usage object for one response: token counts and the cost from the table prices (0 when unknown)."""
    rates = (info.input_cost, info.output_cost, info.cache_read_cost, info.cache_write_cost) if info else (0, 0, 0, 0)
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    costs = [rate / 1_000_000 * count for rate, count in zip(rates, counts, strict=True)]
    return {
        "input": counts[0],
        "output": counts[1],
        "cacheRead": counts[2],
        "cacheWrite": counts[3],
        "totalTokens": sum(counts),
        "cost": {
            "input": costs[0],
            "output": costs[1],
            "cacheRead": costs[2],
            "cacheWrite": costs[3],
            "total": costs[0] + costs[1] + costs[2] + costs[3],
            "totalFromProvider": False,
        },
    }


def combine_usage(first: JsonDict, second: JsonDict) -> JsonDict:
    """Pi's combineUsage: every count and cost summed; provider-billed only when both parts are."""
    out: JsonDict = {key: first[key] + second[key] for key in ("input", "output", "cacheRead", "cacheWrite")}
    for key in ("cacheWrite1h", "reasoning"):
        if key in first or key in second:
            out[key] = first.get(key, 0) + second.get(key, 0)
    out["totalTokens"] = first["totalTokens"] + second["totalTokens"]
    a, b = first["cost"], second["cost"]
    out["cost"] = {key: a[key] + b[key] for key in ("input", "output", "cacheRead", "cacheWrite", "total")}
    out["cost"]["totalFromProvider"] = a.get("totalFromProvider") is True and b.get("totalFromProvider") is True
    return out
