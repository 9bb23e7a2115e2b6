"""`picompact pi install|status|uninstall`: where the extension goes, what it records, and that nothing the user
changed is ever overwritten or removed without --force. HOME and PI_CODING_AGENT_DIR point at a temp dir."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from pi_compact.extension.install import extension_source
from tests.helpers.cli import picompact_exe, run


def _manifest(directory: Path) -> dict:
    return orjson.loads((directory / "install.json").read_bytes())


def test_install_writes_the_extension_and_the_absolute_command(agent: Path, tmp_path: Path) -> None:
    result = run("pi", "install", "--json", cwd=tmp_path)
    assert result.code == 0, result.stderr
    target = agent / "extensions" / "picompact"
    assert result.json["directory"] == str(target)
    assert (target / "index.ts").read_bytes() == extension_source()
    manifest = _manifest(target)
    assert manifest["command"] == [str(Path(picompact_exe()[0]).absolute())] or manifest["command"][1:] == [
        "-m",
        "pi_compact",
    ]
    assert Path(manifest["command"][0]).is_absolute() and os.access(manifest["command"][0], os.X_OK)
    assert manifest["mode"] == "verbatim"
    # The recorded command runs without PATH (Pi may run under env -i).
    status = run("pi", "status", "--json", cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert status.code == 0, status.stderr
    glob = next(i for i in status.json["installs"] if i["scope"] == "global")
    assert glob["installed"] and glob["extension"] == "current" and glob["command_ok"]
    assert glob["command_version"] == glob["installed_version"] == status.json["version"]


def test_install_honours_pi_coding_agent_dir(tmp_path: Path) -> None:
    elsewhere = tmp_path / "agent-elsewhere"
    result = run("pi", "install", env={"PI_CODING_AGENT_DIR": str(elsewhere)}, cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert (elsewhere / "extensions" / "picompact" / "index.ts").is_file()
    assert str(elsewhere / "extensions" / "picompact") in result.stdout


def test_reinstall_is_idempotent_and_records_the_mode(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", cwd=tmp_path).code == 0
    again = run("pi", "install", "--mode", "summary", cwd=tmp_path)
    assert again.code == 0, again.stderr
    assert "picompact extension updated" in again.stdout and "summary; was verbatim" in again.stdout
    assert _manifest(agent / "extensions" / "picompact")["mode"] == "summary"
    same = run("pi", "install", cwd=tmp_path)
    assert "already up to date" in same.stdout
    bad = run("pi", "install", "--mode", "fancy", cwd=tmp_path)
    assert bad.code == 2 and "--mode" in bad.stderr


def test_a_changed_extension_is_never_overwritten_without_force(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", cwd=tmp_path).code == 0
    index = agent / "extensions" / "picompact" / "index.ts"
    index.write_text("// my own changes\n")
    refused = run("pi", "install", cwd=tmp_path)
    assert refused.code == 2
    assert str(index) in refused.stderr and "--force" in refused.stderr
    assert index.read_text() == "// my own changes\n"
    status = run("pi", "status", "--json", cwd=tmp_path)
    assert next(i for i in status.json["installs"] if i["scope"] == "global")["extension"] == "changed"
    forced = run("pi", "install", "--force", cwd=tmp_path)
    assert forced.code == 0, forced.stderr
    assert index.read_bytes() == extension_source()


def test_a_foreign_directory_is_left_alone(agent: Path, tmp_path: Path) -> None:
    target = agent / "extensions" / "picompact"
    target.mkdir(parents=True)
    (target / "index.ts").write_text("// someone else's extension\n")
    refused = run("pi", "install", cwd=tmp_path)
    assert refused.code == 2 and "did not install" in refused.stderr
    assert (target / "index.ts").read_text() == "// someone else's extension\n"
    assert not (target / "install.json").exists()
    # Uninstall does not touch it either.
    removed = run("pi", "uninstall", cwd=tmp_path)
    assert removed.code == 0 and "nothing to remove" in removed.stdout
    assert (target / "index.ts").exists()


def test_uninstall_removes_exactly_what_install_wrote(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", cwd=tmp_path).code == 0
    target = agent / "extensions" / "picompact"
    (target / "notes.txt").write_text("mine\n")
    result = run("pi", "uninstall", "--json", cwd=tmp_path)
    assert result.code == 0, result.stderr
    assert sorted(Path(p).name for p in result.json["removed"]) == ["index.ts", "install.json"]
    assert (target / "notes.txt").read_text() == "mine\n"
    assert not result.json["removed_directory"]
    (target / "notes.txt").unlink()
    assert run("pi", "install", cwd=tmp_path).code == 0
    clean = run("pi", "uninstall", cwd=tmp_path)
    assert clean.code == 0 and not target.exists()
    assert (agent / "extensions").is_dir()  # only our own directory goes
    status = run("pi", "status", cwd=tmp_path)
    assert status.code == 1 and "not installed" in status.stdout


def test_uninstall_keeps_a_changed_file_unless_forced(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", cwd=tmp_path).code == 0
    index = agent / "extensions" / "picompact" / "index.ts"
    index.write_text("// edited\n")
    kept = run("pi", "uninstall", cwd=tmp_path)
    assert kept.code == 1 and str(index) in kept.stderr
    assert index.read_text() == "// edited\n" and (index.parent / "install.json").exists()
    forced = run("pi", "uninstall", "--force", cwd=tmp_path)
    assert forced.code == 0 and not index.parent.exists()


def test_project_install_and_trust(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    result = run("pi", "install", "--project", cwd=project)
    assert result.code == 0, result.stderr
    assert (project / ".pi" / "extensions" / "picompact" / "index.ts").is_file()
    assert not (agent / "extensions" / "picompact").exists()
    undecided = run("pi", "status", "--json", cwd=project)
    assert undecided.json["project_trusted"] is None
    assert "undecided" in undecided.json["project_trust"]
    (agent / "trust.json").write_text(orjson.dumps({str(project.resolve()): True}).decode())
    trusted = run("pi", "status", cwd=project)
    assert trusted.code == 0
    assert "trusted: Pi loads project extensions" in trusted.stdout
    (agent / "trust.json").write_text(orjson.dumps({str(tmp_path.resolve()): False}).decode())
    refused = run("pi", "status", "--json", cwd=project)
    assert refused.json["project_trusted"] is False
    assert run("pi", "uninstall", "--project", cwd=project).code == 0
    assert not (project / ".pi" / "extensions" / "picompact").exists()


def test_status_reports_a_broken_command(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", cwd=tmp_path).code == 0
    manifest_path = agent / "extensions" / "picompact" / "install.json"
    data = orjson.loads(manifest_path.read_bytes())
    data["command"] = [str(tmp_path / "no-such-picompact")]
    manifest_path.write_bytes(orjson.dumps(data))
    status = run("pi", "status", cwd=tmp_path)
    assert status.code == 1
    assert "not a picompact whose version can be read" in status.stdout


def test_settings_merge_global_and_trusted_project(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".pi").mkdir(parents=True)
    (agent / "settings.json").write_text('{"picompact": {"mode": "summary", "cap": 3000, "lookupModel": "openai/x"}}')
    (project / ".pi" / "settings.json").write_text('{"picompact": {"cap": false, "enabled": "yes"}}')
    trusted = run("pi", "config", "--json", "--cwd", project, "--trusted", cwd=tmp_path)
    assert trusted.code == 0, trusted.stderr
    data = trusted.json
    assert data["mode"] == "summary" and data["cap"] is False and data["capArgs"] == ["--no-cap"]
    assert data["lookupModel"] == "openai/x" and data["enabled"] is True
    assert data["sources"] == {"mode": "global", "cap": "project", "lookupModel": "global", "enabled": "project"}
    assert any("enabled" in w for w in data["warnings"])
    assert data["lookupAvailable"] is False  # no key for openai here
    untrusted = run("pi", "config", "--json", "--cwd", project, "--untrusted", cwd=tmp_path)
    assert untrusted.json["cap"] == 3000 and untrusted.json["capArgs"] == ["--cap", "3000"]


def test_lookup_is_available_with_a_key(agent: Path, tmp_path: Path) -> None:
    (agent / "settings.json").write_text('{"picompact": {"lookupModel": "openai/gpt-5-mini"}}')
    result = run("pi", "config", "--json", "--cwd", tmp_path, env={"OPENAI_API_KEY": "sk-test"}, cwd=tmp_path)
    assert result.json["lookupAvailable"] is True


# -- one copy at a time ---------------------------------------------------------------------------------------


def test_a_second_copy_in_the_other_place_is_refused(agent: Path, tmp_path: Path) -> None:
    """Global and project installs both load in a trusted project: the second install refuses and says how to
    keep one; nothing is written in the project."""
    assert run("pi", "install", cwd=tmp_path).code == 0
    refused = run("pi", "install", "--project", cwd=tmp_path)
    assert refused.code == 2
    assert "already installed globally" in refused.stderr and "`picompact pi uninstall`" in refused.stderr
    assert "--replace" in refused.stderr
    assert not (tmp_path / ".pi").exists()
    # And the other way round.
    assert run("pi", "uninstall", cwd=tmp_path).code == 0
    assert run("pi", "install", "--project", cwd=tmp_path).code == 0
    back = run("pi", "install", cwd=tmp_path)
    assert back.code == 2 and "already installed in this project" in back.stderr
    assert "picompact pi uninstall --project" in back.stderr


def test_replace_moves_the_copy_and_keeps_its_mode(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", "--mode", "summary", cwd=tmp_path).code == 0
    moved = run("pi", "install", "--project", "--replace", cwd=tmp_path)
    assert moved.code == 0, moved.stderr
    assert "removed the other copy" in moved.stdout
    assert not (agent / "extensions" / "picompact").exists()
    assert _manifest(tmp_path / ".pi" / "extensions" / "picompact")["mode"] == "summary"


def test_status_warns_about_two_copies(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", cwd=tmp_path).code == 0
    project = tmp_path / ".pi" / "extensions" / "picompact"  # copied by hand, or left by an older picompact
    project.mkdir(parents=True)
    for name in ("index.ts", "install.json"):
        (project / name).write_bytes((agent / "extensions" / "picompact" / name).read_bytes())
    text = run("pi", "status", cwd=tmp_path)
    assert "warning: the extension is installed twice, globally and in this project" in text.stderr
    assert "picompact pi uninstall --project" in text.stderr
    (agent / "settings.json").write_text('{"defaultProjectTrust": "always"}')
    doc = run("pi", "status", "--json", cwd=tmp_path).json
    assert any("Pi loads both here" in w and "stands down" in w for w in doc["warnings"]), doc["warnings"]


def test_a_status_with_one_copy_has_no_such_warning(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", cwd=tmp_path).code == 0
    doc = run("pi", "status", "--json", cwd=tmp_path).json
    assert not any("twice" in w for w in doc["warnings"])


# -- the recorded mode ----------------------------------------------------------------------------------------


def test_reinstall_keeps_the_recorded_mode(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", "--mode", "summary", cwd=tmp_path).code == 0
    again = run("pi", "install", cwd=tmp_path)
    assert again.code == 0, again.stderr
    assert "already up to date" in again.stdout and "mode:  summary" in again.stdout
    assert _manifest(agent / "extensions" / "picompact")["mode"] == "summary"
    changed = run("pi", "install", "--mode", "verbatim", "--json", cwd=tmp_path).json
    assert (changed["mode"], changed["previous_mode"], changed["state"]) == ("verbatim", "summary", "updated")


# -- uninstall --------------------------------------------------------------------------------------------------


def test_uninstall_says_it_kept_the_record_with_a_changed_index(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", "--project", cwd=tmp_path).code == 0
    directory = tmp_path / ".pi" / "extensions" / "picompact"
    (directory / "index.ts").write_text("// my own changes\n")
    kept = run("pi", "uninstall", "--project", cwd=tmp_path)
    assert kept.code == 1
    assert f"kept {directory / 'index.ts'}" in kept.stderr
    assert f"kept {directory / 'install.json'} too" in kept.stderr
    assert (directory / "install.json").exists()
    doc = run("pi", "uninstall", "--project", "--json", cwd=tmp_path).json
    assert doc["kept_record"] == str(directory / "install.json")


def test_uninstall_removes_the_empty_folders_install_created(agent: Path, tmp_path: Path) -> None:
    assert run("pi", "install", "--project", cwd=tmp_path).code == 0
    assert _manifest(tmp_path / ".pi" / "extensions" / "picompact")["created"] == [
        str(tmp_path / ".pi"),
        str(tmp_path / ".pi" / "extensions"),
    ]
    removed = run("pi", "uninstall", "--project", cwd=tmp_path)
    assert removed.code == 0, removed.stderr
    assert not (tmp_path / ".pi").exists()
    assert f"removed {tmp_path / '.pi'} (empty" in removed.stdout


def test_uninstall_keeps_folders_that_were_there_or_are_not_empty(agent: Path, tmp_path: Path) -> None:
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text("{}")
    assert run("pi", "install", "--project", cwd=tmp_path).code == 0
    assert _manifest(tmp_path / ".pi" / "extensions" / "picompact")["created"] == [str(tmp_path / ".pi" / "extensions")]
    (tmp_path / ".pi" / "extensions" / "other.ts").write_text("// another extension\n")
    assert run("pi", "uninstall", "--project", cwd=tmp_path).code == 0
    assert (tmp_path / ".pi" / "extensions" / "other.ts").exists() and (tmp_path / ".pi" / "settings.json").exists()


def test_a_planted_record_cannot_make_uninstall_remove_other_folders(agent: Path, tmp_path: Path) -> None:
    """``created`` comes with the repository in a project install: only the folders above the extension's count."""
    assert run("pi", "install", "--project", cwd=tmp_path).code == 0
    elsewhere = tmp_path / "empty-elsewhere"
    elsewhere.mkdir()
    record = tmp_path / ".pi" / "extensions" / "picompact" / "install.json"
    data = orjson.loads(record.read_bytes())
    data["created"] = [str(elsewhere), str(tmp_path)]
    record.write_bytes(orjson.dumps(data))
    assert run("pi", "uninstall", "--project", cwd=tmp_path).code == 0
    assert elsewhere.is_dir() and (tmp_path / ".pi" / "extensions").is_dir()
