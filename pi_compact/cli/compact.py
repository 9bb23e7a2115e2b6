"""``picompact compact``: write a checkpoint Pi loads on resume (or preview it, or write a compacted copy).

The clock and the ids of the written entries, and a call under the session's lock before writing, come from the
``Environment`` (``env.clock``, ``env.new_id``, ``env.in_lock``; a program embedding ``main`` or a test sets them).
``PICOMPACT_LOCK_TIMEOUT`` sets how many seconds to wait for another picompact holding the session's lock
(default 10).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import count_text, note_write, report_diagnostics, resolve_session_path
from pi_compact.cli.env import Environment
from pi_compact.cli.options import JsonOpt, SessionArg, SettingsFlags, with_settings
from pi_compact.cli.writing import check_context_file, options_from_environment
from pi_compact.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from pi_compact.checkpoint.summary import SummaryPreview
    from pi_compact.ops.compact import CompactResult

_fmt = count_text


def _trimmed_text(trimmed: bool) -> str:
    return "yes" if trimmed else "no"


def summary_line(data: Mapping[str, Any]) -> str:
    """One line with the numbers that matter: before, parts after, after, % freed, cap trimming."""
    stats = data["stats"]
    verb = {
        "written": "compacted",
        "rewritten": "compacted",
        "copied": "wrote a compacted copy of",
        "dry-run": "dry run, nothing written: would compact",
    }.get(data["status"], data["status"])
    parts = f"checkpoint {_fmt(stats['checkpoint_tokens'])} + kept tail {_fmt(stats['kept_tokens'])}"
    if stats["reminder_tokens"]:
        parts += f" + re-orientation {_fmt(stats['reminder_tokens'])}"
    if stats["system_tokens"]:
        parts += f" + system {_fmt(stats['system_tokens'])}"
    where = data["session"] + (f" to {data['output']}" if data["status"] == "copied" and data["output"] != "-" else "")
    return (
        f"{verb} {where}: {_fmt(stats['tokens_before'])} -> {_fmt(stats['tokens_after'])} tokens "
        f"({stats['freed_percent']:.0f}% freed; {parts}); cap trimming: {_trimmed_text(data['trimmed'])}"
        f"{_bought_text(data.get('forecast'))}"
    )


def _bought_text(forecast: Mapping[str, Any] | None) -> str:
    """'; buys ~N turns before the next compaction' (at the recent growth), when there is a forecast."""
    if not forecast or forecast["turns"] is None:
        return ""
    turns = forecast["turns"]
    if turns == 0:
        return "; buys no turn: Pi compacts again at once"
    growth = forecast["growth"]["per_turn"]
    plural = "s" if turns != 1 else ""
    return f"; buys ~{turns} turn{plural} before the next compaction (at +{growth:,.0f} tokens per reply)"


def _check_output(output: str | None, *, json_output: bool) -> None:
    """Flag combinations of the output that make no sense are usage errors naming the flags (``CheckpointRequest``
    and the options dataclasses check the rest, and main() names the flags in their messages)."""
    if json_output and output == "-":
        raise UsageError("--json and --output - clash: both would write to stdout")
    if output is not None and output != "-" and not output.strip():
        raise UsageError("--output needs a file name (or - for stdout)")


COMPACT_MODEL_OPT = typer.Option(
    None,
    "--model",
    metavar="PROVIDER/ID",
    help="The model whose window and settings overrides apply; with --mode summary also the model that writes "
    "the summary (default: the session's model if it has an API key, else PICOMPACT_MODEL).",
)
BASE_URL_OPT = typer.Option(
    None,
    "--base-url",
    metavar="URL",
    help="--mode summary: the server to send requests to (OpenAI-compatible; Anthropic-style for anthropic/...).",
)
THINKING_OPT = typer.Option(
    None,
    "--thinking",
    metavar="LEVEL",
    help="--mode summary: the model's reasoning for the summary request: off, minimal, low, medium, high, "
    "xhigh or max (default: as Pi does, the session's thinking level, else defaultThinkingLevel from Pi's "
    "settings, else medium; clamped to what the model supports). --thinking off turns it off.",
)
REDACT_OPT = typer.Option(
    None,
    "--redact/--no-redact",
    help="Mask detected secrets (API keys, tokens, private keys, passwords) as [REDACTED:kind:N]: before "
    "anything is sent to a model with --mode summary (on by default), in the checkpoint text with --mode "
    "verbatim (off by default). The raw session is never changed.",
)


@app.command()
@with_settings(model=COMPACT_MODEL_OPT)
def compact(
    ctx: typer.Context,
    session: Path | None = SessionArg,
    mode: str = typer.Option(
        "verbatim",
        "--mode",
        help="How to build the checkpoint: verbatim (no model) or summary (Pi's structured summary, by a model).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the checkpoint (with --json: the entries) and change nothing."
    ),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        metavar="FILE|-",
        help="Write a compacted copy to FILE (- for stdout); SESSION is untouched.",
    ),
    cap: int | None = typer.Option(
        None,
        "--cap",
        metavar="N",
        help="Checkpoint budget in tokens (default: picompact.cap in Pi's settings, else keepRecentTokens / 2).",
    ),
    no_cap: bool = typer.Option(False, "--no-cap", help="No budget: keep every compacted span whole."),
    context_file: list[Path] | None = typer.Option(
        None,
        "--context-file",
        metavar="PATH",
        help="An extra AGENTS.md-like file whose named files are kept as startup reads (repeatable).",
    ),
    if_needed: bool = typer.Option(
        False, "--if-needed", help="Only compact when the context is over Pi's threshold; else exit 0."
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Write even a compaction whose result is still over the threshold (Pi would compact again at once).",
    ),
    settings: SettingsFlags = None,  # type: ignore[assignment]  # with_settings: the settings flags
    no_backup: bool = typer.Option(
        False, "--no-backup", help="When a v1/v2 file is migrated and rewritten, keep no SESSION.bak."
    ),
    repair: bool = typer.Option(
        False, "--repair", help="Write even after a torn last line (it stays in place, a line Pi skips)."
    ),
    base_url: str | None = BASE_URL_OPT,
    instructions: str | None = typer.Option(
        None, "--instructions", metavar="TEXT", help="--mode summary: what the summary should focus on."
    ),
    include_thinking: bool = typer.Option(
        False, "--include-thinking", help="--mode summary: let the model read the assistant's thinking too."
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", metavar="S", help="--mode summary: seconds to wait for each answer (default 120)."
    ),
    thinking: str | None = THINKING_OPT,
    redact: bool | None = REDACT_OPT,
    json_output: bool = JsonOpt,
) -> ExitCode:
    """Compact the session: append a checkpoint Pi loads on resume, plus a re-orientation message.

    --mode summary asks a model for Pi's own structured summary instead (Goal, Constraints & Preferences, Progress,
    Key Decisions, Next Steps, Critical Context, then the file lists), exactly as Pi compacts; no re-orientation
    message. With --dry-run it sends nothing and prints the exact request(s), their size and a cost upper bound.
    Detected secrets are masked as [REDACTED:kind:N] before anything is sent (--no-redact to send as is); a
    history larger than the model's window is summarised in chunks, each folded into the summary so far.

    The compaction entry's parent is the branch leaf (the last entry, or --leaf). Pi resumes on the last entry
    of the file, so after `compact --leaf ID` Pi continues on the new checkpoint, on that branch.
    Exit codes: 0 done (or not needed with --if-needed), 2 usage error or nothing to compact, 3 the file kept
    changing underneath or stayed locked, or the model failed or answered unusably (nothing written), 130
    interrupted (nothing written).
    """
    from functools import partial

    from pi_compact.llm.choice import model_available
    from pi_compact.ops.checkpoint_request import CheckpointRequest
    from pi_compact.ops.compact import CompactOptions, compact_session

    env = env_of(ctx)
    request = CheckpointRequest(
        mode=mode,
        cap=cap,
        no_cap=no_cap,
        context_files=tuple(str(f) for f in context_file or ()),
        # Advertise `picompact lookup` in the checkpoint only when that command would find a model and a key.
        lookup_available=partial(model_available, env=env.environ),
        model=settings.model if mode == "summary" else None,  # else --model only selects the settings overrides
        base_url=base_url,
        instructions=instructions,
        include_thinking=include_thinking,
        thinking=thinking,
        timeout=timeout,
        redact=redact,
    )
    _check_output(output, json_output=json_output)
    if settings.context_window is not None and settings.model is not None and mode != "summary":
        env.warn("--context-window given: --model then only selects per-model settings overrides")
    for f in context_file or []:
        check_context_file(f)
    chosen = request.checkpoint_mode(waiting=_waiting(env))
    options = CompactOptions(
        check=settings.check_options(),
        dry_run=dry_run,
        output=output,
        if_needed=if_needed,
        backup=not no_backup,
        repair=repair,
        force=force,
        **options_from_environment(env, output),
    )
    result = compact_session(resolve_session_path(session), chosen, options)
    if result.written or result.status == "copied":
        env.interrupted_note = "interrupted after the compaction was written"
    _report(env, result, json_output=json_output, dry_run=dry_run)
    return ExitCode.OK


def _report(env: Environment, result: CompactResult, *, json_output: bool, dry_run: bool) -> None:
    """What was done (or would be): a summary dry run's requests, else the compaction, on stdout and stderr."""
    if result.preview is not None:
        _report_preview(env, result, json_output=json_output)
        return
    _report_compaction(env, result, json_output=json_output, dry_run=dry_run)
    _summary_note(env, result)
    checkpoint = result.checkpoint
    if result.mode == "verbatim" and checkpoint is not None and checkpoint.redacted is not None:
        from pi_compact.redact import describe_counts

        env.note(f"redaction: masked {describe_counts(checkpoint.redacted)} in the checkpoint text")


def _report_compaction(env: Environment, result: CompactResult, *, json_output: bool, dry_run: bool) -> None:
    if dry_run and result.entries and result.checkpoint is not None:
        from pi_compact.ops.coverage import drafted_coverage

        result.coverage = drafted_coverage(result.check, result.entries)
    data = result.compaction_json()
    report_diagnostics(env, result.check.diagnostics, result.path)
    for warning in result.check.warnings:
        env.warn(warning)
    if result.status == "not-needed":
        check = result.check
        why = (
            "auto-compaction is disabled in settings"
            if not check.enabled
            else f"{check.plan.context.tokens:,} context tokens, threshold {check.threshold:,}"
        )
        env.note(f"not needed ({why}); nothing written")
        if json_output and dry_run and result.mode == "summary":  # the summary dry run's own short document
            env.emit(result.not_needed_json())
        elif json_output:
            env.emit(data)
        return
    for warning in result.warnings:
        env.warn(warning)
    if json_output:
        env.emit(data)
    elif dry_run and result.checkpoint is not None:
        env.text(result.checkpoint.summary)
        if result.checkpoint.reminder is not None:
            env.text("")
            env.text("----- re-orientation message (a hidden custom_message Pi places after the kept tail) -----")
            env.text(result.checkpoint.reminder)
    note_write(env, result.write, rewritten=result.status == "rewritten")
    env.note(summary_line(data))
    if data.get("coverage"):
        from pi_compact.cli.coverage import score_lines

        lines = score_lines({"categories": data["coverage"]})
        env.note(
            "what of the compacted span the model would still read (as `picompact coverage` measures):\n"
            + ("\n".join(lines))
        )


# ---------------------------------------------------------------------------------------------------------------
# --mode summary


def _waiting(env: Environment) -> Callable[[str], Any]:
    """A spinner with the elapsed time on stderr while the model writes (only on a terminal)."""
    return lambda label: env.progress(label, hint="Ctrl-C aborts, nothing is written")


def _report_preview(env: Environment, result: CompactResult, *, json_output: bool) -> None:
    """A summary dry run: the exact request(s) and what they may cost; nothing sent, nothing written."""
    from pi_compact.checkpoint.summary import SummaryPreview

    preview = result.preview
    assert isinstance(preview, SummaryPreview)
    report_diagnostics(env, result.check.diagnostics, result.path)
    for warning in result.check.warnings:
        env.warn(warning)
    for warning in [*preview.warnings, *result.warnings]:
        env.warn(warning)
    if json_output:
        env.emit(result.to_json())
    else:
        count = len(preview.requests)
        for n, request in enumerate(preview.requests, 1):
            kind = "turn prefix" if request.kind == "turn_prefix" else "history"
            part = f", chunk {request.chunk} of {request.chunks}" if request.chunk else ""
            head = f"request {n} of {count} ({kind} summary{part}, max {request.max_tokens:,} output tokens)"
            if n > 1:
                env.text("")
            env.text(f"----- {head}: system prompt -----")
            env.text(request.system)
            env.text(f"----- {head}: user message -----")
            env.text(request.user)
    env.note(_redaction_text(preview.redacted, would=True))
    env.note(_thinking_text(preview))
    cl100k = [c for c in preview.cl100k if c is not None]
    counted = f"; cl100k {sum(cl100k):,}" if len(cl100k) == len(preview.cl100k) else ""
    cost = preview.cost_upper_bound
    price = (
        f"cost at most ${cost:.4f} (output priced at the full output limit: an upper bound)"
        if cost is not None
        else "cost unknown (no prices for this model)"
    )
    limits = [r.max_tokens for r in preview.requests]
    if preview.chunks:
        env.note(
            f"the history does not fit one request to {preview.model.name}: {preview.chunks} chunks, cut at "
            "message boundaries; the first is summarised, each next one folded into the summary so far with the "
            "update prompt (one request after another)"
        )
    if len(limits) == 1:
        output = f"output limit {limits[0]:,} tokens"
    else:
        output = (
            f"output at most {preview.max_output_tokens:,} tokens in all (the sum of each request's limit: "
            f"{' + '.join(f'{n:,}' for n in limits)})"
        )
    if not preview.sendable:
        key = "picompact cannot send to this model"
    elif preview.key_source:
        key = f"API key from {preview.key_source}"
    elif preview.key_available:
        key = "no API key needed"
    else:
        key = "no API key"
    env.note(
        f"dry run, nothing sent: {len(preview.requests)} request(s) to {preview.model.name} "
        f"(window {preview.model.context_window:,}; {key}); input ~{preview.input_tokens:,} tokens "
        f"(Pi's estimate{counted}); {output}; {price}"
    )


def _summary_note(env: Environment, result: CompactResult) -> None:
    """Which model wrote the summary and what it cost (stderr)."""
    if result.mode != "summary" or result.checkpoint is None:
        return
    from pi_compact.checkpoint.summary import SummaryCheckpoint

    checkpoint = result.checkpoint
    if not isinstance(checkpoint, SummaryCheckpoint) or not checkpoint.model or checkpoint.usage is None:
        return
    model, usage, requests = checkpoint.model, checkpoint.usage, checkpoint.requests
    env.note(_redaction_text(checkpoint.redacted, would=False))
    if checkpoint.chunks:
        env.note(f"the history was summarised in {checkpoint.chunks} chunks; usage sums every request")
    cost = usage.get("cost", {}).get("total", 0)
    env.note(
        f"summary by {model} in {requests} request{'s' if requests != 1 else ''}: {usage['input']:,} input + "
        f"{usage['output']:,} output tokens (cache read {usage['cacheRead']:,}), ${cost:.4f}"
    )


def _redaction_text(counts: dict[str, int] | None, *, would: bool) -> str:
    """What redaction did (or would do), as counts by kind, never the secrets."""
    from pi_compact.redact import describe_counts

    if counts is None:
        return "redaction off (--no-redact): the history is sent as it is"
    verb = "would mask" if would else "masked"
    return f"redaction: {verb} {describe_counts(counts)} before sending"


def _thinking_text(preview: SummaryPreview) -> str:
    """The thinking level the requests carry and where it came from."""
    choice = preview.thinking
    sent = preview.requests[0].thinking if preview.requests else "off"
    if choice is None:
        return f"thinking: {sent}"
    origin = {
        "session": "the session's level",
        "settings": "defaultThinkingLevel in Pi's settings; the session sets none",
        "Pi's default": "Pi's default; neither the session nor the settings set one",
        "--thinking": "--thinking",
    }.get(choice.source, choice.source)
    if sent == choice.level:
        return f"thinking: {sent} ({origin})"
    if sent == "off":
        return f"thinking: off ({preview.model.name} does not reason; the level would be {choice.level}, {origin})"
    return f"thinking: {sent} ({choice.level} from {origin}, clamped to what {preview.model.name} supports)"
