"""A spinner on stderr for work that takes a while: only on a terminal, only after about a second.

Most runs end before the delay and never import rich's live display; a run that takes longer (a large session
being read, a search through all of it) shows what it is doing until it finishes or its first result is printed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Any, TypeVar

from pi_compact.cli.env import Environment

DELAY = 1.0  # seconds of silence before the spinner appears

T = TypeVar("T")


class Progress:
    """``with Progress(env, "reading session.jsonl"):`` shows a spinner with that text after ``DELAY`` seconds when
    stderr is a terminal (never with ``--json`` or in a pipe). ``stop()`` ends it early (before printing)."""

    def __init__(self, env: Environment, message: str, delay: float = DELAY) -> None:
        self.env = env
        self.message = message
        self.delay = delay
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._status: Any = None
        self._done = False

    @property
    def enabled(self) -> bool:
        env = self.env
        return env.stderr_isatty and env.json_mode is None and env.environ.get("TERM", "") != "dumb"

    def __enter__(self) -> Progress:
        if self.enabled:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _show(self) -> None:
        with self._lock:
            if self._done:
                return
            from rich.console import Console
            from rich.text import Text

            from pi_compact.cli.env import printable

            console = Console(file=self.env.stderr, stderr=True, highlight=False)
            # A path in the label is shown, not obeyed, and not read as rich markup
            self._status = console.status(Text(printable(self.message)), spinner="dots")
            self._status.start()

    def stop(self) -> None:
        """End the spinner (and keep it from starting); the terminal line is cleared."""
        with self._lock:
            self._done = True
            if self._timer is not None:
                self._timer.cancel()
            if self._status is not None:
                self._status.stop()
                self._status = None

    def until_first(self, items: Iterable[T]) -> Iterator[T]:
        """The items, with the spinner stopped before the first one is handed out (and at the end)."""
        try:
            for item in items:
                if not self._done:
                    self.stop()
                yield item
        finally:
            self.stop()
