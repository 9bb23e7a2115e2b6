"""Driving a real picompact process from a test: Ctrl-C at the right moment, also when the tests themselves run
with Ctrl-C ignored."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def ctrl_c_enabled() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in this process, and a process started meanwhile has SIGINT at its default,
    also when the tests run with SIGINT ignored.

    A shell without job control starts a background command (``make test &``) with SIGINT ignored; fork and exec
    pass that on to every child, and Python then installs no KeyboardInterrupt handler, so the Ctrl-C a test sends
    would be ignored and the test would wait out its timeout. A handler, unlike SIG_IGN, is reset to the default by
    exec (``Popen``'s ``restore_signals`` restores only SIGPIPE, SIGXFZ and SIGXFSZ). Outside the main thread, where
    no handler can be set, this changes nothing (``start_interruptible`` still gives its child the default)."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if not ignored or threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_interruptible(args: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(args, **kwargs)`` whose child takes Ctrl-C (SIGINT at its default, see ``ctrl_c_enabled``)
    however the tests were started."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN and threading.current_thread() is not threading.main_thread():
        return subprocess.Popen(args, preexec_fn=_default_sigint, **kwargs)
    with ctrl_c_enabled():
        return subprocess.Popen(args, **kwargs)


def interrupt_when_arrived(
    proc: subprocess.Popen[bytes], arrived: threading.Event, release: threading.Event
) -> tuple[bytes, bytes]:
    """Press Ctrl-C on ``proc`` (started with ``start_interruptible``) once its request reached the server; then
    let the handler go and reap the process.

    Returns what the process wrote (stdout, stderr)."""
    try:
        assert arrived.wait(60), "the request never reached the server"
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_capped(
    args: Sequence[str],
    home: Path,
    limit: int,
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[bytes]:
    """``python -m pi_compact ARGS`` from this checkout in a process whose address space is capped at ``limit``
    bytes (RLIMIT_AS, Linux), with ``home`` as its HOME, cache and Pi agent dir; output kept as bytes."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PI_CODING_AGENT_DIR": str(home / "agent"),
        **(environ or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "pi_compact", *args],
        capture_output=True,
        preexec_fn=cap,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
