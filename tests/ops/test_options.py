"""Option values are checked once, by the library's options dataclasses, naming their fields; the command line
names the flags in the same messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_compact.checkpoint.mode import get_mode
from pi_compact.checkpoint.summary import SummaryOptions
from pi_compact.cli.options import flag_for
from pi_compact.errors import OptionError
from pi_compact.lookup.agent import LookupOptions
from pi_compact.ops.check import CheckOptions
from pi_compact.ops.checkpoint_request import CheckpointRequest, ModeOptionError
from pi_compact.ops.compact import CompactOptions
from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


@pytest.mark.parametrize(
    ("make", "fields"),
    [
        (lambda: CheckOptions(context_window=0), ("context_window",)),
        (lambda: CheckOptions(keep_recent_tokens=-1), ("keep_recent_tokens",)),
        (lambda: CheckOptions(tokenizer="gpt2"), ("tokenizer",)),
        (lambda: CompactOptions(dry_run=True, output="x.jsonl"), ("dry_run", "output")),
        (lambda: get_mode("verbatim", cap_tokens=5, no_cap=True), ("cap_tokens", "no_cap")),
        (lambda: SummaryOptions(timeout=0), ("timeout",)),
        (lambda: LookupOptions(budget=0), ("budget",)),
        (lambda: CheckpointRequest(mode="telepathy"), ("mode",)),
        (lambda: CheckpointRequest(cap=-1), ("cap",)),
        (lambda: CheckpointRequest(cap=5, no_cap=True), ("cap", "no_cap")),
        (lambda: CheckpointRequest(mode="summary", cap=5, no_cap=True), ("cap", "no_cap")),
    ],
)
def test_the_library_names_the_fields(make, fields) -> None:
    with pytest.raises(OptionError) as info:
        make()
    assert info.value.fields == fields
    assert str(info.value).startswith(" and ".join(fields) + " ")


def test_fields_map_to_their_flags() -> None:
    assert flag_for("keep_recent_tokens") == "--keep-recent-tokens"
    assert flag_for("cap_tokens") == "--cap"
    assert flag_for("leaf_id") == "--leaf"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("check", "--context-window", "0"), "picompact: error: --context-window must be a positive integer, got 0"),
        (("compact", "--cap", "5", "--no-cap"), "picompact: error: --cap and --no-cap clash: give one of them"),
        (("compact", "--mode", "summary", "--timeout", "0"), "picompact: error: --timeout must be a positive"),
        (("compact", "--keep-recent-tokens", "-3"), "picompact: error: --keep-recent-tokens must not be negative"),
        (("lookup", "what failed?", "--budget", "0"), "picompact: error: --budget must be a whole number from 1"),
    ],
)
def test_the_command_line_names_the_flags(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    path = simple_session(turns=3, size=100).write(tmp_path / "s.jsonl")
    # lookup takes its question first, as grep takes its pattern; the other commands take the session first
    result = run(*args[:2], path, *args[2:]) if args[0] == "lookup" else run(args[0], path, *args[1:])
    assert result.code == 2
    assert result.stderr.startswith(message), result.stderr


@pytest.mark.parametrize(
    ("make", "fields", "library", "command_line"),
    [
        (
            lambda: CheckpointRequest(base_url="http://x", timeout=0),
            ("base_url", "timeout"),
            "base_url, timeout apply only to mode summary",
            "--base-url, --timeout apply only to --mode summary",
        ),
        (
            lambda: CheckpointRequest(model="openai/gpt-4.1-mini"),
            ("model",),
            "model applies only to mode summary",
            "--model applies only to --mode summary",
        ),
        (
            lambda: CheckpointRequest(mode="summary", cap=0, context_files=("AGENTS.md",)),
            ("cap", "context_files"),
            "cap, context_files apply only to mode verbatim, not mode summary",
            "--cap, --context-file apply only to --mode verbatim, not --mode summary",
        ),
    ],
    ids=["summary-options", "model", "verbatim-options"],
)
def test_one_modes_options_given_with_the_other_are_refused_once(make, fields, library, command_line) -> None:
    with pytest.raises(ModeOptionError) as info:
        make()
    assert info.value.fields == fields
    assert str(info.value) == library
    assert info.value.message_for(flag_for) == command_line


def test_the_request_builds_the_mode_it_names() -> None:
    from pi_compact.checkpoint.mode import RedactingMode
    from pi_compact.checkpoint.summary import SummaryMode
    from pi_compact.checkpoint.verbatim.mode import VerbatimMode

    verbatim = CheckpointRequest(cap=5, context_files=[Path("AGENTS.md")], lookup_available=True).checkpoint_mode()
    assert verbatim == VerbatimMode(cap_tokens=5, context_files=(Path("AGENTS.md"),), lookup_available=True)
    assert isinstance(CheckpointRequest(redact=True).checkpoint_mode(), RedactingMode)
    summary = CheckpointRequest(mode="summary", model="openai/gpt-4.1-mini").checkpoint_mode()
    assert isinstance(summary, SummaryMode)
    assert summary.options == SummaryOptions(model="openai/gpt-4.1-mini")  # redaction on, the default timeout
    assert not CheckpointRequest(mode="summary", redact=False, timeout=5).checkpoint_mode().options.redact
    with pytest.raises(OptionError) as info:  # values are checked by the mode's own options
        CheckpointRequest(mode="summary", instructions=" ").checkpoint_mode()
    assert info.value.fields == ("instructions",)
