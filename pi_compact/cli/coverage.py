"""``picompact coverage``: what of the compacted history the model can still read after a compaction."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import report_diagnostics, resolve_session_path
from pi_compact.cli.options import JsonOpt, LeafOpt, SessionArg
from pi_compact.errors import ExitCode

LABELS = {
    "user_messages": "user messages",
    "rules": "rules",
    "values": "values in force",
    "decisions": "decisions",
    "progress": "commands run",
    "modified_files": "modified files",
    "failed_tool_results": "failed tool results",
}


def score_lines(data: Mapping[str, Any]) -> list[str]:
    out = []
    for name, label in LABELS.items():
        c = data["categories"][name]
        if not c["total"]:
            out.append(f"  {label:<20} -      (none in the compacted span)")
            continue
        parts = [f"{c['present']} of {c['total']} whole"]
        if c.get("shortened"):
            share = c.get("shortened_share")
            kept = f" keeping {share * 100:.0f}% of their text" if share is not None else ""
            parts.append(f"{c['shortened']} shortened{kept}")
        if c.get("trace"):
            parts.append(f"{c['trace']} only a trace")
        searched = c["missing"] and c["recovered"] is not None
        recovered = f"; grep recovers {c['recovered']} of {c['missing']}" if searched else ""
        parts.append(f"{c['missing']} gone{recovered}")
        out.append(f"  {label:<20} {c['score'] * 100:>4.0f}%  ({', '.join(parts)})")
    return out


def missing_lines(data: Mapping[str, Any], limit: int | None) -> list[str]:
    items = data["missing"]
    shown = items if limit is None else items[:limit]
    out = []
    for item in shown:
        grep = "grep finds it" if item["recovered"] else "grep does NOT find it"
        text = item["text"].replace("\n", " ")
        out.append(f"  {LABELS[item['category']]:<20} {item['entry_id']} (line {item['line']}): {text}  [{grep}]")
    if limit is not None and len(items) > limit:
        out.append(f"  … {len(items) - limit} more (--all-missing, or --json)")
    return out


@app.command()
def coverage(
    ctx: typer.Context,
    session: Path | None = SessionArg,
    compaction: str | None = typer.Option(
        None, "--compaction", metavar="ID", help="The compaction entry to measure (default: the latest on the branch)."
    ),
    leaf: str | None = LeafOpt,
    all_missing: bool = typer.Option(False, "--all-missing", help="List every missing item (default: the first 20)."),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """What survived a compaction: a deterministic recall score per category, and the missing items.

    Looks for each compacted user message (whole, shortened, only a trace, gone), each modified file path, each
    failed tool result's distinctive error line and each decision-like assistant sentence in the text the model
    reads after the compaction; the percentage counts what a reader can use (whole items, and shortened ones by the
    share of their text kept); every missing item is searched with grep on the raw branch. Works for any
    compaction (verbatim checkpoint, LLM summary by picompact or Pi, an extension's), so the modes can be compared
    on your own sessions.
    Exit 0, or 2 on bad input (no compaction on the branch, an id that is not a compaction).
    """
    from pi_compact.ops.check import held_load
    from pi_compact.ops.coverage import measure_coverage as measure
    from pi_compact.session.tree import get_branch

    env = env_of(ctx)
    if json_output:
        env.json_mode = "document"
    path = resolve_session_path(session)
    loaded = held_load(path)  # the span is read back from the file; grep reads the branch as grep does
    result = measure(loaded, compaction, leaf_id=leaf)
    report_diagnostics(env, [*loaded.diagnostics, *get_branch(loaded, leaf).diagnostics], path)
    data = result.to_json()
    if json_output:
        env.emit(data)
        return ExitCode.OK
    env.text(f"compaction  {data['compaction_id']} (line {data['compaction_line']}): {data['kind']}")
    env.text(
        f"span        {data['span_entries']} entries compacted (kept from {data['first_kept_entry_id']}); the model "
        f"reads {data['context_chars']:,} characters after it"
    )
    env.text("coverage")
    for line in score_lines(data):
        env.text(line)
    if data["missing"]:
        env.text("missing")
        for line in missing_lines(data, None if all_missing else 20):
            env.text(line)
    return ExitCode.OK
