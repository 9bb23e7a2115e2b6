"""``picompact audit``: recorded usage beside Pi's estimate, reply by reply; costs; drift; ``--plot``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import count_text as _fmt
from pi_compact.cli.common import report_diagnostics, resolve_session_path
from pi_compact.cli.env import Environment
from pi_compact.cli.options import JsonOpt, SessionArg, SettingsFlags, with_settings
from pi_compact.errors import ExitCode, UsageError
from pi_compact.js import js_string

PLOT_HEIGHT = 14


def _n(value: int | None) -> str:
    """A count as ``check`` shows it: "-" for none, one past 2^53 as JavaScript shows it (Infinity for 1e400)."""
    return _fmt(value)


def _signed(value: int) -> str:
    return _fmt(value) if value < 0 or abs(value) > 2**53 else "+" + _fmt(value)


def _money(value: float) -> str:
    """A cost in dollars to four places; one no double holds as JavaScript shows it ($Infinity, $NaN)."""
    return f"${value:.4f}" if math.isfinite(value) else "$" + js_string(value)


def _ratio(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if abs(value) < 1e6 else js_string(float(f"{value:.3g}"))  # 1.49e+300, Infinity


def reply_table(data: Mapping[str, Any]) -> list[str]:
    """The replies as aligned text rows, with the markers between them."""
    head = (
        "#",
        "entry",
        "input",
        "cache r",
        "cache w",
        "output",
        "total",
        "estimate",
        "cl100k",
        "ratio",
        "Pi trusts it?",
    )
    rows: list[tuple[str, ...] | str] = []
    markers = list(data["markers"])
    for reply in data["replies"]:
        while markers and markers[0]["after_reply"] < reply["number"]:
            rows.append(marker_text(markers.pop(0)))
        usage = reply["usage"] or {}
        trust = "yes (check starts here)" if reply["used_by_check"] else ("yes" if reply["trusted"] else "no: ")
        if not reply["trusted"]:
            trust += reply["reason"]
        rows.append(
            (
                str(reply["number"]),
                reply["entry_id"],
                _n(usage.get("input")),
                _n(usage.get("cache_read")),
                _n(usage.get("cache_write")),
                _n(usage.get("output")),
                _n(usage.get("total")),
                _n(reply["estimate"]),
                _n(reply["cl100k"]),
                _ratio(reply["ratio"]),
                trust,
            )
        )
    rows.extend(marker_text(m) for m in markers)
    table = [r for r in rows if isinstance(r, tuple)]
    widths = [max(len(head[i]), *(len(r[i]) for r in table)) if table else len(head[i]) for i in range(len(head))]
    right = {0, 2, 3, 4, 5, 6, 7, 8, 9}

    def fmt(cells: tuple[str, ...]) -> str:
        parts = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(cells)]
        return "  ".join(parts).rstrip()

    return [fmt(head)] + [fmt(r) if isinstance(r, tuple) else r for r in rows]


def marker_text(marker: dict[str, Any]) -> str:
    if marker["kind"] == "compaction":
        before = f"tokensBefore {_n(marker['tokens_before'])}; " if marker["tokens_before"] is not None else ""
        return (
            f"-- compaction {marker['entry_id']} (line {marker['line']}): {before}estimate "
            f"{_n(marker['estimate_before'])} -> {_n(marker['estimate_after'])} (freed {_n(marker['freed'])})"
        )
    what = "omits" if marker["omitted"] else "prunes" if marker.get("pruned") else "replaces"
    return (
        f"-- context edit {marker['entry_id']} (line {marker['line']}) {what} {marker['target_id']}: estimate "
        f"{_n(marker['estimate_before'])} -> {_n(marker['estimate_after'])}"
    )


def drift_lines(data: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for d in data["drift"]:
        out.append(
            f"  replies {d['from_reply']} -> {d['to_reply']} ({d['from_entry_id']} -> {d['to_entry_id']}): recorded "
            f"{_signed(d['recorded_growth'])}, estimated {_signed(d['estimated_growth'])} (drift {_signed(d['drift'])})"
        )
        for e in sorted(d["entries"], key=lambda e: -e["estimate"])[:4]:
            images = f", {e['images']} image{'s' if e['images'] != 1 else ''}" if e["images"] else ""
            out.append(
                f"      {e['entry_id']} {e['kind']} (line {e['line']}): ~{_n(e['estimate'])} tokens estimated, "
                f"{e['chars']:,} chars{images}"
            )
    return out


def summary_lines(data: Mapping[str, Any], session_line: str) -> list[str]:
    leaf = data["leaf"]
    ratio = data["ratio"]
    verdict = "YES" if leaf["should_compact"] else "no"
    lines = [
        f"session         {session_line}",
        f"leaf            {leaf['entry_id']}: context {_n(leaf['context_tokens'])} tokens "
        f"[{leaf['context_tokens_source']}]",
        f"threshold       {_n(leaf['threshold'])} (window {_n(leaf['context_window'])}); compact? {verdict}",
        f"replies         {len(data['replies'])} ({ratio['replies']} with recorded usage); recorded / estimate: "
        f"overall {_ratio(ratio['overall'])}, median {_ratio(ratio['median'])} "
        f"(min {_ratio(ratio['min'])}, max {_ratio(ratio['max'])})",
    ]
    markers = data["markers"]
    compactions = sum(1 for m in markers if m["kind"] == "compaction")
    edits = len(markers) - compactions
    pruned = sum(1 for m in markers if m.get("pruned"))
    lines.append(
        f"markers         {compactions} compaction{'' if compactions == 1 else 's'}, "
        f"{edits} context edit{'' if edits == 1 else 's'}"
        + (f" ({pruned} of them prune stubs: the outputs stay in the file)" if pruned else "")
    )
    return lines


def cost_lines(data: Mapping[str, Any]) -> list[str]:
    out = []
    for c in data["costs"]:
        out.append(
            f"  {c['model']}: {c['records']} record{'s' if c['records'] != 1 else ''}, input {_n(c['input'])}, "
            f"output {_n(c['output'])}, cache read {_n(c['cache_read'])}, cache write {_n(c['cache_write'])}: "
            f"{_money(c['cost'])}"
        )
    other = data["cost_all_branches"] - data["cost_total"]
    total = f"  total on this branch {_money(data['cost_total'])}"
    if other > 0.00005:
        total += f" (all branches {_money(data['cost_all_branches'])})"
    out.append(total)
    return out


# ---------------------------------------------------------------------------------------------------------------
# --plot


_PLOT_TOP = 10**300


def plot(env: Environment, data: Mapping[str, Any], width: int | None = None) -> None:
    """Context size over the replies, with the threshold line and each compaction marked (rich)."""
    from rich.text import Text

    replies = data["replies"]
    if not replies:
        env.text("(no assistant replies to plot)")
        return
    threshold = data["leaf"]["threshold"]
    # a plot of what no float holds (a usage of 10^400 tokens, or Infinity) tops out at 10^300
    values = [min((r["usage"] or {}).get("total") or r["estimate"], _PLOT_TOP) for r in replies]
    total_width = width or (env.console.width if env.stdout_isatty else 100)
    label_width = max(len(_n(max([*values, threshold]))), 6) + 1
    columns = max(10, min(len(values), total_width - label_width - 2))
    per = len(values) / columns if len(values) > columns else 1.0
    columns = min(columns, len(values))
    buckets: list[int] = []
    bucket_of_reply: list[int] = []
    for c in range(columns):
        start, end = int(c * per), max(int((c + 1) * per), int(c * per) + 1)
        buckets.append(max(values[start:end]))
    for i in range(len(values)):
        bucket_of_reply.append(min(int(i / per), columns - 1))
    top = max(max(buckets), threshold) * 1.05 or 1
    step = top / PLOT_HEIGHT
    threshold_row = min(PLOT_HEIGHT - 1, int(threshold / step)) if threshold > 0 else -1
    compaction_cols: dict[int, int] = {}
    for m in data["markers"]:
        if m["kind"] == "compaction":
            col = (
                bucket_of_reply[min(m["after_reply"], len(values) - 1)]
                if m["after_reply"] < len(values)
                else columns - 1
            )
            compaction_cols[col] = compaction_cols.get(col, 0) + 1
    text = Text()
    for row in range(PLOT_HEIGHT - 1, -1, -1):
        low = row * step
        label = ""
        if row == PLOT_HEIGHT - 1:
            label = _n(int(top))
        elif row == threshold_row:
            label = f"{threshold:,}"
        elif row == 0:
            label = "0"
        text.append(label.rjust(label_width) + " ┤", style="dim")
        for col, value in enumerate(buckets):
            if value > low + step / 2 or (row == 0 and value > 0):
                over = value > threshold
                text.append("█", style="red" if over else "green")
            elif row == threshold_row:
                text.append("─", style="bold red")
            elif col in compaction_cols:
                text.append("┊", style="yellow")
            else:
                text.append(" ")
        text.append("\n")
    text.append(" " * label_width + " └" + "─" * columns + "\n", style="dim")
    axis = [" "] * columns
    for col in compaction_cols:
        axis[col] = "▲"
    text.append(" " * (label_width + 2) + "".join(axis) + "\n", style="yellow")
    first, last = "reply 1", f"reply {len(values)}"
    text.append(" " * (label_width + 2) + first + last.rjust(max(columns - len(first), len(last) + 1)) + "\n")
    legend = f"█ context tokens (recorded total, else Pi's estimate)   ─ threshold {threshold:,}"
    if compaction_cols:
        freed = ", ".join(
            f"{env.shown_text(m['entry_id'])} freed ~{_n(m['freed'])}"
            for m in data["markers"]
            if m["kind"] == "compaction"
        )
        legend += f"   ▲ compaction ({freed})"
    text.append(legend + "\n", style="dim")
    env.console.print(text, end="", soft_wrap=True)


@app.command()
@with_settings
def audit(
    ctx: typer.Context,
    session: Path | None = SessionArg,
    settings: SettingsFlags = None,  # type: ignore[assignment]  # with_settings: the settings flags
    plot_: bool = typer.Option(
        False, "--plot", help="Draw the context size over the replies, threshold and compactions."
    ),
    top: int = typer.Option(5, "--top", metavar="N", help="How many intervals of largest drift to show."),
    no_cl100k: bool = typer.Option(False, "--no-cl100k", help="Skip the cl100k count (faster on huge sessions)."),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """A token and cost audit along the branch: recorded usage beside Pi's estimate and a cl100k count.

    For each assistant reply: input, cache read, cache write, output and total as the provider recorded them, Pi's
    chars/4 estimate of the same context, a cl100k count, their ratio, and whether Pi would trust that usage
    (stale-usage rule). Compactions and context edits appear between the replies; costs are summed per model; the
    intervals where the estimate drifts most from the recorded usage name their entries. The leaf's figures are
    exactly check's. Exit 0, or 2 on bad input.
    """
    from pi_compact.ops.audit import audit_session as run_audit
    from pi_compact.ops.check import held_load

    env = env_of(ctx)
    if json_output:
        env.json_mode = "document"
        if plot_:
            raise UsageError("--json and --plot clash: the plot is for a terminal")
    if top < 0:
        raise UsageError(f"--top must not be negative (got {top})")
    path = resolve_session_path(session)
    result = run_audit(
        held_load(path),  # bodies dropped as they are read, read back one at a time as the audit goes (``ops.audit``)
        settings.check_options(),
        cl100k=not no_cl100k,
        top=top,
    )
    report_diagnostics(env, result.check.diagnostics, path)
    for warning in result.warnings:
        env.warn(warning)
    data = result.to_json()
    if json_output:
        env.emit(data)
        return ExitCode.OK
    session_line = f"{env.shown(path)} ({len(result.session.entries)} entries, branch {len(result.branch)})"

    def lines(of: list[str]) -> None:
        for line in of:  # each is one line: a line break in it is a field's (an id, a model), shown on a terminal
            env.text(env.shown_text(line) if env.stdout_isatty and ("\n" in line or "\r" in line) else line)

    lines(summary_lines(data, session_line))
    if plot_:
        env.text()
        plot(env, data)
        return ExitCode.OK
    env.text()
    lines(reply_table(data))
    env.text()
    env.text("cost (usage.cost, per model, this branch)")
    lines(cost_lines(data))
    if data["drift"]:
        env.text()
        env.text("drift (where recorded growth and Pi's estimated growth differ most between two replies)")
        lines(drift_lines(data))
    return ExitCode.OK
