"""``picompact check`` and ``picompact sessions``."""

# No ``from __future__ import annotations`` here: typer reads the command's annotations, and evaluated ones spare
# it compiling each string at start-up.

import gc
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli._progress import Progress
from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import count_text, report_diagnostics, resolve_session_path
from pi_compact.cli.env import Environment
from pi_compact.cli.options import JsonOpt, NoCacheOpt, SessionArg, SettingsFlags, with_settings
from pi_compact.errors import ExitCode

_fmt = count_text


def check_rows(data: Mapping[str, Any], shown: Callable[[str], str] = str) -> list[tuple[str, str, str]]:
    """(label, value, style) rows of the human report: the numbers first, then the cut; ``shown``: how what the
    session names (its path, its model, entry ids) is printed (``Environment.shown``: on a terminal a line break
    or an escape in it is shown, not obeyed)."""
    rows: list[tuple[str, str, str]] = []
    session = data["session"]
    model = data["model"]
    rows.append(
        ("session", f"{shown(session['path'])} ({session['entries']} entries, branch {data['branch_length']})", "")
    )
    rows.append(("model", shown(f"{model['provider']}/{model['id']}") if model else "unknown", ""))
    rows.append(("context tokens", f"{_fmt(data['context_tokens'])}  [{data['context_tokens_source']}]", ""))
    if data.get("context_tokens_cl100k") is not None:
        rows.append(
            (
                "cl100k tokens",
                f"{_fmt(data['context_tokens_cl100k'])}  [tiktoken cl100k_base: an extra view, not Pi's rule]",
                "",
            )
        )
    rows.append(("context window", f"{_fmt(data['context_window'])}  [{data['context_window_source']}]", ""))
    rows.append(
        (
            "threshold",
            f"{_fmt(data['threshold'])}  (window - reserveTokens {_fmt(data['reserve_tokens'])}; "
            f"keepRecentTokens {_fmt(data['keep_recent_tokens'])})",
            "",
        )
    )
    if not data["enabled"]:
        rows.append(("compact?", "no (auto-compaction disabled in settings)", ""))
    elif data["should_compact"]:
        over = data["context_tokens"] - data["threshold"]
        rows.append(("compact?", f"YES: {_fmt(over)} tokens over the threshold", "red"))
    else:
        left = data["threshold"] - data["context_tokens"]
        rows.append(("compact?", f"no: {_fmt(left)} tokens to go", "green"))
    if data.get("forecast") and data["enabled"]:
        rows.append(("forecast", data["forecast"]["description"], ""))
    prune = data.get("prune")
    if prune is not None:
        rows.append(("prune", prune_text(prune), ""))
    if data["can_compact"]:
        rows.append(
            (
                "cut",
                f"keep from entry {shown(str(data['first_kept_entry_id']))} (branch index {data['first_kept_index']})",
                "",
            )
        )
        if data["is_split_turn"]:
            rows.append(
                (
                    "split turn",
                    f"yes: the turn starts at entry {shown(str(data['turn_start_entry_id']))} "
                    f"(index {data['turn_start_index']})",
                    "",
                )
            )
        else:
            rows.append(("split turn", "no", ""))
        for key, label in (("summarize", "summarize"), ("turn_prefix", "turn prefix"), ("kept", "kept")):
            part = data[key]
            if key == "turn_prefix" and not data["is_split_turn"]:
                continue
            rows.append(
                (label, f"{part['entries']} entries, {part['messages']} messages, ~{_fmt(part['tokens'])} tokens", "")
            )
    else:
        rows.append(("cut", f"nothing to compact: {data['nothing_to_compact_reason']}", ""))
    if data["read_files"] or data["modified_files"]:
        evidence = data.get("file_evidence")  # one item per file as shown (two spellings of a file are one)
        read, modified = (
            (evidence["readFiles"], evidence["modifiedFiles"])
            if evidence
            else (data["read_files"], data["modified_files"])
        )
        rows.append(("files", f"{len(read)} read, {len(modified)} modified", ""))
    return rows


def prune_text(prune: Mapping[str, Any]) -> str:
    """What ``picompact prune`` would free, and the turns it would buy at the recent growth."""
    if not prune["outputs"]:
        return "nothing to prune (no old tool output outside the protected ones)"
    plural = "s" if prune["outputs"] != 1 else ""
    text = (
        f"would free {_fmt(prune['tokens_freed'])} tokens ({prune['freed_percent']:.0f}%) from {prune['outputs']} "
        f"old tool output{plural}: {_fmt(prune['tokens_before'])} -> {_fmt(prune['tokens_after'])}"
    )
    turns = prune["turns_bought"]
    if turns is not None:
        text += f"; buys ~{turns} more turn{'s' if turns != 1 else ''} before the threshold"
    return text + " (picompact prune)"


def render_rows(env: Environment, rows: list[tuple[str, str, str]]) -> None:
    """Aligned ``label  value`` lines; on a terminal the labels bold and the verdict coloured."""
    width = max(len(label) for label, _, _ in rows)
    for label, value, style in rows:
        head = env.style(label.ljust(width), "bold")
        env.text(f"{head}  {env.style(value, style) if style else value}")


@app.command()
@with_settings
def check(
    ctx: typer.Context,
    session: Path | None = SessionArg,
    settings: SettingsFlags = None,  # type: ignore[assignment]  # with_settings: the settings flags
    tokenizer: str = typer.Option("pi", "--tokenizer", help="pi (Pi's chars/4 rule) or cl100k (extra view)."),
    files: bool = typer.Option(False, "--files", help="List the read and modified files too."),
    json_output: bool = JsonOpt,
    no_cache: bool = NoCacheOpt,
) -> ExitCode:
    """Does the session need compacting, and where would Pi cut? Exit 1 when it should compact."""
    from pi_compact.ops.check import check_session

    env = env_of(ctx)
    if settings.context_window is not None and settings.model is not None:
        env.warn("--context-window given: --model then only selects per-model settings overrides")
    path = resolve_session_path(session)
    with Progress(env, f"checking {path}"):  # a spinner on a terminal when it takes more than a second
        result = check_session(path, settings.check_options(tokenizer=tokenizer), cache=not no_cache)
        if env.owns_process:  # the process's own run (``core.main`` froze start-up): the session lives to exit
            gc.freeze()  # so no collection walks what the load made (15 ms of a 100 MB check --json)
        data = result.to_json(evidence=json_output or files)
        from pi_compact.ops.prune import plan_prune  # not on check's start-up path

        data["prune"] = plan_prune(result, summary_only=True).summary_json()  # type: ignore[typeddict-unknown-key]
    report_diagnostics(env, result.diagnostics, path)
    for warning in result.warnings:
        env.warn(warning)
    if json_output:
        env.emit(data)
    else:
        render_rows(env, check_rows(data, env.shown))
        evidence = data.get("file_evidence")
        if files and evidence:
            for kind, key in (("read", "readFiles"), ("modified", "modifiedFiles")):
                for item in evidence[key]:
                    label = f"  ({item['label']})" if item["label"] else ""
                    env.text(f"  {kind:<9} {item['displayPath']}{label}")
    return ExitCode.NO if result.should_compact else ExitCode.OK
