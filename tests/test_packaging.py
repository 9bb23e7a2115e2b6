"""A first `make demo` prints what the user asked for: the build and the editable install raise no setuptools
warning (SPDX license string, no deprecated editable mode), and the Makefile says what is slow before it starts."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What this machine's pip configuration may print whatever the project (an index directory that is not there).
MACHINE = re.compile(r"^WARNING: Location '.*' is ignored: it is neither a file nor a directory\.$")


def test_pyproject_uses_the_current_license_and_editable_forms() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["license"] == "MIT"  # SPDX expression; the table form is deprecated
    assert any(r.startswith("setuptools>=77") for r in data["build-system"]["requires"])
    assert data["tool"]["setuptools"]["package-dir"] == {"": "."}  # an editable install is a plain .pth
    assert "editable_mode" not in (ROOT / "Makefile").read_text()


@pytest.mark.process
def test_an_editable_install_prints_no_warning(tmp_path: Path) -> None:
    """What `make demo` runs on a fresh clone, into a venv of its own (never the one running the tests: pip would
    take picompact out of it first): pip shows no warning from the build. The pip is the one `make` upgraded into
    the test venv, pointed at the new venv with --python (the venv's own bundled pip, older than `make`'s, would
    cost 3 s to install first); the build is isolated as a fresh clone's is."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    proc = subprocess.run(
        [*pip, "install", "--quiet", "--no-deps", "-e", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    noise = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip() and not MACHINE.match(line)]
    assert noise == [], "\n".join(noise)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import pi_compact; print(pi_compact.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert Path(installed.stdout.strip()).resolve() == ROOT / "pi_compact" / "__init__.py"  # in the new venv


def test_slow_targets_say_what_they_cost_before_they_start() -> None:
    make = (ROOT / "Makefile").read_text()
    for target, cost in (("test", "several minutes"), ("bench", "about 8 minutes"), ("$(STAMP)", "about 30 s")):
        recipe = make.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        first = recipe.split("\n")[1]
        assert first.startswith("\t@echo") and cost in first, (target, first)
