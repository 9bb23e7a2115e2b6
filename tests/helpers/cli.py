"""Run picompact from a test: in process through ``main(argv, env)`` (the default, fast), or as a real process
(for what only a process shows: signals, a closed pipe, the console script, locks held by another process).

Both return the same :class:`Result`: raw bytes (a \\r inside a message must survive), decoded text, exit code.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from pi_compact.cli import Environment, main


@dataclass
class Result:
    """What a CLI run produced."""

    stdout_bytes: bytes
    stderr_bytes: bytes
    code: int

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8")

    @property
    def json(self) -> Any:
        return orjson.loads(self.stdout_bytes)

    @property
    def jsonl(self) -> list[Any]:
        return [orjson.loads(line) for line in self.stdout_bytes.split(b"\n") if line.strip()]


def _environ(env: Mapping[str, str] | None) -> dict[str, str]:
    full = {**os.environ, **(env or {})}
    full.pop("PICOMPACT_DEBUG", None)
    return full


@contextlib.contextmanager
def _process_state(environ: dict[str, str], cwd: str | os.PathLike[str] | None, cli_env: Environment) -> Iterator[None]:
    """What a separate process would have of its own: variables, working directory, and the sys streams (so that
    nothing written around the Environment escapes the capture)."""
    saved_environ = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    os.environ.clear()
    os.environ.update(environ)
    try:
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = cli_env.stdin, cli_env.stdout, cli_env.stderr
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environ)


class _GoneReader(io.RawIOBase):
    """A stdout whose reader has gone away: every write fails with EPIPE, as a closed pipe does."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def run(
    *args: str | os.PathLike[str],
    input: bytes | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    reader_gone: bool = False,
) -> Result:
    """``picompact ARGS`` in this process, through ``main(argv, env)`` with in-memory streams.

    ``reader_gone``: stdout behaves like a pipe whose reader has exited (``| head``). ``timeout`` is accepted for
    the signature's sake (a process run honours it)."""
    from tests.helpers.hooked import apply_hooks

    environ = _environ(env)
    cli_env = Environment.captured(stdin=input or b"", environ=environ)
    apply_hooks(cli_env, environ)
    if reader_gone:
        cli_env.stdout = io.TextIOWrapper(io.BufferedWriter(_GoneReader()), encoding="utf-8")
    with _process_state(environ, cwd, cli_env):
        code = main([str(a) for a in args], cli_env)
    stdout = b"" if reader_gone else cli_env.stdout_bytes()
    return Result(stdout, cli_env.stderr_bytes(), int(code))


def picompact_exe() -> list[str]:
    """The installed console script, next to this interpreter (else ``python -m pi_compact``)."""
    exe = Path(sys.executable).parent / "picompact"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("picompact")
    return [found] if found else [sys.executable, "-m", "pi_compact"]


def run_process(
    *args: str | os.PathLike[str],
    input: bytes | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> Result:
    """``picompact ARGS`` as a real subprocess of the installed console script (through the tests' launcher when
    ``env`` sets one of its hooks, ``tests.helpers.hooked``); output read as bytes."""
    from tests.helpers.hooked import HOOK_VARIABLES, hooked_exe

    exe = hooked_exe() if env and any(name in env for name in HOOK_VARIABLES) else picompact_exe()
    proc = subprocess.run(
        [*exe, *map(str, args)],
        input=input,
        capture_output=True,
        cwd=cwd,
        env=_environ(env),
        timeout=timeout,
        check=False,
    )
    return Result(proc.stdout, proc.stderr, proc.returncode)
