"""Pruning inside the real Pi 1.6 CLI: the extension installed in Pi's agent dir, a scripted model whose prompt cache
lives one second (``promptCache.short``) and note reads that take 1.5 s each (``tools/pi/e2e/drive.py
--prompt-cache 1 --slow-reads 1.5``). The cache is cold when each read comes back, so at ``turn_end`` the
extension hands Pi a batch of ``context_edit`` drafts, which Pi appends; the same session with
``picompact.prune: false`` compacts mid-run where the pruned one does not."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.checkpoint.prune_stub import PRUNE_MARK
from tests.helpers.cli import run
from tests.helpers.real_pi import drive_session
from tests.oracle import NOT_INSTALLED, ask_oracle, pi_installed

pytestmark = pytest.mark.skipif(not pi_installed(), reason=NOT_INSTALLED)

REPO = Path(__file__).resolve().parents[2]
WINDOW, RESERVE, KEEP = 32000, 4096, 4000


def _launcher(directory: Path) -> Path:
    """A ``picompact`` that runs this checkout's code (the extension calls it by its absolute path)."""
    path = directory / "picompact"
    path.write_text(f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m pi_compact "$@"\n')
    path.chmod(0o755)
    return path


def _setup(launcher: Path) -> str:
    """Install the extension, then point its install record at ``launcher``."""
    fix = (
        "import json, os, sys; p = os.path.join(os.environ['PI_CODING_AGENT_DIR'], 'extensions', 'picompact', "
        "'install.json'); d = json.load(open(p)); d['command'] = [sys.argv[1]]; json.dump(d, open(p, 'w'))"
    )
    return f'{launcher} pi install && {sys.executable} -c "{fix}" {launcher}'


def _drive(factory: pytest.TempPathFactory, name: str, settings: dict[str, Any]) -> Iterator[dict[str, Any]]:
    with drive_session(
        factory,
        name,
        "--prompt-cache",
        "1",
        "--slow-reads",
        "1.5",
        "--settings",
        orjson.dumps(settings).decode(),
        seed=3,
        prompts=5,
        context_window=WINDOW,
        setup=_setup(_launcher(factory.mktemp(f"{name}-bin"))),
    ) as manifest:
        yield manifest


@pytest.fixture(scope="module")
def pruned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from _drive(tmp_path_factory, "pruned", {})


@pytest.fixture(scope="module")
def unpruned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    yield from _drive(tmp_path_factory, "unpruned", {"picompact": {"prune": False}})


def _entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in Path(manifest["file"]).read_bytes().split(b"\n") if line.strip()]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


class TestPruneInPi:
    def test_every_run_succeeds(self, pruned: dict[str, Any], unpruned: dict[str, Any]) -> None:
        for manifest in (pruned, unpruned):
            assert all(r["ok"] for r in manifest["runs"]), [r.get("stderr") for r in manifest["runs"]]

    def test_pi_appends_the_batches_and_only_tool_output_is_replaced(self, pruned: dict[str, Any]) -> None:
        entries = _entries(pruned)
        by_id = {e.get("id"): e for e in entries}
        edits = [e for e in entries if e.get("type") == "context_edit"]
        assert edits, "the extension pruned nothing"
        for edit in edits:
            target = by_id[edit["targetId"]]
            assert target["message"]["role"] == "toolResult"  # never user or assistant text
            assert _text(edit["replacement"]["content"]).startswith(PRUNE_MARK)
        assert len({e["targetId"] for e in edits}) == len(edits)  # nothing pruned twice

    def test_the_model_reads_the_stub_after_a_batch(self, pruned: dict[str, Any]) -> None:
        entries = _entries(pruned)
        by_id = {e.get("id"): e for e in entries}
        first = next(e for e in entries if e.get("type") == "context_edit")
        original = _text(by_id[first["targetId"]]["message"]["content"])
        log = Path(pruned["tempDir"]) / "run" / "requests.jsonl"
        bodies = [orjson.loads(line) for line in log.read_bytes().split(b"\n") if line.strip()]
        sent = [
            "\n".join(_text(m.get("content")) for m in r["body"].get("messages", []) if m.get("role") == "tool")
            for r in bodies
            if r.get("method") == "POST" and isinstance(r.get("body"), dict)
        ]
        carrying = [i for i, text in enumerate(sent) if original in text]
        stubbed = [i for i, text in enumerate(sent) if f"entry {first['targetId']}" in text and PRUNE_MARK in text]
        assert carrying and stubbed and max(carrying) < min(stubbed)

    def test_pruning_puts_the_compaction_off(self, pruned: dict[str, Any], unpruned: dict[str, Any]) -> None:
        assert unpruned["compactions"], "without pruning this session compacts"
        assert len(pruned["compactions"]) < len(unpruned["compactions"])
        assert not any(e.get("type") == "context_edit" for e in _entries(unpruned))

    def test_pis_estimate_of_the_pruned_session_is_checks(self, pruned: dict[str, Any], tmp_path: Path) -> None:
        # Right after each batch (Pi's usage is stale then: it estimates every message) and at the end. Pi's leaf is
        # a file's last entry: each point is the file cut after that entry's line.
        lines = [line for line in Path(pruned["file"]).read_bytes().split(b"\n") if line.strip()]
        ends = [i for i, line in enumerate(lines) if orjson.loads(line).get("type") == "context_edit"]
        ends = [i for i in ends if i + 1 == len(lines) or orjson.loads(lines[i + 1]).get("type") != "context_edit"]
        for end in [*ends, len(lines) - 1]:
            cut = tmp_path / f"at-{end}.jsonl"
            cut.write_bytes(b"\n".join(lines[: end + 1]) + b"\n")
            flags = ["--context-window", str(WINDOW), "--reserve-tokens", str(RESERVE)]
            mine = run("check", cut, "--json", *flags, "--keep-recent-tokens", str(KEEP))
            assert mine.code in (0, 1), mine.stderr
            theirs = ask_oracle("analyze", cut, "--context-window", str(WINDOW), "--brief")
            assert theirs.returncode == 0, theirs.stdout[-2000:]
            assert orjson.loads(mine.stdout)["context_tokens"] == theirs.json["contextEstimate"]["tokens"], end
