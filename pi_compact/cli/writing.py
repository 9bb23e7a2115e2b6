"""What the ``Environment`` sets for the commands that write a session (``compact``, ``prune``): the clock and ids
of new entries, the lock's wait (``PICOMPACT_LOCK_TIMEOUT``, seconds, default 10), how long a torn last line must
stay quiet (``PICOMPACT_TORN_QUIET``), and the check of a ``--context-file``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_compact.cli.env import Environment
from pi_compact.errors import UsageError

LOCK_TIMEOUT_ENV = "PICOMPACT_LOCK_TIMEOUT"
TORN_QUIET_ENV = "PICOMPACT_TORN_QUIET"


def check_context_file(path: Path) -> None:
    """A --context-file must be a regular file (or a link to one): a FIFO would block the read, as the loader says."""
    import os
    import stat

    from pi_compact.session.load import os_error

    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"--context-file: {os_error(exc, str(path)).message}", path=str(path)) from None
    if stat.S_ISDIR(st.st_mode):
        raise UsageError("--context-file: is a directory, not a file", path=str(path))
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
        raise UsageError(f"--context-file: not a regular file ({kind})", path=str(path))


def torn_quiet(environ: Mapping[str, str]) -> float:
    """Seconds an incomplete last line must stay unchanged before it counts as torn (``PICOMPACT_TORN_QUIET``)."""
    from pi_compact.session.write import DEFAULT_TORN_QUIET

    value = environ.get(TORN_QUIET_ENV, "").strip()
    try:
        seconds = float(value) if value else DEFAULT_TORN_QUIET
    except ValueError:
        raise UsageError(f"{TORN_QUIET_ENV} must be a number of seconds (got {value!r})") from None
    if not 0 <= seconds <= 3600:
        raise UsageError(f"{TORN_QUIET_ENV} must be between 0 and 3600 seconds (got {value!r})")
    return seconds


def lock_timeout(environ: Mapping[str, str]) -> float:
    from pi_compact.session.lock import DEFAULT_LOCK_TIMEOUT

    value = environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_LOCK_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        raise UsageError(f"{LOCK_TIMEOUT_ENV} must be a number of seconds (got {value!r})") from None
    if not seconds >= 0:  # NaN too: it would wait forever
        raise UsageError(f"{LOCK_TIMEOUT_ENV} must be a number of seconds, not negative (got {value!r})")
    return seconds


def options_from_environment(env: Environment, output: str | None) -> dict[str, Any]:
    """The ``CompactOptions`` the Environment sets: the clock and ids of the new entries, the lock's wait and the
    call under it, how long a torn line must stay quiet, and stdout for ``--output -``."""
    from pi_compact.checkpoint.entry import random_id, system_clock

    return {
        "clock": env.clock or system_clock,
        "new_id": env.new_id or random_id,
        "lock_timeout": lock_timeout(env.environ),
        "stdout": env.stdout.buffer if output == "-" else None,
        "in_lock": env.in_lock,
        "torn_quiet": torn_quiet(env.environ),
    }
