"""``--show-completion`` and ``--install-completion`` where no shell started picompact (an editor, a Python script,
cron): typer asks shellingham, which looks among the parent processes; picompact then takes the login shell,
``$SHELL``, and without one says how to name the shell (exit 2) instead of typer's "Shell  not supported." (exit 1)."""

from __future__ import annotations

import pytest
import shellingham

from tests.helpers.cli import run


def _no_shell_among_parents() -> tuple[str, str]:
    raise shellingham.ShellDetectionFailure()


@pytest.fixture
def no_parent_shell(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(shellingham, "detect_shell", _no_shell_among_parents)
    return monkeypatch


@pytest.mark.parametrize(
    ("login", "first_line"),
    [("/usr/bin/zsh", "#compdef picompact"), ("/bin/bash", "_picompact_completion() {"), ("fish", "complete")],
)
def test_without_a_parent_shell_the_login_shell_is_completed_for(
    no_parent_shell: pytest.MonkeyPatch, login: str, first_line: str
) -> None:
    no_parent_shell.setenv("SHELL", login)
    result = run("--show-completion")
    assert result.code == 0, result.stderr
    assert result.stdout.startswith(first_line) and "_PICOMPACT_COMPLETE" in result.stdout
    assert result.stderr == ""


def test_without_a_parent_shell_or_shell_it_is_a_usage_error_naming_the_way_out(
    no_parent_shell: pytest.MonkeyPatch,
) -> None:
    no_parent_shell.delenv("SHELL", raising=False)
    for flag in ("--show-completion", "--install-completion"):
        result = run(flag)
        assert result.code == 2
        assert result.stdout == ""
        assert result.stderr.startswith(
            f"picompact: error: {flag}: cannot tell which shell to complete for (no parent process is a shell, "
            "and SHELL is not set): "
        )
        assert f"SHELL=bash picompact {flag}" in result.stderr


def test_a_parent_sh_without_completion_gives_way_to_the_login_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    """``make`` and ``system()`` run commands through sh, which typer has no completion for."""
    monkeypatch.setattr(shellingham, "detect_shell", lambda: ("sh", "/bin/sh"))
    monkeypatch.setenv("SHELL", "/bin/bash")
    result = run("--show-completion")
    assert result.code == 0 and result.stdout.startswith("_picompact_completion() {")
    monkeypatch.setenv("SHELL", "/bin/sh")
    refused = run("--show-completion")
    assert refused.code == 2
    assert (
        "(the parent shell, sh, has no completion, and SHELL=/bin/sh is not bash, zsh, fish, powershell or pwsh)"
        in refused.stderr
    )


def test_a_parent_shell_that_is_found_wins_over_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shellingham, "detect_shell", lambda: ("zsh", "/bin/zsh"))
    monkeypatch.setenv("SHELL", "/bin/bash")
    result = run("--show-completion")
    assert result.code == 0 and result.stdout.startswith("#compdef picompact")
