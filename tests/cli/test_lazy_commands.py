"""Running one command imports only the module that defines it, so ``app.COMMAND_MODULES`` must name every
command's module; ``--help`` still lists every command, in the same order whatever was loaded first."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import typer.main

from pi_compact.cli import app
from pi_compact.cli.app import COMMAND_MODULES
from tests.helpers.cli import run


def test_the_table_names_every_command_and_its_module() -> None:
    registered = {
        (c.name or c.callback.__name__.lower().replace("_", "-")): c.callback.__module__.rsplit(".", 1)[-1]
        for c in app.registered_commands
    }
    assert registered == COMMAND_MODULES
    group_names = {g.name for g in app.registered_groups}
    assert not group_names & set(COMMAND_MODULES)


def test_one_command_imports_no_other_command_module(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from pi_compact.cli import main\n"
        "main(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.startswith('pi_compact.cli.')))\n"
    )
    root = Path(__file__).resolve().parents[2]
    for name, module in sorted(COMMAND_MODULES.items()):
        done = subprocess.run(
            [sys.executable, "-c", probe, name, "--help"],
            capture_output=True,
            cwd=root,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        assert b"Usage:" in done.stdout
        loaded = {m.rsplit(".", 1)[-1] for m in ast.literal_eval(done.stdout.decode().rsplit("\n", 2)[-2])}
        others = (set(COMMAND_MODULES.values()) | {"pi"}) - {module}
        assert not loaded & others, f"{name} imported {sorted(loaded & others)}"


def test_help_lists_every_command_in_module_order_after_one_ran() -> None:
    probe = (
        "from pi_compact.cli import main\n"
        "main(['check', '--help'])\n"  # loads only the check module first
        "main(['--help'])\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, cwd=root, timeout=120, check=False)
    after_one = done.stdout.split(b"Usage:")[-1]
    fresh = run("--help", cwd=root).stdout.encode()
    assert after_one.strip() == fresh.split(b"Usage:")[-1].strip()
    names = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    for name in names:
        assert f" {name} ".encode() in after_one
