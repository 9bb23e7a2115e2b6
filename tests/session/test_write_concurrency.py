"""Writing while others write, and dying mid-write: the session always loads and nothing earlier is lost."""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from pi_compact.session import load_session
from pi_compact.session.write import migrated_lines
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.hooked import hooked_exe
from tests.helpers.sessions import simple_session

pytestmark = pytest.mark.process  # these run picompact as real processes, alongside other writers

SEEDS = {"PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z", "PICOMPACT_ID_SEED": "concurrency"}

# Appends entries the way Pi does (open with O_APPEND, one write of one line, close; no lock), each a child of
# the previous one, in bursts with quiet gaps, until its stdin closes (it ends the gap it is in at once). Prints the
# ids it wrote.
APPENDER = r"""
import json, os, random, select, sys
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
parent = sys.argv[3]
n = 0
while n < 5000:
    for _ in range(rng.randint(1, 40)):
        entry_id = f"{seed:02x}{n:06x}"[-8:]
        line = json.dumps({
            "type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-05-06T07:08:09.010Z",
            "message": {"role": "user", "content": f"appended {n} " + "w" * rng.randint(10, 400), "timestamp": 1},
        }, separators=(",", ":")) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, line.encode())
        os.close(fd)
        print(entry_id, flush=True)
        parent = entry_id
        n += 1
    if select.select([sys.stdin], [], [], rng.uniform(0, 0.25))[0]:  # readable: at its end, nothing is written
        break
"""


def _picompact(*args: str, env: dict[str, str] | None = None, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen:
    return subprocess.Popen(
        [*hooked_exe(), *args],
        env={**os.environ, **SEEDS, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=pass_fds,
    )


def _kill_at_a_random_moment_under_the_lock(path: Path, rng: random.Random) -> None:
    """Run ``compact`` on ``path``, pausing under the lock for up to 50 ms before it writes, and SIGKILL it at a
    random moment from taking the lock to a little after the pause: during the pause, the write, the rename or
    after the process is done."""
    pause = rng.uniform(0, 0.05)
    held_r, held_w = os.pipe()
    try:
        proc = _picompact(
            "compact", str(path), "--keep-recent-tokens", "2000", "--no-cap",
            env={"PICOMPACT_TEST_PAUSE_IN_LOCK": f"{pause:.3f}", "PICOMPACT_TEST_LOCK_HELD_FD": str(held_w)},
            pass_fds=(held_w,),
        )  # fmt: skip
        os.close(held_w)
        held_w = -1
        ready, _, _ = select.select([held_r], [], [], 120)
        told = os.read(held_r, 1) if ready else b""
    finally:
        os.close(held_r)
        if held_w >= 0:
            os.close(held_w)
    if told != b"L":  # the process ended (or hung) without taking the lock
        proc.kill()
        raise AssertionError(proc.communicate(timeout=60)[1].decode())
    time.sleep(rng.uniform(0, pause + 0.02))
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_compacting_while_another_process_appends_never_tears_or_loses_a_line(tmp_path, seed):
    path = simple_session(turns=8, size=400).write(tmp_path / "s.jsonl")
    original = load_session(path)
    appender = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(path), str(seed), original.leaf.id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        while path.stat().st_size == original.size and appender.poll() is None:
            time.sleep(0.005)  # wait until the appender is running
        proc = _picompact("compact", str(path), "--keep-recent-tokens", "300", "--json")
        out, err = proc.communicate(timeout=120)
    finally:
        written_ids = appender.communicate(timeout=60)[0].split()  # closes its stdin: the appender stops
    assert proc.returncode in (0, 3), err.decode()
    session = load_session(path)
    assert not [d for d in session.diagnostics if d.level == "warning"], session.diagnostics
    ids = [e.id for e in session.entries]
    assert ids[: len(original.entries)] == [e.id for e in original.entries]
    appended = [e for e in session.entries if e.id in set(written_ids)]
    assert [e.id for e in appended] == written_ids  # every line, whole and in order
    ours = [e for e in session.entries if e.type in ("compaction", "custom_message")]
    if proc.returncode == 0:
        assert orjson.loads(out)["attempts"] in (1, 2)
        assert [e.type for e in ours] == ["compaction", "custom_message"]
        assert ours[1].parent_id == ours[0].id
        assert ours[0].parent_id in {original.leaf.id, *written_ids}
    else:
        assert ours == []
        assert b"nothing was written" in err


def _entry_raws(path: Path) -> list[dict]:
    return [e.raw for e in load_session(path).entries]


def _check_after_kill(path: Path, original: bytes, original_raws: list[dict], migrating: bool) -> str:
    """The file loads, every earlier entry is intact, and at most our two entries follow. Returns what happened."""
    data = path.read_bytes()
    if data == original:
        return "untouched"
    session = load_session(path)
    raws = [e.raw for e in session.entries]
    assert raws[: len(original_raws)] == original_raws
    extra = raws[len(original_raws) :]
    assert [e["type"] for e in extra] in (["compaction"], ["compaction", "custom_message"])
    if not migrating:
        assert data.startswith(original)
        torn = [d for d in session.diagnostics if d.code == "truncated-last-line"]
        assert not torn or len(extra) <= 1  # a torn tail is skipped by Pi, never glued to a good line
    return "written"


@pytest.mark.parametrize("seed", range(6))
def test_sigkill_at_a_random_moment_of_an_append_loses_nothing(tmp_path, seed):
    path = tmp_path / "medium.jsonl"
    original = (PI_FIXTURES / "gen-medium-101.jsonl").read_bytes()
    path.write_bytes(original)
    raws = _entry_raws(path)
    _kill_at_a_random_moment_under_the_lock(path, random.Random(seed))
    _check_after_kill(path, original, raws, migrating=False)
    if path.read_bytes() == original:  # the lock died with the process: a new run goes through
        again = _picompact("compact", str(path), "--keep-recent-tokens", "2000", "--no-cap")
        assert again.wait(timeout=120) == 0
        assert _check_after_kill(path, original, raws, migrating=False) == "written"


@pytest.mark.parametrize("seed", range(4))
def test_sigkill_at_a_random_moment_of_a_migrating_rewrite_loses_nothing(tmp_path, seed):
    path = tmp_path / "v1.jsonl"
    original = (PI_FIXTURES / "pi-large-session.jsonl").read_bytes()
    path.write_bytes(original)
    session = load_session(path)
    migrated_raws = [orjson.loads(line) for line in migrated_lines(session)[1:]]
    _kill_at_a_random_moment_under_the_lock(path, random.Random(100 + seed))
    outcome = _check_after_kill(path, original, migrated_raws, migrating=True)
    if outcome == "written":
        assert load_session(path).original_version == 3
    backup = tmp_path / "v1.jsonl.bak"
    if backup.exists():
        assert backup.read_bytes() == original
