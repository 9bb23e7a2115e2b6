"""Driving a real picompact process from a test: Ctrl-C at the right moment, also when the tests themselves run
with Ctrl-C ignored."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from typing import Any


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
