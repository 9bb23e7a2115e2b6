"""A project's `.pi/` comes with the repository: `pi status`, `pi install --project` and `pi uninstall --project`
treat what is there as hostile input. Nothing it names is run, nothing outside the extension folder is removed,
and nothing is written through a link planted there; `compact --output` never writes through a link either."""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

import orjson
import pytest

from pi_compact.errors import PiCompactError
from pi_compact.extension import install as install_mod
from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


def _project_install(project: Path, record: dict[str, object]) -> Path:
    directory = project / ".pi" / "extensions" / "picompact"
    directory.mkdir(parents=True)
    (directory / "index.ts").write_bytes(install_mod.extension_source())
    base = {"schema_version": 1, "version": "0.1.0", "mode": "verbatim", "scope": "project", "files": {}}
    (directory / "install.json").write_bytes(orjson.dumps({**base, **record}))
    return directory


def _trust(agent: Path, project: Path) -> None:
    (agent / "trust.json").write_bytes(orjson.dumps({str(project.resolve()): True}))


def test_status_never_runs_the_command_a_project_names(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    _trust(agent, project)  # even in a trusted project: status reads, it does not run
    shell = ["/bin/sh", "-c", f"id > {project / 'pwned.txt'}; echo picompact 0.1.0", "sh"]
    _project_install(project, {"command": shell})
    result = run("pi", "status", "--json", cwd=project)
    assert not (project / "pwned.txt").exists()
    found = next(i for i in result.json["installs"] if i["scope"] == "project")
    assert found["installed"] and found["command_ok"] is False and found["command_version"] is None


def test_status_reads_a_picompact_scripts_version_without_running_it(agent: Path, tmp_path: Path) -> None:
    """A console script for an interpreter with picompact installed is recognised by reading it: a line that would
    leave a mark if the script ran stays unrun, and the version comes from the distribution's metadata."""
    project = tmp_path / "repo"
    project.mkdir()
    mark = project / "ran.txt"
    script = project / "picompact"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(mark)!r}, 'w').close()\nfrom pi_compact.cli import main\n"
        "sys.exit(main())\n"
    )
    script.chmod(0o755)
    _project_install(project, {"command": [str(script)]})
    result = run("pi", "status", "--json", cwd=project)
    found = next(i for i in result.json["installs"] if i["scope"] == "project")
    assert not mark.exists()
    assert found["command_ok"] is True and found["command_version"] == result.json["version"]
    # A script that only says it is picompact is not one.
    script.write_text(f"#!/bin/sh\necho picompact 0.1.0 > {mark}\n")
    again = run("pi", "status", "--json", cwd=project)
    assert not mark.exists()
    assert next(i for i in again.json["installs"] if i["scope"] == "project")["command_ok"] is False


def test_status_does_not_hang_on_a_fifo_or_follow_a_link_in_the_record(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    directory = _project_install(project, {"command": ["/bin/true"]})
    (directory / "install.json").unlink()
    os.mkfifo(directory / "install.json")
    result = run("pi", "status", "--json", cwd=project, timeout=60)
    found = next(i for i in result.json["installs"] if i["scope"] == "project")
    assert found["error"] and "regular file" in found["error"]
    (directory / "install.json").unlink()
    (directory / "install.json").symlink_to("/dev/zero")
    linked = run("pi", "status", "--json", cwd=project, timeout=60)
    assert "symbolic link" in next(i for i in linked.json["installs"] if i["scope"] == "project")["error"]


@pytest.mark.parametrize("force", [False, True])
def test_uninstall_removes_nothing_outside_the_extension_folder(agent: Path, tmp_path: Path, force: bool) -> None:
    project = tmp_path / "repo"
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    absolute = tmp_path / "also-precious.txt"
    absolute.write_text("keep me too\n")
    digest = hashlib.sha256(b"keep me\n").hexdigest()
    names = {"../../../../precious.txt": digest, str(absolute): hashlib.sha256(b"keep me too\n").hexdigest()}
    directory = _project_install(project, {"command": ["/bin/true"], "files": names})
    result = run("pi", "uninstall", "--project", "--json", *(["--force"] if force else []), cwd=project)
    assert outside.read_text() == "keep me\n" and absolute.read_text() == "keep me too\n"
    assert sorted(result.json["refused"]) == sorted(names)
    assert not (directory / "install.json").exists()  # the record itself goes: nothing of ours is kept


def test_project_install_never_writes_through_a_planted_link(agent: Path, tmp_path: Path) -> None:
    project = tmp_path / "repo"
    directory = project / ".pi" / "extensions" / "picompact"
    directory.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    # The temp names an earlier install used were predictable: plant links at them for this process.
    for name in ("index.ts", "install.json"):
        (directory / f".{name}.tmp-{os.getpid()}").symlink_to(victim)
    result = install_mod.install("project", cwd=project, force=True)
    assert victim.read_text() == "original\n"
    assert (directory / "index.ts").read_bytes() == install_mod.extension_source()
    assert not (directory / "index.ts").is_symlink() and result.written
    # A link at the file itself, or at a folder of the project's .pi/, is refused outright.
    (directory / "index.ts").unlink()
    (directory / "index.ts").symlink_to(victim)
    with pytest.raises(PiCompactError, match="symbolic link"):
        install_mod.install("project", cwd=project, force=True)
    assert victim.read_text() == "original\n"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = tmp_path / "other"
    (other / ".pi").mkdir(parents=True)
    (other / ".pi" / "extensions").symlink_to(elsewhere)
    refused = run("pi", "install", "--project", cwd=other)
    assert refused.code == 2 and "symbolic link" in refused.stderr
    assert list(elsewhere.iterdir()) == []


def test_compact_output_keeps_the_replaced_files_mode_and_refuses_a_link(tmp_path: Path) -> None:
    session = simple_session(turns=6, size=2000).write(tmp_path / "s.jsonl")
    os.chmod(session, 0o644)
    flags = ("--keep-recent-tokens", "500", "--context-window", "100000")
    existing = tmp_path / "copy.jsonl"
    existing.write_text("old\n")
    os.chmod(existing, 0o600)
    result = run("compact", session, *flags, "--output", existing)
    assert result.code == 0, result.stderr
    assert stat.S_IMODE(os.stat(existing).st_mode) == 0o600 and existing.read_bytes() != b"old\n"
    victim = tmp_path / "victim.txt"
    victim.write_text("original\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(victim)
    refused = run("compact", session, *flags, "--output", link)
    assert refused.code == 2 and "symbolic link" in refused.stderr
    assert victim.read_text() == "original\n" and link.is_symlink()
