"""``picompact pi …``: install picompact's extension into Pi, inspect and remove it, and the machine-readable
commands the extension runs (``checkpoint``, ``tool``, ``config``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import check_nonneg
from pi_compact.cli.env import printable
from pi_compact.cli.options import JsonOpt
from pi_compact.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from pi_compact.extension.install import InstallStatus

pi_app = typer.Typer(
    name="pi",
    help=(
        "Use picompact inside Pi: an extension that makes Pi's own compaction write picompact's checkpoint "
        "and gives the agent the context_* recovery tools.\n\n"
        "Start with `picompact pi install`; `picompact pi status` says what is installed; "
        "`picompact pi uninstall` removes it."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(pi_app, name="pi")

ProjectOpt = typer.Option(
    False,
    "--project",
    help="The project's .pi/extensions/ (loaded only in a trusted project) instead of the agent dir.",
)


def _shown(command: list[str]) -> str:
    import shlex

    return shlex.join(command)


@pi_app.command("install")
def install_command(
    ctx: typer.Context,
    project: bool = ProjectOpt,
    mode: str | None = typer.Option(
        None,
        "--mode",
        metavar="verbatim|summary",
        help="Default compaction mode: verbatim (no model) or summary (settings may override). Default: the mode "
        "recorded by the last install here, else verbatim.",
    ),
    force: bool = typer.Option(False, "--force", help="Replace files changed since picompact installed them."),
    replace: bool = typer.Option(
        False, "--replace", help="Remove the copy installed in the other place (global or project) first."
    ),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """Install the Pi extension where Pi discovers it.

    Globally: <agent dir>/extensions/picompact/ (~/.pi/agent, or $PI_CODING_AGENT_DIR). With --project:
    ./.pi/extensions/picompact/ (loaded only when Pi trusts the project). Writes index.ts (the extension) and
    install.json (the absolute command of this picompact, its version, the mode), so the extension works even
    when picompact is not on Pi's PATH. A file changed since picompact wrote it is never overwritten without
    --force. Run it again after upgrading picompact: the recorded mode is kept unless --mode changes it. One copy
    at a time: with the extension installed in the other place (global or this project), which Pi would load
    beside it in a trusted project, install refuses (--replace removes that copy first). Exit 0 installed, 2
    refused or bad flags.
    """
    from pi_compact.extension.install import install

    out = env_of(ctx)
    result = install("project" if project else "global", mode=mode, force=force, replace=replace)
    if json_output:
        out.emit({"status": "installed", **result.to_json()})
        return ExitCode.OK
    if result.replaced_other is not None:
        out.text(f"removed the other copy: {result.replaced_other.directory}")
    for path in result.replaced_changed:
        out.warn(f"replaced {path}, which had been changed (--force)")
    state = {"installed": "installed", "updated": "updated", "unchanged": "already up to date"}[result.state]
    out.text(f"picompact extension {state}: {result.directory}")
    out.text(f"  calls: {_shown(result.command)}")
    was = f"; was {result.previous_mode}" if result.previous_mode not in (None, result.mode) else ""
    out.text(f'  mode:  {result.mode}{was} (settings.json "picompact": {{"mode": …}} overrides it)')
    if project:
        from pi_compact.pi.extensions import project_trust

        out.text(f"  project: {project_trust()[1]}")
    out.text("Pi loads it when it next starts (or on /reload). `picompact pi status` checks it.")
    return ExitCode.OK


@pi_app.command("uninstall")
def uninstall_command(
    ctx: typer.Context,
    project: bool = ProjectOpt,
    force: bool = typer.Option(False, "--force", help="Also remove files changed since picompact installed them."),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """Remove exactly what `picompact pi install` wrote (and the directory, if nothing else is in it).

    A file changed since it was installed is kept (exit 1) unless --force. Settings under "picompact" in Pi's
    settings.json are left alone. Exit 0 removed or nothing was installed, 1 something was kept.
    """
    from pi_compact.extension.install import uninstall

    out = env_of(ctx)
    result = uninstall("project" if project else "global", force=force)
    if json_output:
        out.emit(result.to_json())
    elif not result.installed:
        out.text(f"no picompact extension installed in {result.directory}; nothing to remove")
    else:
        for path in result.removed:
            out.text(f"removed {path}")
        if result.removed_directory:
            out.text(f"removed {result.directory}")
        for folder in result.removed_folders:
            out.text(f"removed {folder} (empty; picompact pi install had created it)")
    for path in result.kept:
        out.warn(f"kept {path}: changed since picompact installed it (use --force to remove it)")
    if result.kept_record is not None:
        out.warn(f"kept {result.kept_record} too: it records what picompact wrote there, for a later uninstall")
    for name in result.refused:
        out.warn(f"left {name!r} alone: the install record names it, but it is not a file inside {result.directory}")
    return ExitCode.NO if result.kept else ExitCode.OK


@pi_app.command("status")
def status_command(ctx: typer.Context, json_output: bool = JsonOpt) -> ExitCode:
    """Say what is installed, where, which picompact it calls, whether versions match and whether Pi loads it.

    Looks at the global install and the current directory's project install, the project's trust (a project
    install and project settings load only in a trusted project) and the effective "picompact" settings.
    Exit 0 when an install would work, 1 when nothing is installed or an install is broken.
    """
    from pi_compact.extension.install import location_status, picompact_command
    from pi_compact.pi.config import load_config
    from pi_compact.pi.extensions import project_trust
    from pi_compact.version import __version__

    out = env_of(ctx)
    trusted, trust_text = project_trust()
    statuses = [location_status("global"), location_status("project", trust=trust_text)]
    config = load_config(os.getcwd(), trusted if trusted is not None else False)
    working = [s for s in statuses if s.installed and s.command_ok and s.entry_state != "missing"]
    warnings = list(config.warnings)
    if all(s.installed for s in statuses):
        load = (
            "Pi loads both here; the project's copy runs and the global one stands down"
            if trusted
            else "in a project Pi trusts, both load (the project's copy runs, the global one stands down)"
        )
        warnings.insert(
            0,
            f"the extension is installed twice, globally and in this project: {load}. Keep one: "
            "`picompact pi uninstall --project` or `picompact pi uninstall`",
        )
    if json_output:
        out.emit(
            {
                "version": __version__,
                "command": picompact_command(),
                "installs": [s.to_json() for s in statuses],
                "project_trusted": trusted,
                "project_trust": trust_text,
                "settings": config.to_json(),
                "warnings": warnings,
            }
        )
    else:
        out.text(f"picompact {__version__} ({_shown(picompact_command())})")
        for s in statuses:
            out.text(_status_text(s, __version__))
        out.text(f"project {out.shown(os.getcwd())}: {trust_text}")
        out.text(f"settings: {_config_text(config.to_json())}")
        for warning in warnings:
            out.warn(warning)
    return ExitCode.OK if working else ExitCode.NO


def _status_text(s: InstallStatus, version: str) -> str:
    head = f"{s.scope}: {s.directory}"
    if s.error:
        return f"{head}\n  broken: {s.error}"
    m = s.manifest
    if not s.installed or m is None:
        return f"{head}\n  not installed"
    lines = [head]
    entry = {
        "current": "the extension of this picompact",
        "outdated": "an older extension (run `picompact pi install` again to update it)",
        "changed": "changed since it was installed (`picompact pi install --force` restores it)",
        "missing": "index.ts is missing (run `picompact pi install` again)",
    }[s.entry_state]
    lines.append(f"  extension: {entry}")
    if s.command_ok:
        match = "same version" if s.command_version == version else f"version {s.command_version}, this is {version}"
        lines.append(f"  calls: {_shown(m.command)} ({match})")
    else:
        lines.append(
            f"  calls: {_shown(m.command)}: not a picompact whose version can be read (status never runs it); "
            "reinstall from a working picompact"
        )
    lines.append(f"  mode: {m.mode} (unless settings say otherwise)")
    lines.append(f"  loads: {s.loads}")
    return "\n".join(lines)


def _config_text(config: Mapping[str, Any]) -> str:
    cap = config["cap"]
    cap_text = "none (--no-cap)" if cap is False else ("default (keepRecentTokens / 2)" if cap is None else str(cap))
    return (
        f"enabled={str(config['enabled']).lower()}, mode={printable(str(config['mode'] or 'as installed'))}, "
        f"cap={cap_text}, lookupModel={printable(str(config['lookupModel'] or 'default'))}"
    )


# ---------------------------------------------------------------------------------------------------------------
# What the extension runs


@pi_app.command("config")
def config_command(
    ctx: typer.Context,
    cwd: Path | None = typer.Option(None, "--cwd", metavar="DIR", help="The session's working directory."),
    trusted: bool | None = typer.Option(
        None, "--trusted/--untrusted", help="Whether Pi trusts the project (default: Pi's stored decision)."
    ),
    session_model: str | None = typer.Option(
        None, "--session-model", metavar="PROVIDER/ID", help="The session's model (for context_lookup)."
    ),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """The effective "picompact" settings for a directory, and whether context_lookup has a model.

    JSON: {"schema_version": 1, "enabled", "mode" (null: as installed), "cap" (null: default; false: no cap),
    "lookupModel", "crossSession", "prune", "sources" ({key: global|project}), "warnings", "projectTrusted",
    "capArgs" (the same cap as compact flags), "lookupAvailable", "tools" (the tools the extension registers:
    [{name, label, description, parameters, kind: search|lookup}])}.
    """
    from pi_compact.extension.hook import effective_config

    out = env_of(ctx)
    data = effective_config(str(cwd or os.getcwd()), trusted, session_model)
    if json_output:
        out.emit(data)
        return ExitCode.OK
    out.text(_config_text(data))
    out.text(f"context_lookup: {'available' if data['lookupAvailable'] else 'no model with an API key'}")
    for warning in data["warnings"]:
        out.warn(warning)
    return ExitCode.OK


@pi_app.command("checkpoint")
def checkpoint_command(
    ctx: typer.Context,
    session: Path = typer.Argument(..., metavar="SESSION", help="The Pi session file.", show_default=False),
    leaf: str = typer.Option(..., "--leaf", help="The branch's leaf: the last entry Pi has."),
    context_window: int = typer.Option(..., "--context-window", help="The model's context window in tokens."),
    reserve_tokens: int = typer.Option(..., "--reserve-tokens", help="Pi's compaction.reserveTokens."),
    keep_recent_tokens: int = typer.Option(..., "--keep-recent-tokens", help="Pi's compaction.keepRecentTokens."),
    mode: str = typer.Option("verbatim", "--mode", metavar="verbatim|summary", help="No model, or a summary."),
    cap: int | None = typer.Option(None, "--cap", metavar="N", help="verbatim: checkpoint budget in tokens."),
    no_cap: bool = typer.Option(False, "--no-cap", help="verbatim: no budget."),
    model: str | None = typer.Option(None, "--model", metavar="PROVIDER/ID", help="summary: the model to ask."),
    base_url: str | None = typer.Option(None, "--base-url", metavar="URL", help="summary: the model's server."),
    instructions: str | None = typer.Option(None, "--instructions", metavar="TEXT", help="summary: the focus."),
    timeout: float | None = typer.Option(None, "--timeout", metavar="S", help="summary: seconds per answer."),
    json_output: bool = typer.Option(True, "--json", hidden=True),
) -> ExitCode:
    """The checkpoint for Pi's session_before_compact, as JSON; nothing is written (Pi appends it).

    The same code path as `picompact compact SESSION --dry-run --leaf … --context-window … --reserve-tokens …
    --keep-recent-tokens …` (and --cap/--no-cap): the same summary, cut and details, byte for byte.
    JSON: {"schema_version": 1, "mode", "summary", "firstKeptEntryId", "tokensBefore", "details", "usage",
    "reminder" (verbatim: the re-orientation message), "reminderCustomType", "leafId", "settings" ({enabled,
    reserveTokens, keepRecentTokens}), "contextWindow", "stats" (as compact --json), "trimmed", "warnings"}.
    """
    from functools import partial

    from pi_compact.extension.hook import build_checkpoint
    from pi_compact.llm.choice import model_available
    from pi_compact.ops.check import CheckOptions
    from pi_compact.ops.checkpoint_request import CheckpointRequest

    out = env_of(ctx)
    for name, value in (
        ("--context-window", context_window),
        ("--reserve-tokens", reserve_tokens),
        ("--keep-recent-tokens", keep_recent_tokens),
    ):
        check_nonneg(name, value)
    request = CheckpointRequest(
        mode=mode,
        cap=cap,
        no_cap=no_cap,
        lookup_available=partial(model_available, env=out.environ),
        model=model,
        base_url=base_url,
        instructions=instructions,
        timeout=timeout,
    )
    settings = CheckOptions(
        context_window=context_window,
        model=model,
        reserve_tokens=reserve_tokens,
        keep_recent_tokens=keep_recent_tokens,
        leaf_id=leaf,
    )
    data = build_checkpoint(session, settings, request)
    out.emit(data)
    return ExitCode.OK


@pi_app.command("tool")
def tool_command(
    ctx: typer.Context,
    name: str = typer.Argument(
        ...,
        metavar="NAME",
        help="context_list_entries, context_grep, context_show_entry or context_search_sessions.",
        show_default=False,
    ),
    session: Path = typer.Argument(..., metavar="SESSION", help="The Pi session file.", show_default=False),
    arguments: str = typer.Option("{}", "--args", metavar="JSON", help="The tool call's arguments (a JSON object)."),
    leaf: str | None = typer.Option(None, "--leaf", help="Search the branch ending here (default: the last entry)."),
    trusted: bool | None = typer.Option(
        None,
        "--trusted/--untrusted",
        help="Whether Pi trusts the session's project (default: Pi's stored decision; undecided is not trusted).",
    ),
    json_output: bool = typer.Option(True, "--json", hidden=True),
) -> ExitCode:
    """Run one recovery tool call and print {"text": …}: what the agent reads.

    The tools are `picompact list/grep/show` with the arguments, page sizes and result limits the lookup model
    uses. Bad arguments exit 2 with the reason, which the extension returns to the agent as the tool's error.
    """
    from pi_compact.extension.hook import run_tool

    out = env_of(ctx)
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        raise UsageError("--args is not JSON") from None
    if not isinstance(args, dict):
        raise UsageError("--args must be a JSON object")
    out.emit({"text": run_tool(session, leaf, name, args, trusted)})
    return ExitCode.OK


@pi_app.command("prune-drafts")
def prune_drafts_command(
    ctx: typer.Context,
    session: Path = typer.Argument(..., metavar="SESSION", help="The Pi session file.", show_default=False),
    leaf: str = typer.Option(..., "--leaf", help="The branch's leaf: the last entry Pi has."),
    boundary: str = typer.Option(
        ..., "--boundary", metavar="turn_end|agent_before_settle", help="The Pi event the drafts are for."
    ),
    context_window: int = typer.Option(..., "--context-window", help="The model's context window in tokens."),
    reserve_tokens: int | None = typer.Option(
        None, "--reserve-tokens", help="Pi's compaction.reserveTokens (default: from Pi's settings)."
    ),
    keep_recent_tokens: int | None = typer.Option(
        None, "--keep-recent-tokens", help="Pi's compaction.keepRecentTokens (default: from Pi's settings)."
    ),
    cache_ttl: float | None = typer.Option(
        None, "--cache-ttl", metavar="S", help="The model's prompt-cache lifetime in seconds (promptCache)."
    ),
    cache_warming: str | None = typer.Option(
        None,
        "--cache-warming",
        metavar="off|streaming|idle",
        help="Pi's cacheWarming setting (default: read from Pi's global settings).",
    ),
    warming: str | None = typer.Option(
        None, "--warming", metavar="warm|stop", help="Pi's last cache_warming_decision since the last request."
    ),
    price_input: float = typer.Option(0.0, "--price-input", metavar="USD", help="$ per million input tokens."),
    price_output: float = typer.Option(0.0, "--price-output", metavar="USD", help="$ per million output tokens."),
    price_cache_read: float = typer.Option(0.0, "--price-cache-read", metavar="USD", help="$ per M cached reads."),
    price_cache_write: float = typer.Option(0.0, "--price-cache-write", metavar="USD", help="$ per M cache writes."),
    min_batch_tokens: int | None = typer.Option(
        None, "--min-batch-tokens", metavar="N", help="The fewest tokens a batch frees (default: max(2000, 5%).)"
    ),
    now_ms: int | None = typer.Option(None, "--now-ms", metavar="MS", help="The time to decide at (default: now)."),
    json_output: bool = typer.Option(True, "--json", hidden=True),
) -> ExitCode:
    """The context_edit drafts for Pi's turn_end or agent_before_settle, as JSON; nothing is written (Pi appends
    them).

    The batch is `picompact prune SESSION --dry-run`'s for the same branch and settings; it is handed over only
    when it breaks the prompt cache no more often than the compactions it puts off would, reckoned on the
    session's own pauses (threshold, cold, warming-stopped or worth-it; refused: breaks, warm, small, ...;
    docs/extension.md). JSON: {"schema_version": 1, "prune", "reason", "detail", "boundary", "entries"
    ([{type: context_edit, targetId, replacement}], empty unless prune), "tokensBefore", "tokensAfter",
    "tokensFreed", "pruned", "threshold", "lastRequestMs", "promptTokens", "returnProbability", "settleShare",
    "decision" ({prune, reason, detail, warmProbability, missCost, savings, remainingTurns, coldAtMs})}.
    """
    import time

    from pi_compact.extension.hook import prune_drafts
    from pi_compact.ops.check import CheckOptions
    from pi_compact.ops.prune_policy import Prices

    out = env_of(ctx)
    if boundary not in ("turn_end", "agent_before_settle"):
        raise UsageError(f"--boundary must be turn_end or agent_before_settle (got {boundary!r})")
    if cache_warming not in (None, "off", "streaming", "idle"):
        raise UsageError(f"--cache-warming must be off, streaming or idle (got {cache_warming!r})")
    if warming not in (None, "warm", "stop"):
        raise UsageError(f"--warming must be warm or stop (got {warming!r})")
    for name, value in (
        ("--context-window", context_window),
        ("--reserve-tokens", reserve_tokens or 0),
        ("--keep-recent-tokens", keep_recent_tokens or 0),
        ("--min-batch-tokens", min_batch_tokens or 0),
    ):
        check_nonneg(name, value)
    prices = (price_input, price_output, price_cache_read, price_cache_write)
    if any(not (p >= 0 and p < float("inf")) for p in (*prices, cache_ttl or 0.0)):
        raise UsageError("prices and --cache-ttl must be finite numbers, not negative")
    settings = CheckOptions(
        context_window=context_window,
        reserve_tokens=reserve_tokens,
        keep_recent_tokens=keep_recent_tokens,
        leaf_id=leaf,
    )
    data = prune_drafts(
        session,
        settings,
        boundary=boundary,  # type: ignore[arg-type]
        now_ms=now_ms if now_ms is not None else int(time.time() * 1000),
        cache_ttl_ms=round(cache_ttl * 1000) if cache_ttl is not None else None,
        warming_mode=cache_warming,  # type: ignore[arg-type]
        warming=warming,  # type: ignore[arg-type]
        prices=Prices(*prices),
        min_batch_tokens=min_batch_tokens,
    )
    out.emit(data)
    return ExitCode.OK
