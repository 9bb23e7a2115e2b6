"""Every command has help text and a README section; `--help` and `--version` work."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from pi_compact.cli import app
from tests.helpers.cli import run

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
COMMANDS = (ROOT / "docs" / "commands.md").read_text()


def command_names() -> list[str]:
    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


def test_every_command_has_help_text() -> None:
    names = command_names()
    assert {"check", "sessions"} <= set(names)
    for name in names:
        result = run(name, "--help")
        assert result.code == 0, (name, result.stderr)
        assert "Usage:" in result.stdout
        group = typer.main.get_command(app)
        assert group.commands[name].help, f"{name} has no help text"  # type: ignore[attr-defined]


def test_every_command_has_a_section_in_the_commands_guide() -> None:
    headings = [line for line in COMMANDS.splitlines() if line.startswith("### ")]
    for name in command_names():
        assert any(re.search(rf"\b{name}\b", h) for h in headings), f"docs/commands.md has no section for {name}"


def test_the_readme_is_short_and_points_to_the_docs() -> None:
    assert len(README.splitlines()) <= 200
    for page in re.findall(r"\]\((docs/[\w./-]+\.md)\)", README):
        assert (ROOT / page).is_file(), page


def test_top_level_help_and_version() -> None:
    result = run("--help")
    assert result.code == 0
    for name in command_names():
        assert name in result.stdout
    version = run("--version")
    assert version.code == 0 and version.stdout.startswith("picompact ")


def test_readme_names_the_two_setup_commands() -> None:
    assert "make demo" in README and "make test" in README


def test_readme_quick_start_runs_as_written_on_a_fresh_clone() -> None:
    """The first Quick start block uses only files of the clone; every command in it works as printed."""
    import shlex

    block = README.split("## Quick start", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.startswith("picompact ")]
    assert len(commands) >= 4
    root = Path(__file__).resolve().parents[2]
    for command in commands:
        args = shlex.split(command)[1:]
        result = run(*args, cwd=root)
        assert result.code in (0, 1), (command, result.stderr)
        assert result.stdout, command
    assert ". .venv/bin/activate" in README.split("## Quick start", 1)[0]
