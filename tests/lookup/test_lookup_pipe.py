"""``picompact lookup`` whose reader goes away (``| head``): a quiet exit 0, as for every command."""

from __future__ import annotations

from tests.helpers.cli import run
from tests.helpers.lookup_agent import History, ScriptedModel


def test_lookup_ends_quietly_when_its_reader_goes_away(history: History, scripted: ScriptedModel) -> None:
    out = history.ids["build_output"]
    for extra in ((), ("--json",)):
        scripted.answer(f"The build failed (ENTRY {out}).")
        args = ["lookup", history.path, "What failed?", "--model", scripted.model_arg, "--base-url", scripted.base_url]
        result = run(*args, *extra, reader_gone=True)
        assert result.code == 0, result.stderr
        assert "error" not in result.stderr
