"""``picompact lookup``: ask a model a question about the raw history; it searches with list/grep/show.

Printing only: the search loop, the budgets and the quote checks live in ``pi_compact.lookup.agent``.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import report_diagnostics, resolve_session_path, split_thing_session
from pi_compact.cli.options import JsonOpt, LeafOpt
from pi_compact.errors import ExitCode, UsageError

_HELP = """Ask a model a question about the session's raw history; it answers citing ENTRY ids.

The model searches the raw branch (every entry, thinking, tool argument and output in full; never the
compacted view) in its own conversation, with exactly three tools: list_entries, grep and show_entry, the
functions and limits of `picompact list/grep/show`. Its searches are budgeted (--budget, default 10): a call
with new arguments is a search; following the cursor a result gave, with the same arguments, is free; a
replayed or foreign cursor is a search. Model calls are capped at 3 x the budget. When either runs out, one
last call without tools writes up the partial findings, labelled incomplete; if that call fails, the latest
text the model wrote is shown, labelled incomplete (exit 3).

The answer is checked against the history: every quoted span (double quotes, backticks, code blocks and >
block quotes of 10+ characters) must appear verbatim in one entry (whitespace-normalised), else it is
marked [unverified quote]; every cited ENTRY id must exist on the branch, else it is marked [no such entry].

The model: --model, else the session's current model when picompact supports its provider and has a key,
else PICOMPACT_MODEL. Before anything is sent, detected secrets (API keys, tokens, private keys, passwords
in assignments, URLs with passwords) are masked as [REDACTED:kind:N] (--no-redact sends them as they are).
Keys, in Pi's order: PICOMPACT_API_KEY (a key for this run; with PICOMPACT_API_KEY_PROVIDER set, only
for that provider's models), then an API-key entry in Pi's auth.json, then the provider's apiKey in Pi's
models.json, then the provider's variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GEMINI_API_KEY, ...). A
provider defined in models.json is called at its baseUrl.

Exit codes: 0 answered (it cites at least one entry of the branch), 1 nothing found (the answer starts with
"Not found in this session." or cites no entry of the branch), 2 usage or input error, 3 the provider failed
(the first call, or the write-up), 130 interrupted.

JSON (--json): {"schema_version": 1, "session", "question", "answer", "complete", "found",
"not_found_reply", "stopped_by" (null | budget | call_limit | context_limit | empty_reply | provider_error),
"writeup" (null | ok | failed), "error", "answer_truncated", "citations": [{id, entry_id, exists,
explicit}], "quotes": [{text, kind (double_quote | code | code_block | block_quote), verified, entries,
missing, start, end}], "unverified_quotes", "unknown_citations", "searches": {used, budget},
"model_calls": {used, limit}, "tool_calls": [{tool, arguments, kind (search | continuation | refused),
counted, ok, error, result_chars}], "model": {ref, source}, "usage": {input_tokens, output_tokens,
cache_read_tokens, cache_write_tokens, cost}, "leaf_id", "note"}.
"""


def recovery_note(session: Path) -> str:
    """Where to look next when the answer is partial: the direct search commands, session filled in."""
    s = shlex.quote(str(session))
    return f"for more detail, search directly: picompact grep '<regex>' {s} and picompact show <entry-id> {s}"


def _status_line(result: Any) -> str:
    calls = f"{result.model_calls} model call{'s' if result.model_calls != 1 else ''}"
    usage = result.usage
    cost = f", ${result.cost:.4f}" if result.cost is not None else ""
    return (
        f"{result.model}: {result.searches_used} of {result.budget} searches, {calls}, "
        f"{usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens:,} input + "
        f"{usage.output_tokens:,} output tokens{cost}"
    )


def _incomplete_label(result: Any) -> str | None:
    from pi_compact.lookup.prompts import WRITEUP_REASONS

    if result.complete:
        return None
    why = WRITEUP_REASONS.get(result.stopped_by or "", result.stopped_by or "")
    if result.writeup == "failed":
        text = "the latest text the model wrote, not a finished answer" if result.answer else "no answer was written"
        return f"[incomplete] The search stopped ({why}) and the write-up failed ({result.error}): {text}."
    if result.stopped_by is not None:
        return f"[incomplete] The search stopped ({why}); this is a write-up of partial findings."
    return "[incomplete] The answer was cut off at its size limit."


def marked_answer(result: Any) -> str:
    """The answer with ``[unverified quote]`` after each quote not found and ``[no such entry]`` after bad ids."""
    marks: list[tuple[int, str]] = [(q.end, " [unverified quote]") for q in result.unverified_quotes]
    for citation in result.unknown_citations:
        marks.extend((end, " [no such entry]") for _, end in citation.spans)
    text = result.answer
    for at, mark in sorted(marks, reverse=True):
        text = text[:at] + mark + text[at:]
    return text


def _checks_line(result: Any) -> str | None:
    parts: list[str] = []
    if result.quotes:
        bad = len(result.unverified_quotes)
        parts.append(
            f"{len(result.quotes)} quote{'s' if len(result.quotes) != 1 else ''} checked against the history"
            + (f", {bad} not found there [unverified quote]" if bad else ", all found")
        )
    if result.citations:
        bad = len(result.unknown_citations)
        parts.append(
            f"{len(result.citations)} entr{'ies' if len(result.citations) != 1 else 'y'} cited"
            + (f", {bad} not on this branch [no such entry]" if bad else ", all exist")
        )
    return "; ".join(parts) if parts else None


def lookup_exit_code(result: Any) -> ExitCode:
    """3 when the write-up failed (the provider), 1 when nothing was found, else 0."""
    if result.writeup == "failed":
        return ExitCode.EXTERNAL
    return ExitCode.OK if result.found else ExitCode.NO


@app.command(help=_HELP)
def lookup(
    ctx: typer.Context,
    args: list[str] = typer.Argument(..., metavar='"QUESTION" [SESSION]', show_default=False),
    model: str | None = typer.Option(
        None,
        "--model",
        metavar="PROVIDER/ID",
        help="The model that searches and answers (default: the session's model if it has an API key, "
        "else PICOMPACT_MODEL).",
    ),
    base_url: str | None = typer.Option(
        None,
        "--base-url",
        metavar="URL",
        help="The server to send requests to (OpenAI-compatible; Anthropic-style for anthropic/...).",
    ),
    budget: int = typer.Option(
        10, "--budget", metavar="N", help="Substantive searches allowed (following pages is free); calls: 3 x N."
    ),
    timeout: float = typer.Option(120.0, "--timeout", metavar="S", help="Seconds to wait for each model answer."),
    no_redact: bool = typer.Option(
        False,
        "--no-redact",
        help="Send the history as it is; by default detected secrets are masked as [REDACTED:kind:N] first.",
    ),
    leaf: str | None = LeafOpt,
    json_output: bool = JsonOpt,
) -> ExitCode:
    from pi_compact.llm import choose_model_and_key
    from pi_compact.lookup.agent import LookupOptions, run_lookup, session_model
    from pi_compact.search.transcript import build_transcript
    from pi_compact.session.load import load_session

    env = env_of(ctx)
    session_arg, question = split_thing_session(env, args, '"QUESTION"', "lookup")
    if not question.strip():
        raise UsageError("the question is empty")
    options = LookupOptions(budget=budget, timeout=timeout, redact=not no_redact)
    path = resolve_session_path(session_arg)
    loaded = load_session(path)
    report_diagnostics(env, loaded.diagnostics, path)
    transcript = build_transcript(loaded, leaf_id=leaf)
    ref, key = choose_model_and_key(session_model(transcript), model, env.environ, base_url=base_url)
    with env.progress("starting") as progress:
        result = run_lookup(transcript, question, ref, api_key=key, options=options, progress=progress)
    note = recovery_note(path) if not result.complete else None
    if json_output:
        env.emit({"session": str(path), **result.to_json(), "note": note})
    else:
        label = _incomplete_label(result)
        if label:
            env.text(label)
            env.text("")
        answer = marked_answer(result) or "(no answer)"
        env.text("\n".join(env.shown_text(line) for line in answer.split("\n")))
        checks = _checks_line(result)
        if checks or note:
            env.text("")
        if checks:
            env.text(f"[checked] {checks}")
        if note:
            env.text(f"[note] {note}")
        env.stdout.flush()
    env.note(_status_line(result))
    return lookup_exit_code(result)
