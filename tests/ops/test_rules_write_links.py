"""``rules --write`` writes the regular instruction file in the project, and only it: never through a link (absolute,
relative, dangling, to a directory, to a device), never into a FIFO or a device, never a file too big to be one;
never over a write that another program made meanwhile; never leaving its temporary file behind, killed or not; and
never a sentence that could end its block early."""

from __future__ import annotations

import fcntl
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pi_compact.errors import ConcurrentWriteError, UsageError
from pi_compact.ops import rules_block
from pi_compact.ops.rules_block import BLOCK_BEGIN, BLOCK_END, MAX_FILE_BYTES, TEMP_PREFIX, with_rules, write_rules
from pi_compact.pi.sessions import session_dir_for_cwd
from tests.helpers.cli import run, run_process
from tests.helpers.sessions import Scheme, SessionBuilder

RULES = (["Don't touch .env.", "Use pnpm, not npm."], ["Please leave .env alone.", "We use pnpm rather than npm."])


@pytest.fixture
def project(tmp_path: Path, agent: Path) -> Path:
    path = tmp_path / "work" / "proj"
    path.mkdir(parents=True)
    for number, messages in enumerate(RULES, 1):
        write_session(path, number, messages)
    return path


def write_session(project: Path, number: int, messages: list[str]) -> Path:
    scheme = Scheme(False, f"2026-01-{number:02d}", f"0199cccc-0000-7000-8000-{number:012d}", str(project), None, None)
    builder = SessionBuilder(scheme=scheme)
    for text in messages:
        builder.user(text)
        builder.assistant("Done.")
    directory = session_dir_for_cwd(str(project))
    directory.mkdir(parents=True, exist_ok=True)
    return builder.write(directory / f"2026-01-{number:02d}T00-00-00-000Z_{number}.jsonl")


def snapshot(path: Path) -> tuple[bytes, int, int]:
    st = path.stat()
    return path.read_bytes(), st.st_ino, st.st_mtime_ns


def temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX))


# ---------------------------------------------------------------------------------------------------------------
# Links


@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md", "AGENTS.override.md"])
@pytest.mark.parametrize("shape", ["absolute", "relative", "inside"])
def test_a_link_to_a_file_is_refused_and_its_target_untouched(
    project: Path, tmp_path: Path, name: str, shape: str
) -> None:
    outside = tmp_path / "home" / ".bashrc" if shape != "inside" else project / "docs" / "AGENTS.md"
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_text("export PATH=/usr/bin\n")
    before = snapshot(outside)
    link = project / name
    link.symlink_to(os.path.relpath(outside, project) if shape == "relative" else outside)
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 2, result.stderr
    assert "symbolic link" in result.stderr and str(link) in result.stderr
    assert snapshot(outside) == before
    assert link.is_symlink() and temps(project) == []
    # without --write the report is given, and names the link as the file Pi loads
    assert run("rules", "--cwd", project, "--json").json["target"] == str(link)


@pytest.mark.parametrize("shape", ["absolute", "relative", "relative-up"])
def test_a_dangling_link_is_refused_and_nothing_is_made_where_it_points(
    project: Path, tmp_path: Path, shape: str
) -> None:
    missing = {"absolute": tmp_path / "elsewhere" / "x", "relative": Path("x"), "relative-up": Path("../../x")}[shape]
    (tmp_path / "elsewhere").mkdir()
    link = project / "AGENTS.md"
    link.symlink_to(missing)
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 2 and "symbolic link" in result.stderr
    assert not os.path.lexists(tmp_path / "elsewhere" / "x")
    assert not os.path.lexists(project / "x") and not os.path.lexists(tmp_path / "x")
    assert link.is_symlink() and sorted(p.name for p in project.iterdir()) == ["AGENTS.md"]


def test_a_dangling_link_beside_a_real_claude_md_leaves_the_file_pi_loads_the_target(project: Path) -> None:
    (project / "AGENTS.md").symlink_to("/nonexistent/x")
    claude = project / "CLAUDE.md"
    claude.write_text("# Notes\n")
    result = run("rules", "--cwd", project, "--write", "--yes", "--json")
    assert result.code == 0, result.stderr
    assert result.json["written"]["path"] == str(claude)
    assert BLOCK_BEGIN in claude.read_text() and (project / "AGENTS.md").is_symlink()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_a_link_to_a_device_is_refused_without_reading_it(project: Path, device: str) -> None:
    (project / "AGENTS.md").symlink_to(device)
    result = run_process("rules", "--cwd", project, "--write", "--yes", timeout=30)
    assert result.code == 2 and "symbolic link" in result.stderr


def test_a_link_to_a_directory_is_refused(project: Path, tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (project / "AGENTS.md").symlink_to(tmp_path / "dir")
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 2 and "symbolic link" in result.stderr
    assert list((tmp_path / "dir").iterdir()) == []


def test_a_hard_link_out_of_the_project_is_broken_not_written_through(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "bashrc"
    outside.write_text("alias ll='ls -l'\n")
    before = snapshot(outside)
    os.link(outside, project / "AGENTS.md")
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 0, result.stderr
    assert snapshot(outside) == before  # the rename gave AGENTS.md a new inode; the other name keeps the old one
    assert BLOCK_BEGIN in (project / "AGENTS.md").read_text()


# ---------------------------------------------------------------------------------------------------------------
# Not a regular file


@pytest.mark.process
def test_a_fifo_is_refused_at_once(project: Path) -> None:
    os.mkfifo(project / "AGENTS.md")
    started = time.monotonic()
    result = run_process("rules", "--cwd", project, "--write", "--yes", timeout=30)
    assert result.code == 2 and "named pipe" in result.stderr
    assert time.monotonic() - started < 20
    assert stat.S_ISFIFO((project / "AGENTS.md").lstat().st_mode)


def test_a_fifo_made_after_the_check_is_not_opened_blocking(project: Path) -> None:
    """The check before asking and the open are two moments: a FIFO put in between is still refused, not read."""
    os.mkfifo(project / "AGENTS.md")
    with pytest.raises(UsageError, match="named pipe"):
        write_rules(project / "AGENTS.md", ["Use pnpm."])


def test_a_directory_and_a_file_too_big_are_refused(project: Path) -> None:
    (project / "AGENTS.md").mkdir()
    assert "is a directory" in run("rules", "--cwd", project, "--write", "--yes").stderr
    (project / "AGENTS.md").rmdir()
    big = project / "AGENTS.md"
    with open(big, "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is read to find out
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 2 and "larger than" in result.stderr
    assert big.stat().st_size == MAX_FILE_BYTES + 1


def test_an_unusable_target_is_refused_before_any_session_is_read(project: Path) -> None:
    # A session the scan would warn about: no warning comes, since the refusal comes first.
    (session_dir_for_cwd(str(project)) / "2026-01-09T00-00-00-000Z_9.jsonl").write_bytes(b"not a session\n")
    assert "skipped" in run("rules", "--cwd", project).stderr
    for make in (lambda p: p.mkdir(), lambda p: os.mkfifo(p), lambda p: p.symlink_to(project / "elsewhere.md")):
        target = project / "AGENTS.md"
        make(target)
        for flag in ("--write", "--dry-run"):
            result = run("rules", "--cwd", project, flag, *(["--yes"] if flag == "--write" else []))
            assert result.code == 2, result.stderr
            assert "skipped" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
        target.rmdir() if target.is_dir() and not target.is_symlink() else target.unlink()


def test_the_prompt_names_the_file_written_and_a_link_is_refused_before_asking(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_compact.cli import Environment, main

    monkeypatch.chdir(project)
    env = Environment.captured(stdin=b"y\ny\n", tty=True)
    assert main(["rules", "--write"], env) == 0
    assert f"Add to {project / 'AGENTS.md'}: " in env.stderr_bytes().decode()
    (project / "AGENTS.md").unlink()
    outside = tmp_path / "bashrc"
    outside.write_text("x\n")
    (project / "AGENTS.md").symlink_to(outside)
    env = Environment.captured(stdin=b"y\ny\n", tty=True)
    assert main(["rules", "--write"], env) == 2
    stderr = env.stderr_bytes().decode()
    assert "Add to" not in stderr and "symbolic link" in stderr and outside.read_text() == "x\n"


# ---------------------------------------------------------------------------------------------------------------
# Writes by others


def _in_place_append(path: Path) -> None:
    with open(path, "ab") as handle:
        handle.write(b"- written by an editor\n")


def _replace_by_rename(path: Path) -> None:
    other = path.with_name("AGENTS.md.editor")
    other.write_text("# rewritten by an editor\n")
    os.replace(other, path)


def _remove(path: Path) -> None:
    path.unlink()


@pytest.mark.parametrize("change", [_in_place_append, _replace_by_rename, _remove])
def test_a_change_before_the_rename_is_kept_and_nothing_is_written(project: Path, change) -> None:
    agents = project / "AGENTS.md"
    agents.write_text("# Project\n")
    expected: dict[str, bytes | None] = {}

    def meanwhile() -> None:
        change(agents)
        expected["bytes"] = agents.read_bytes() if agents.exists() else None

    with pytest.raises(ConcurrentWriteError):
        write_rules(agents, ["Use pnpm, not npm."], in_lock=meanwhile)
    assert (agents.read_bytes() if agents.exists() else None) == expected["bytes"]
    assert temps(project) == []


def test_a_file_made_meanwhile_is_not_replaced(project: Path) -> None:
    agents = project / "AGENTS.md"

    def meanwhile() -> None:
        agents.write_text("# mine\n")

    with pytest.raises(ConcurrentWriteError, match="made"):
        write_rules(agents, ["Use pnpm, not npm."], in_lock=meanwhile)
    assert agents.read_text() == "# mine\n" and temps(project) == []


def test_a_write_between_the_last_check_and_the_rename_is_put_back(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agents = project / "AGENTS.md"
    agents.write_text("# Project\n")
    install = rules_block._install

    def late(dfd: int, temp: str, name: str, exists: bool, where: str) -> None:
        _in_place_append(agents)  # lands in the old inode, after every check
        install(dfd, temp, name, exists, where)

    monkeypatch.setattr(rules_block, "_install", late)
    with pytest.raises(ConcurrentWriteError, match="new content is kept"):
        write_rules(agents, ["Use pnpm, not npm."])
    assert agents.read_text() == "# Project\n- written by an editor\n" and temps(project) == []


def test_another_writer_holding_the_lock_is_waited_for_then_given_up_on(project: Path) -> None:
    agents = project / "AGENTS.md"
    fd = os.open(project, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(ConcurrentWriteError, match="another picompact"):
            write_rules(agents, ["Use pnpm."], lock_timeout=0.3)
        assert time.monotonic() - started >= 0.3
        assert not agents.exists()
    finally:
        os.close(fd)
    assert write_rules(agents, ["Use pnpm."]).added == ["Use pnpm."]


# ---------------------------------------------------------------------------------------------------------------
# Killed


KILLABLE = """
import signal, sys, time
from pathlib import Path
from pi_compact.ops.rules_block import write_rules
ready = Path(sys.argv[2])
def pause():  # the temporary file is written: wait here until a signal comes (it is held until the file is gone)
    ready.write_text("ready")
    deadline = time.monotonic() + 60
    while not signal.sigpending() and time.monotonic() < deadline:
        time.sleep(0.01)
write_rules(sys.argv[1], ["Use pnpm, not npm."], in_lock=pause)
"""


def _killed(project: Path, tmp_path: Path, sig: int) -> subprocess.Popen[bytes]:
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(project / "AGENTS.md"), str(ready)])
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    assert len(temps(project)) == 1  # the temporary file is there, written, at the pause
    proc.send_signal(sig)
    proc.wait(30)
    return proc


@pytest.mark.process
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_kill_leaves_no_temporary_file_and_the_file_as_it_was(project: Path, tmp_path: Path, sig: int) -> None:
    agents = project / "AGENTS.md"
    agents.write_text("# Project\n")
    proc = _killed(project, tmp_path, sig)
    assert proc.returncode != 0
    assert temps(project) == [] and agents.read_text() == "# Project\n"


@pytest.mark.process
def test_a_temporary_file_a_sigkill_left_is_removed_by_the_next_write(project: Path, tmp_path: Path) -> None:
    proc = _killed(project, tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert len(temps(project)) == 1 and not (project / "AGENTS.md").exists()
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 0, result.stderr
    assert temps(project) == [] and BLOCK_BEGIN in (project / "AGENTS.md").read_text()


# ---------------------------------------------------------------------------------------------------------------
# What a line may hold


@pytest.mark.parametrize(
    "sentence",
    [
        f"Never edit after {BLOCK_END} in AGENTS.md.",
        f"Keep {BLOCK_BEGIN} at the top.",
        "Always close <!-- comments properly.",
        "Arrows --> are fine in prose.",
        "Two lines\u2028in one\nsentence.",
    ],
)
def test_a_line_cannot_end_the_block_or_open_a_comment(sentence: str) -> None:
    text, added, _ = with_rules("# Project\n", [sentence, "Use pnpm."])
    assert text.count("<!--") == 2 and text.count("-->") == 2  # the two markers, nothing else
    assert text.index(BLOCK_BEGIN) < text.index(f"- {added[0]}\n") < text.index(BLOCK_END)
    assert all("\n" not in line and "\u2028" not in line for line in added)
    again, more, _ = with_rules(text, ["Use yarn."])
    assert more == ["Use yarn."] and again.endswith(f"- Use yarn.\n{BLOCK_END}\n")
    assert with_rules(again, [sentence]) == (again, [], False)  # the line is recognised as already there


def test_a_repeated_sentence_holding_the_end_marker_is_written_inside_the_block(project: Path) -> None:
    marker = f"Never put anything after {BLOCK_END} in this file."
    write_session(project, 3, [marker])
    write_session(project, 4, [marker])
    result = run("rules", "--cwd", project, "--write", "--yes", "--json")
    assert result.code == 0, result.stderr
    text = (project / "AGENTS.md").read_text()
    assert text.count(BLOCK_END) == 1 and text.endswith(BLOCK_END + "\n")
    assert any("--&gt;" in line for line in result.json["written"]["added"])


# ---------------------------------------------------------------------------------------------------------------
# The decisions file beside the search index


@pytest.mark.parametrize("shape", ["link", "dangling", "fifo"])
def test_the_decisions_file_is_never_written_through(project: Path, tmp_path: Path, shape: str) -> None:
    from pi_compact.ops.rules_memory import decisions_path

    path = Path(decisions_path())
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    outside = tmp_path / "elsewhere" / "victim"
    outside.parent.mkdir()
    if shape == "link":
        outside.write_text('{"version": 1, "files": {}}')
    before = snapshot(outside) if shape == "link" else None
    if shape == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(outside)
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 0, result.stderr
    assert "rules-decisions.json" in result.stderr  # read as empty, with a warning
    assert BLOCK_BEGIN in (project / "AGENTS.md").read_text()
    if before is not None:
        assert snapshot(outside) == before
    else:
        assert not os.path.lexists(outside)
    assert not path.is_symlink() and stat.S_ISREG(path.lstat().st_mode)  # the name replaced by a file of its own


def test_a_cache_folder_that_is_a_link_keeps_no_decisions(project: Path, tmp_path: Path) -> None:
    from pi_compact.ops.rules_memory import decisions_path

    folder = Path(decisions_path()).parent
    folder.parent.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir(mode=0o700)
    folder.symlink_to(outside)
    result = run("rules", "--cwd", project, "--write", "--yes")
    assert result.code == 0, result.stderr
    assert "decisions not kept" in result.stderr
    assert BLOCK_BEGIN in (project / "AGENTS.md").read_text()
    assert list(outside.iterdir()) == []
