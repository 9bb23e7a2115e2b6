"""``picompact`` with the tests' hooks, for tests that run it as a process: ``[*hooked_exe(), ARGS…]``.

The shipped program reads no test switch. This launcher (``python tests/helpers/hooked.py ARGS…``) reads four
variables and injects them into ``main`` through the ``Environment``, as the in-process ``run`` does:

- ``PICOMPACT_FIXED_TIME``: an ISO timestamp used as the time of the written entries;
- ``PICOMPACT_ID_SEED``: any string; the written entries' ids are derived from it;
- ``PICOMPACT_TEST_PAUSE_IN_LOCK``: seconds to sleep under the session's lock just before writing (the kill and
  concurrency tests stop or race the process there);
- ``PICOMPACT_TEST_LOCK_HELD_FD``: a file descriptor (the write end of a pipe passed to the process) on which one
  byte is written, and which is then closed, the first time the process holds the lock, before that pause: a test
  waits on the pipe's other end instead of guessing how long the process takes to get there.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

HOOK_VARIABLES = (
    "PICOMPACT_FIXED_TIME",
    "PICOMPACT_ID_SEED",
    "PICOMPACT_TEST_PAUSE_IN_LOCK",
    "PICOMPACT_TEST_LOCK_HELD_FD",
)
SCRIPT = Path(__file__).resolve()


def hooked_exe() -> list[str]:
    """The command that runs picompact with the hooks of its environment."""
    return [sys.executable, str(SCRIPT)]


def apply_hooks(env: object, environ: Mapping[str, str]) -> None:
    """Set ``env``'s clock, id generator and in-lock call from the hook variables in ``environ``."""
    from pi_compact.checkpoint.entry import fixed_clock, seeded_ids

    fixed = environ.get("PICOMPACT_FIXED_TIME", "").strip()
    if fixed:
        env.clock = fixed_clock(fixed)  # type: ignore[attr-defined]
    seed = environ.get("PICOMPACT_ID_SEED")
    if seed:
        env.new_id = seeded_ids(seed)  # type: ignore[attr-defined]
    pause = environ.get("PICOMPACT_TEST_PAUSE_IN_LOCK", "").strip()
    seconds = float(pause) if pause else 0.0
    held = environ.get("PICOMPACT_TEST_LOCK_HELD_FD", "").strip()
    told = [int(held)] if held else []

    def in_lock() -> None:
        while told:  # only the first time: a retry takes the lock again
            fd = told.pop()
            try:
                os.write(fd, b"L")
            finally:
                os.close(fd)
        if seconds > 0:
            time.sleep(seconds)

    if told or seconds > 0:
        env.in_lock = in_lock  # type: ignore[attr-defined]


def _main() -> int:
    sys.path.insert(0, str(SCRIPT.parents[2]))  # the repository, for pi_compact when it is not installed
    from pi_compact.cli.core import main
    from pi_compact.cli.env import Environment

    env = Environment.from_process(sys.argv[1:])
    env.program_name = "picompact"
    apply_hooks(env, os.environ)
    return int(main(sys.argv[1:], env))


if __name__ == "__main__":
    sys.exit(_main())
