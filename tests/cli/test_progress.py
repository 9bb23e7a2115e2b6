"""The spinner of slow commands: only on a terminal, never with --json or TERM=dumb, and gone before output."""

from __future__ import annotations

import os

from pi_compact.cli._progress import Progress
from pi_compact.cli.env import Environment


def env(tty: bool, **environ: str) -> Environment:
    return Environment.captured(tty=tty, environ={**os.environ, "TERM": "xterm", **environ})


def test_only_on_a_terminal_without_json() -> None:
    assert Progress(env(True), "reading").enabled
    assert not Progress(env(False), "reading").enabled
    assert not Progress(env(True, TERM="dumb"), "reading").enabled
    json_env = env(True)
    json_env.json_mode = "lines"
    assert not Progress(json_env, "reading").enabled


def test_nothing_is_shown_in_a_pipe() -> None:
    e = env(False)
    with Progress(e, "reading", delay=0) as progress:
        assert progress._timer is None
    assert e.stderr_bytes() == b""


def test_stopped_before_the_first_item_and_never_started_after() -> None:
    progress = Progress(env(True), "searching", delay=3600)
    with progress:
        items = progress.until_first(iter([1, 2, 3]))
        assert next(items) == 1
        assert progress._done and progress._status is None
        progress._show()  # a timer firing late shows nothing
        assert progress._status is None
        assert list(items) == [2, 3]
