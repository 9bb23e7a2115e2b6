"""The Ctrl-C tests also work when the test run was started with SIGINT ignored (``make test &`` from a shell
without job control): their picompact processes are started with SIGINT at its default (``start_interruptible``),
and an in-process Ctrl-C raises KeyboardInterrupt (``ctrl_c_enabled``), instead of each waiting out its timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.process import ctrl_c_enabled, start_interruptible

pytestmark = pytest.mark.process

SHOW_SIGINT = (
    "import signal; h = signal.getsignal(signal.SIGINT); "
    "print('default' if h is signal.default_int_handler else 'ignored' if h is signal.SIG_IGN else h)"
)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sigint_ignored() -> Iterator[None]:
    """This process with SIGINT ignored, as a background job of a non-interactive shell starts."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _child_sigint(proc: subprocess.Popen[bytes]) -> str:
    out, _ = proc.communicate(timeout=60)
    return out.decode().strip()


def test_a_child_started_interruptible_takes_ctrl_c_though_the_tests_ignore_it(sigint_ignored: None) -> None:
    plain = subprocess.Popen([sys.executable, "-c", SHOW_SIGINT], stdout=subprocess.PIPE)
    assert _child_sigint(plain) == "ignored"  # what the Ctrl-C tests met: the signal never arrives
    started = start_interruptible([sys.executable, "-c", SHOW_SIGINT], stdout=subprocess.PIPE)
    assert _child_sigint(started) == "default"
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # this process is left as it was


def test_ctrl_c_enabled_raises_keyboard_interrupt_in_process_then_ignores_it_again(sigint_ignored: None) -> None:
    with pytest.raises(KeyboardInterrupt), ctrl_c_enabled():
        os.kill(os.getpid(), signal.SIGINT)  # raised as soon as the next bytecode runs
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_the_compact_ctrl_c_test_passes_in_a_run_that_ignores_sigint() -> None:
    """The real thing: the test run started as ``make test &`` starts it (it would wait 60 s and fail before)."""
    test = "tests/cli/test_compact_cli.py::test_ctrl_c_exits_130_with_the_file_untouched"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", test],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=50,  # under the 60 s the test would wait for a Ctrl-C that never comes
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout.decode()[-2000:]
    assert b"1 passed" in proc.stdout
