"""A real full filesystem (a 64 KiB tmpfs, not /dev/full: a disk that fills up takes part of a write without an
error, and only the next write fails): picompact says the output is incomplete and exits 3, never "wrote".

Mounting needs root, which this suite's machines have; where the mount is impossible the test fails and says why,
rather than skipping."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cli import picompact_exe

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo-session.jsonl"  # 130 KB: twice what the filesystem holds


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.fail(f"cannot mount a 64 KiB tmpfs for the full-disk test (needs root): {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def _run_into(target: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    with target.open("wb") as out:
        return subprocess.run([*picompact_exe(), *args], stdout=out, stderr=subprocess.PIPE, timeout=120, check=False)


@pytest.mark.process
def test_compact_output_to_a_full_disk_fails(full_disk: Path) -> None:
    proc = _run_into(full_disk / "copy.jsonl", "compact", str(DEMO), "--context-window", "32000", "--output", "-")
    stderr = proc.stderr.decode()
    assert proc.returncode == 3, stderr
    assert "No space left on device" in stderr and "incomplete" in stderr
    assert "wrote a compacted copy" not in stderr
    assert (full_disk / "copy.jsonl").stat().st_size < DEMO.stat().st_size


@pytest.mark.process
@pytest.mark.parametrize("json_output", [False, True])
def test_grep_output_to_a_full_disk_fails(full_disk: Path, json_output: bool) -> None:
    args = ["grep", ".", str(DEMO), "--max-count", "100000", "--max-chars", "100000000"]
    proc = _run_into(full_disk / "matches.txt", *args, *(["--json"] if json_output else []))
    assert proc.returncode == 3, proc.stderr.decode()
    assert "write error: No space left on device" in proc.stderr.decode()
