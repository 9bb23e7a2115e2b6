"""The verbatim checkpoint: a compaction summary built without a model, from Pi's own cut (V1–V26).

``build_verbatim_checkpoint(plan, options)`` is pure: same plan and options, same bytes. It never moves Pi's
boundary; it renders what Pi would summarise (the history and the split-turn prefix) as one new span, re-renders
the spans saved by earlier picompact checkpoints unchanged, fits all of them into the cap, and wraps them in the
envelope.

``details`` layout (JSON)::

    {
      "readFiles": [...], "modifiedFiles": [...],        # cumulative, Pi's raw-path shape
      "picompact": {
        "format": "verbatim", "version": 1,
        "spans": [Span.to_json(), ...],                  # every span so far, oldest first, never trimmed
        "startupReads": <state of the startup-read selection, or null>
      }
    }

Saved spans are stored whole, and the cap trims only the rendered summary. So every round trims afresh from the
originals (a shortened message is never shortened again, and a larger cap later restores it), at the price of
``details`` growing with the compacted prose and signatures (never with tool outputs or thinking).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_compact.checkpoint.context_files import ContextFile
from pi_compact.checkpoint.details import DETAILS_KEY, FORMAT, FORMAT_VERSION, cumulative_files, is_verbatim_details
from pi_compact.checkpoint.evidence import (
    NO_READ_OUTPUT,
    FileAnnotation,
    FileListAnnotations,
    annotate_file_lists,
    evidence_json,
)
from pi_compact.checkpoint.readtool import one_line
from pi_compact.checkpoint.startup_reads import select_startup_reads
from pi_compact.checkpoint.verbatim.cap import block_budget, fit_block, fit_spans
from pi_compact.checkpoint.verbatim.envelope import (
    Recap,
    Recovery,
    evidence_boundary,
    file_lists_section,
    introduction,
    reminder_text,
    retained_reads_section,
)
from pi_compact.checkpoint.verbatim.ledger import open_errors
from pi_compact.checkpoint.verbatim.signatures import is_windows_path, relative_path
from pi_compact.checkpoint.verbatim.spans import (
    REORIENTATION_CUSTOM_TYPE,
    Outcomes,
    Span,
    build_span,
    call_outcomes,
    message_items,
    summary_span,
    user_text,
)
from pi_compact.checkpoint.verbatim.standing import (
    Instruction,
    render_standing,
    standing_instructions,
    verbatim_user_entries,
)
from pi_compact.errors import NothingToCompactError, UsageError
from pi_compact.js import js_len
from pi_compact.pi.plan import CompactionPlan
from pi_compact.session.entries import Entry, JsonDict

__all__ = [
    "DETAILS_KEY",
    "FORMAT",
    "FORMAT_VERSION",
    "REORIENTATION_CUSTOM_TYPE",
    "Checkpoint",
    "VerbatimOptions",
    "build_verbatim_checkpoint",
    "is_verbatim_details",
    "saved_spans",
]


STANDING_ROUNDS = 3  # fits of the spans, at most, as the standing block leaves out what they show whole


@dataclass(frozen=True)
class VerbatimOptions:
    """How to build the checkpoint. ``cap_tokens`` None means no cap (``--no-cap``)."""

    session_path: str  # shown, shell-quoted, in the recovery commands
    cap_tokens: int | None
    # Instruction files for the startup-read selection: ContextFile objects (``context_files_for`` finds the ones Pi
    # would load) or paths (a missing one is simply absent). None given: the project instructions recorded in the
    # session's system prompt.
    context_files: tuple[ContextFile | Path | str, ...] = ()
    lookup_available: bool = False  # mention `picompact lookup` only when a model is configured
    recovery_tools: bool = False  # advertise the Pi extension's context_* tools instead of shell commands


@dataclass(frozen=True)
class Checkpoint:
    """The compaction entry's ``summary`` and ``details``, and the re-orientation message to place after the tail."""

    summary: str
    details: dict[str, Any]
    reminder: str
    read_files: list[str]
    modified_files: list[str]
    tokens: int  # Pi's estimate of the summary: ceil(chars / 4)
    trimmed: bool
    warnings: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)  # the annotated file lists, as --json reports them


def saved_spans(compaction: Entry) -> list[Span]:
    """The spans a picompact checkpoint saved; ValueError when its details are not readable."""
    details = compaction.raw.get("details")
    if not isinstance(details, dict) or not is_verbatim_details(details):
        raise ValueError("not a picompact verbatim checkpoint")
    mine = details[DETAILS_KEY]
    version = mine.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"checkpoint format version {version!r} is newer than this picompact understands")
    spans = mine.get("spans")
    if not isinstance(spans, list):
        raise ValueError("the checkpoint details have no span list")
    return [Span.from_json(span) for span in spans]


def _previous_spans(plan: CompactionPlan, warnings: list[str]) -> tuple[list[Span], JsonDict | None]:
    """Spans carried over from the previous compaction, and its picompact details (None if foreign)."""
    previous = plan.previous_compaction
    if previous is None:
        return [], None
    if is_verbatim_details(previous.raw.get("details")):
        try:
            return saved_spans(previous), previous.raw["details"][DETAILS_KEY]
        except ValueError as exc:
            warnings.append(
                f"the previous checkpoint {previous.id} has unreadable details ({exc}); its summary text is kept as "
                "one span instead"
            )
    return [summary_span(1, previous)], None


def _file_lines(
    annotations: FileListAnnotations, cwd: str
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """(shown path, label) per list: one line per shown path, a path shown as modified not repeated as read. A
    modified path's ``no read-tool output in tail`` is no label in the summary: the heading says once what no label
    means."""

    def shown(item: FileAnnotation) -> str:
        # The evidence module resolves POSIX paths; a Windows session keeps picompact's own relative form.
        return one_line(relative_path(item.path, cwd)) if is_windows_path(cwd) else item.display_path

    def unique(items: tuple[FileAnnotation, ...], skip: set[str]) -> list[tuple[str, str | None]]:
        out: dict[str, str | None] = {}
        for item in items:
            path = shown(item)
            if path not in skip:
                out[path] = out.get(path) or (None if item.label == NO_READ_OUTPUT else item.label)
        return sorted(out.items())

    modified = unique(annotations.modified, set())
    read = unique(annotations.read, {path for path, _ in modified})
    return read, modified


def _recap(spans: list[Span], plan: CompactionPlan, has_reads: bool) -> Recap:
    users = calls = errors = 0
    for span in spans:
        for item in span.items:
            if item.kind == "user":
                users += 1
            elif item.kind == "call":
                calls += 1
                errors += item.text.split("\n", 1)[0].endswith("→ error")
    last_id: str | None = None
    last_text: str | None = None
    for index in range(len(plan.entries) - 1, -1, -1):
        pe = plan.entries[index]
        message = next((m for m in reversed(pe.messages) if m.get("role") == "user"), None)
        if message is not None:
            if index < plan.cut.first_kept_index:  # quoted only when it was compacted: else it is in view
                last_id, last_text = pe.entry.id, user_text(message.get("content"))
            break
    return Recap(len(spans), users, calls, errors, last_id, last_text, has_reads)


def _open_errors(spans: list[Span], plan: CompactionPlan, outcomes: Outcomes, cwd: str) -> list[str]:
    """The failed calls of the compacted history that no later call (there or in the kept tail) redid with success,
    with the error line their output gave."""
    errors = [
        (si, fact.entry, fact.call, fact.text)
        for si, span in enumerate(spans)
        for fact in span.facts
        if fact.kind == "error" and fact.call
    ]
    if not errors:
        return []
    tail = [
        item
        for pe in plan.entries[plan.cut.first_kept_index :]
        for message in pe.messages
        for item in message_items(pe.entry.id, message, outcomes, cwd)
    ]
    return open_errors([*(span.items for span in spans), tail], errors)


def _user_messages(spans: list[Span]) -> list[tuple[str, str]]:
    """(entry id, text) of every compacted user message, oldest first (from the saved spans, whole)."""
    return [(item.entry, item.text) for span in spans for item in span.items if item.kind == "user"]


def _tail_user_messages(plan: CompactionPlan) -> list[tuple[str, str]]:
    """(entry id, text) of the user messages Pi keeps after the cut: they can supersede a standing value."""
    out: list[tuple[str, str]] = []
    for pe in plan.entries[plan.cut.first_kept_index :]:
        for message in pe.messages:
            if message.get("role") == "user":
                out.append((pe.entry.id, user_text(message.get("content"))))
    return out


def _standing_block(items: Sequence[Instruction], max_chars: int | None, verbatim: Collection[str] = ()) -> str:
    """The standing-instructions block (merged lines, none of the ``verbatim`` messages), whole (``max_chars``
    None) or within about ``max_chars`` characters, its lines then chosen by value (cap.fit_block)."""
    text = render_standing(items, verbatim=verbatim)
    return text if max_chars is None else fit_block(text, max_chars)


def _assemble(intro: str, spans_text: str, appendix: str, boundary: str) -> str:
    """The summary; the spans always sit between the same separators, so its length is overhead + spans."""
    tail = f"{appendix}\n\n{boundary}" if appendix else boundary
    return f"{intro}\n\n{spans_text}\n\n{tail}"


def build_verbatim_checkpoint(plan: CompactionPlan, options: VerbatimOptions) -> Checkpoint:
    """The verbatim checkpoint for ``plan``: deterministic, calls no model, writes nothing (the only files it may
    read are instruction files given as paths in ``options.context_files``)."""
    if not plan.can_compact:
        raise NothingToCompactError(f"nothing to compact: {plan.nothing_reason}")
    if options.cap_tokens is not None and options.cap_tokens < 0:
        raise UsageError(f"the cap must not be negative (got {options.cap_tokens} tokens)")
    warnings: list[str] = []
    branch = plan.projection.branch
    cwd = branch.session.cwd

    old_spans, previous_mine = _previous_spans(plan, warnings)
    compacted = plan.entries[plan.boundary_start : plan.cut.first_kept_index]
    # Calls from the compacted part on, with their results (a result pairs only with a call before it).
    first = plan.entries[plan.boundary_start].entry.id if plan.boundary_start < len(plan.entries) else None
    start = max(branch.position(first), 0) if first is not None else 0
    outcomes = call_outcomes(branch.entries[start:])
    number = max((span.number for span in old_spans), default=0) + 1
    known_facts = {fact.key for span in old_spans for fact in span.facts}
    new_span = build_span(number, compacted, outcomes, cwd, plan.cut.is_split_turn, known_facts)
    spans = [*old_spans, new_span]
    opening = spans[0].source == "verbatim"  # else the session's opening is in an earlier summary
    messages = _user_messages(spans)
    instructions = standing_instructions(messages, _tail_user_messages(plan), opening=opening)

    read_files, modified_files = cumulative_files(plan)
    previous_state = previous_mine.get("startupReads") if previous_mine is not None else None
    retained, reads_state = select_startup_reads(plan, previous_state, options.context_files, cwd)
    annotations = annotate_file_lists(plan, read_files, modified_files, cwd, retained)
    read_lines, modified_lines = _file_lines(annotations, cwd)

    recovery = Recovery(options.session_path, options.lookup_available, options.recovery_tools)
    failures = _open_errors(spans, plan, outcomes, cwd)
    errors_text = "## Errors not resolved later\n" + "\n".join(failures) if failures else ""
    reads_text = retained_reads_section(retained)
    lists_text = file_lists_section(read_lines, modified_lines, recovery)
    appendix = "\n\n".join(part for part in (reads_text, lists_text) if part)
    boundary = evidence_boundary()

    # Under a cap the standing instructions and the unresolved errors share a bounded part of what the fixed parts
    # leave; past it they keep their most valuable lines (the errors first, up to a third of it).
    share: int | None = None
    if options.cap_tokens is not None:
        fixed = _assemble(introduction(recovery, cwd, bool(retained)), "", appendix, boundary)
        share = block_budget(options.cap_tokens * 4 - js_len(fixed), spans)
        errors_text = fit_block(errors_text, max(share // 3, share - len(render_standing(instructions))))

    def block(verbatim: Collection[str]) -> str:
        return _standing_block(instructions, None if share is None else share - len(errors_text), verbatim)

    def head(standing: str) -> str:
        intro = introduction(recovery, cwd, bool(retained))
        return "\n\n".join(part for part in (intro, standing, errors_text) if part)

    standing = block(())
    intro = head(standing)

    def budget_for(intro: str) -> int | None:
        if options.cap_tokens is None:
            return None
        return options.cap_tokens * 4 - js_len(_assemble(intro, "", appendix, boundary))

    if options.cap_tokens is not None and reads_text and js_len(reads_text) > options.cap_tokens * 4:
        warnings.append(
            f"the retained startup reads alone (~{math.ceil(js_len(reads_text) / 4)} tokens) exceed the cap of "
            f"{options.cap_tokens} tokens; they are kept in full"
        )
    # The block leaves out what the spans still show word for word; the room it frees goes to the spans, which
    # must then keep at least the same messages whole (checked: else the block stays as it was), so nothing left
    # out is lost. First the best case: every message the uncapped spans show whole stays whole under the cap.
    fitted = fit_spans(spans, None)
    whole = verbatim_user_entries(messages, fitted.text)
    if options.cap_tokens is not None:
        least = block(whole)
        trial = fit_spans(spans, budget_for(head(least)), least)
        if whole <= verbatim_user_entries(messages, trial.text):
            standing, intro, fitted = least, head(least), trial
        else:
            fitted = fit_spans(spans, budget_for(intro), standing)
    # Else from the whole block: the room may keep more messages whole, a few rounds while the block shrinks.
    for _ in range(STANDING_ROUNDS):
        shown = verbatim_user_entries(messages, fitted.text)
        shorter = block(shown) if shown else standing
        if shorter == standing:
            break
        refitted = fit_spans(spans, budget_for(head(shorter)), shorter) if any(fitted.trimmed) else fitted
        if refitted is not fitted and not shown <= verbatim_user_entries(messages, refitted.text):
            break
        standing, intro, fitted = shorter, head(shorter), refitted
    summary = _assemble(intro, fitted.text, appendix, boundary)
    tokens = math.ceil(js_len(summary) / 4)
    if options.cap_tokens and tokens > options.cap_tokens:  # a cap of 0 asks for the smallest: no warning
        warnings.append(
            f"the checkpoint is ~{tokens} tokens, over the cap of {options.cap_tokens}: the fixed parts "
            "(introduction, startup reads, file lists) and the minimum conversation part do not fit"
        )

    details: dict[str, Any] = {
        "readFiles": read_files,
        "modifiedFiles": modified_files,
        DETAILS_KEY: {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "spans": [span.to_json() for span in spans],
            "startupReads": reads_state,
        },
    }
    reminder = reminder_text(recovery, _recap(spans, plan, bool(retained)))
    return Checkpoint(
        summary=summary,
        details=details,
        reminder=reminder,
        read_files=read_files,
        modified_files=modified_files,
        tokens=tokens,
        trimmed=any(fitted.trimmed),
        warnings=warnings,
        evidence=evidence_json(annotations, retained),
    )
