"""Driving a real picompact process from a test: Ctrl-C at the right moment."""

from __future__ import annotations

import signal
import subprocess
import threading


def interrupt_when_arrived(
    proc: subprocess.Popen[bytes], arrived: threading.Event, release: threading.Event
) -> tuple[bytes, bytes]:
    """Press Ctrl-C on ``proc`` once its request reached the server; then let the handler go and reap the process.

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
