"""What a verbatim checkpoint advertises for recovery is decided once, for `picompact compact` and the extension
alike: the context_* tools when the extension is installed for the session's directory (globally, or in a trusted
project) and enabled, else shell commands. `picompact.cap` in Pi's settings is compact's default cap."""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.helpers.cli import run
from tests.helpers.sessions import simple_session

FLAGS = ["--mode", "verbatim", "--dry-run", "--json", "--context-window", "32000", "--keep-recent-tokens", "400"]


def _session(tmp_path: Path, cwd: Path) -> Path:
    path = simple_session(turns=6, size=400).write(tmp_path / "s.jsonl")
    lines = path.read_bytes().split(b"\n")
    header = orjson.loads(lines[0])
    header["cwd"] = str(cwd)
    lines[0] = orjson.dumps(header)
    path.write_bytes(b"\n".join(lines))
    return path


def _summary(path: Path, *extra: str) -> str:
    result = run("compact", path, *FLAGS, *extra)
    assert result.code == 0, result.stderr
    return result.json["entries"][0]["summary"]


def _reminder(path: Path) -> str:
    return run("compact", path, *FLAGS).json["entries"][1]["content"]


def test_tools_when_installed_shell_commands_otherwise(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    path = _session(tmp_path, project)
    shell = _summary(path)
    assert "`picompact grep '<regex>' FILE`" in shell and "context_grep" not in shell
    assert run("pi", "install", cwd=tmp_path).code == 0
    tools = _summary(path)
    assert "`context_grep(pattern)`" in tools and "`context_show_entry(id)`" in tools and "picompact grep" not in tools
    reminder = _reminder(path)
    assert "the context_* tools" in reminder and "picompact" not in reminder.split("\n", 1)[1]
    assert "context_lookup" not in tools  # no lookup model with a key here
    (agent / "settings.json").write_text('{"picompact": {"enabled": false}}')
    assert _summary(path) == shell
    (agent / "settings.json").write_text("{}")
    assert run("pi", "uninstall", cwd=tmp_path).code == 0
    assert _summary(path) == shell


def test_a_project_install_counts_only_in_a_trusted_project(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    path = _session(tmp_path, project)
    assert run("pi", "install", "--project", cwd=project).code == 0
    assert "picompact grep" in _summary(path)  # trust undecided: print mode would not load it
    (agent / "trust.json").write_text(orjson.dumps({str(project.resolve()): True}).decode())
    assert "context_grep(pattern)" in _summary(path)


def test_lookup_is_advertised_with_a_lookup_model(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    path = _session(tmp_path, project)
    assert run("pi", "install", cwd=tmp_path).code == 0
    (agent / "settings.json").write_text('{"picompact": {"lookupModel": "openai/gpt-4.1-mini"}}')
    result = run("compact", path, *FLAGS, env={"OPENAI_API_KEY": "sk-test"})
    assert "context_lookup(question)" in result.json["entries"][0]["summary"]


def test_the_cap_setting_is_compacts_default(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    path = _session(tmp_path, project)
    default = _summary(path)
    (agent / "settings.json").write_text('{"picompact": {"cap": 2000}}')
    capped = _summary(path)
    assert capped == _summary(path, "--cap", "2000") and capped != default
    assert _summary(path, "--no-cap") == _summary(path, "--cap", "100000")
    (agent / "settings.json").write_text('{"picompact": {"cap": false}}')
    assert _summary(path) == _summary(path, "--no-cap")
