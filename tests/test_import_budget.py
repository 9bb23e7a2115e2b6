"""``picompact check`` on a small session stays quick to start: it loads no HTTP client, no tokenizer, none of
rich's heavy parts, no LLM code and no other command's module, and defines almost no dataclasses. Run in a fresh
interpreter (the test process has loaded everything)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.sessions import simple_session

pytestmark = pytest.mark.process

# Top-level packages (or pi_compact subpackages) that `check` must not import.
FORBIDDEN = (
    "httpx",
    "httpcore",
    "tiktoken",
    "pi_compact.llm",
    "rich.syntax",
    "rich.traceback",
    "rich.markdown",
    "rich.progress",
    "pygments",
    # the other commands' modules and the JSON TypedDicts
    "pi_compact.cli.audit",
    "pi_compact.cli.compact",
    "pi_compact.cli.coverage",
    "pi_compact.cli.lint",
    "pi_compact.cli.lookup",
    "pi_compact.cli.pi",
    "pi_compact.cli.schema",
    "pi_compact.cli.search",
    "pi_compact.cli.sessions",
    "pi_compact.checkpoint.mode",  # only compact asks for a mode's context
    "pi_compact.checkpoint.verbatim.build",  # check --json reads the previous checkpoint's details, not the builder
    "pi_compact.checkpoint.verbatim.cap",
    "pi_compact.checkpoint.verbatim.envelope",
)

# The dataclasses check may define. Python 3.11 compiles each method a dataclass generates on its own: about
# 0.5 ms a class (1 ms frozen), where a NamedTuple costs a fifth of that and a class with __slots__ next to nothing.
# check also plans what `picompact prune` would free (its row and JSON key): the plan's own classes come with it.
DATACLASSES_ALLOWED = {
    "pi_compact.session.entries.Session",
    "pi_compact.ops.prune.PruneOptions",
    "pi_compact.ops.prune.PrunePlan",
    "pi_compact.ops.prune.PruneResult",
    "pi_compact.ops.prune.PrunedOutput",
    "pi_compact.checkpoint.verbatim.facts.Fact",
    "pi_compact.session.write.WriteResult",
}

PROBE = """
import dataclasses, json, sys
from pi_compact.cli import main
code = main(sys.argv[1:])
defined = sorted(
    f"{name}.{value.__qualname__}"
    for name, module in list(sys.modules.items()) if name.startswith("pi_compact")
    for value in list(vars(module).values())
    if isinstance(value, type) and value.__module__ == name and dataclasses.is_dataclass(value)
)
sys.stderr.write(json.dumps({"code": int(code), "modules": sorted(sys.modules), "dataclasses": defined}))
"""


def _report(tmp_path: Path, *args: str) -> dict[str, Any]:
    env = {"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(tmp_path / "agent"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, env=env, cwd=tmp_path, timeout=120, check=False
    )
    report: dict[str, Any] = json.loads(done.stderr.rsplit(b"\n", 1)[-1])
    assert report["code"] in (0, 1), done.stderr.decode(errors="replace")
    return report


def _modules_after(tmp_path: Path, *args: str) -> set[str]:
    return set(_report(tmp_path, *args)["modules"])


@pytest.mark.parametrize(
    "extra",
    [(), ("--json",), ("--json", "--keep-recent-tokens", "1"), ("--files", "--keep-recent-tokens", "1")],
)
def test_check_on_a_small_session_imports_nothing_heavy(tmp_path: Path, extra: tuple[str, ...]) -> None:
    path = simple_session(turns=3, size=100).write(tmp_path / "s.jsonl")
    modules = _modules_after(tmp_path, "check", str(path), "--context-window", "200000", *extra)
    assert "pi_compact.ops.check" in modules  # the probe ran the command
    if "--keep-recent-tokens" in extra:  # a cut: the file evidence was computed
        assert "pi_compact.checkpoint.evidence" in modules
    loaded = sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert not loaded, f"check imported {loaded}: import them lazily, where they are used"


@pytest.mark.parametrize("extra", [(), ("--json", "--keep-recent-tokens", "1")])
def test_check_on_a_small_session_defines_almost_no_dataclasses(tmp_path: Path, extra: tuple[str, ...]) -> None:
    path = simple_session(turns=3, size=100).write(tmp_path / "s.jsonl")
    report = _report(tmp_path, "check", str(path), "--context-window", "200000", *extra)
    assert "pi_compact.ops.check" in report["modules"]  # the probe ran the command
    extra_classes = sorted(set(report["dataclasses"]) - DATACLASSES_ALLOWED)
    assert not extra_classes, (
        f"check defined the dataclasses {extra_classes} at start-up: make them NamedTuples or classes with "
        "__slots__, or import their module only where it is used"
    )
