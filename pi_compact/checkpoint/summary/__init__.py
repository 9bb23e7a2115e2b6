"""The LLM summary checkpoint: Pi's own compaction, a structured summary written by a model.

Behaviour follows Pi 1.6's ``compact()``: the span Pi would summarise is serialised as labelled text
(``render.serialize``) and sent inside ``<conversation>`` tags, with the previous summary in ``<previous-summary>``
tags on a later round (which then asks for an *update* of that summary). A cut inside a turn adds a second request
for the turn's beginning, sent at the same time, and the two answers are joined as Pi joins them. The output limit
is the model's own, reduced as Pi reduces it so that input and output fit the window. Pi's file lists follow the
summary, and ``details`` holds them, so Pi carries them into its next compaction.

Beyond Pi: every text sent is masked first (``pi_compact.redact``; ``SummaryOptions.redact``), and a history too
large for one request is summarised in chunks, each folded into the summary so far with the update prompt
(``plan_requests``). As Pi, the request carries the session's thinking level (``choose_thinking``, ``llm.thinking``).

The prompts are picompact's own wording of the same format. Replies are checked before anything is written: a
reply cut off at the output limit or asking for a tool is refused at once; one without the six sections (or with
an empty Goal, or empty, or longer than the limit) is asked for again once, then refused. A refusal is a
ProviderError (exit 3), and the session is left as it was.

The package along those seams: ``prompts`` (the format and the prompts), ``requests`` (options, the summarising
model, the requests fitted to its window, chunks, thinking), ``replies`` (checks and Pi's Usage), ``mode``
(``SummaryMode``, the ``CheckpointMode``) and ``preview`` (the dry run). Every public name is re-exported here.
"""

from __future__ import annotations

from pi_compact.checkpoint.summary.mode import SummaryCheckpoint, SummaryMode, Waiting, merge_summary
from pi_compact.checkpoint.summary.preview import SummaryPreview, preview_summary
from pi_compact.checkpoint.summary.prompts import (
    FOCUS_LABEL,
    INITIAL_INSTRUCTIONS,
    NO_PRIOR_HISTORY,
    PREFIX_INSTRUCTIONS,
    PREFIX_SECTIONS,
    SECTIONS,
    SPLIT_TURN_SEPARATOR,
    SYSTEM_PROMPT,
    UPDATE_INSTRUCTIONS,
    history_prompt,
    turn_prefix_prompt,
)
from pi_compact.checkpoint.summary.replies import clean_reply, combine_usage, pi_usage, reply_problem
from pi_compact.checkpoint.summary.requests import (
    RequestPlan,
    SummaryModel,
    SummaryOptions,
    SummaryRequest,
    choose_thinking,
    chunk_conversation,
    file_lists,
    fit_problems,
    fit_request,
    output_limit,
    pi_token_estimate,
    plan_requests,
    previous_summary_source,
    request_input_tokens,
    reserved_output,
    resolve_summary_model,
)

__all__ = [
    "FOCUS_LABEL",
    "INITIAL_INSTRUCTIONS",
    "NO_PRIOR_HISTORY",
    "PREFIX_INSTRUCTIONS",
    "PREFIX_SECTIONS",
    "SECTIONS",
    "SPLIT_TURN_SEPARATOR",
    "SYSTEM_PROMPT",
    "UPDATE_INSTRUCTIONS",
    "RequestPlan",
    "SummaryCheckpoint",
    "SummaryMode",
    "SummaryModel",
    "SummaryOptions",
    "SummaryPreview",
    "SummaryRequest",
    "Waiting",
    "choose_thinking",
    "chunk_conversation",
    "clean_reply",
    "combine_usage",
    "file_lists",
    "fit_problems",
    "fit_request",
    "history_prompt",
    "merge_summary",
    "output_limit",
    "pi_token_estimate",
    "pi_usage",
    "plan_requests",
    "preview_summary",
    "previous_summary_source",
    "reply_problem",
    "request_input_tokens",
    "reserved_output",
    "resolve_summary_model",
    "turn_prefix_prompt",
]
