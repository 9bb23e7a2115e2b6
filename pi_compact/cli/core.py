"""``main(argv, env) -> ExitCode``: run the typer app; the only place where exceptions become exit codes.

After httpie's ``raw_main``: typer runs with ``standalone_mode=False`` so that every outcome comes back here.

- a command returns an ``ExitCode`` (or None: 0), or raises ``typer.Exit(code)``;
- a command that read a body back which is no longer in the file, after resuming from picompact's index of it
  (``FileChangedError.index_used``; the index is deleted by then), is run once more without the index, if it has
  written nothing to stdout yet: a stale index costs one cold run, never a wrong answer or a failure that repeats;
- ``PiCompactError`` -> ``picompact: error: FILE:LINE: message`` and the error's code (2 or 3);
- a usage error found by click (unknown option, bad value, missing argument) -> the same one-line format, exit 2;
- with ``--json`` an error is also one JSON line on stdout (a JSON Lines command writes an ``error`` record);
- stdout's reader went away (``| head``) -> quiet exit 0;
- Ctrl-C -> ``picompact: interrupted; nothing was written``, exit 130;
- anything else is a bug: ``picompact: error: internal error (TYPE)``, exit 70; only ``--debug`` shows the
  traceback (its message may quote session text, so it is not shown otherwise).
"""

from __future__ import annotations

import gc
import traceback
from collections.abc import Sequence
from typing import Any

from pi_compact.cli._jsonmode import json_mode_for
from pi_compact.cli.app import COMMAND_MODULES, Interrupted, ReaderGone, app
from pi_compact.cli.compat import ClickException, NoArgsIsHelpError, UsageError
from pi_compact.cli.env import Environment
from pi_compact.cli.options import flag_for
from pi_compact.errors import ExitCode, FileChangedError, OptionError, OutputWriteError, PiCompactError

_command: Any = None
_single: dict[str, Any] = {}


def command(args: Sequence[str] = ()) -> Any:
    """The click command typer builds from the app (built once, after every command module registered).

    Typer converts every command's signature when it builds the group (about half the start-up of a small
    ``check``), and importing every command module costs as much again, so a command line that names one command
    gets a group holding only that command, with only its module imported: the same command, options and
    messages; anything else (help, a mistyped name, a subgroup) gets the whole group."""
    import typer.main

    single = _invoked(args)
    if single is not None:
        built = _single.get(single)
        if built is None:
            only = app.only(single)
            if only is not None:
                built = _single[single] = typer.main.get_command(only)
        if built is not None:
            return built
    global _command
    if _command is None:
        _command = typer.main.get_command(app)
    return _command


def _invoked(args: Sequence[str]) -> str | None:
    """The command a command line runs, when it is one registered command and no root help is asked for (the
    root options are flags, so the first argument that is not an option names the command)."""
    for arg in args:
        if arg in ("-h", "--help", "--"):
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMAND_MODULES else None
    return None


def main(argv: Sequence[str] | None = None, env: Environment | None = None) -> ExitCode:
    """Run ``picompact ARGV`` in ``env`` (default: this process) and return the exit code."""
    if env is None:
        env = Environment.from_process(argv)
        env.owns_process = True
        # What start-up imported lives until exit: frozen, no full collection walks it again, during the run or at
        # exit (about 6% of a small check). Only in the process's own run: a caller that passes an env keeps its gc.
        gc.freeze()
    args = list(env.argv if argv is None else argv)
    env.argv = args
    try:
        try:
            result = _run(args, env)
            code = _exit_code(result)
            env.flush()
            return code
        except (ReaderGone, BrokenPipeError):
            env.reader_gone()
            return ExitCode.OK
        except (Interrupted, KeyboardInterrupt):
            env.stderr.write(f"{env.program_name}: {env.interrupted_note}\n")
            env.stderr.flush()
            return ExitCode.INTERRUPTED
        except PiCompactError as exc:
            if isinstance(exc, OutputWriteError):
                env.reader_gone()  # what stdout still buffers cannot be written either: drop it quietly
            message = exc.message_for(flag_for) if isinstance(exc, OptionError) else str(exc)
            env.error(message, exc.exit_code)
            return ExitCode(exc.exit_code)
        except NoArgsIsHelpError as exc:
            env.stderr.write(exc.format_message() + "\n")
            return ExitCode.USAGE
        except UsageError as exc:
            env.json_mode = env.json_mode or _json_mode_from_argv(args)
            env.error(_usage_message(exc), ExitCode.USAGE)
            return ExitCode.USAGE
        except ClickException as exc:
            env.json_mode = env.json_mode or _json_mode_from_argv(args)
            env.error(exc.format_message(), ExitCode.USAGE)
            return ExitCode.USAGE
        except SystemExit as exc:  # a library that exits by itself (typer's completion commands do)
            env.stdout.flush()
            return _exit_code(exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1)
        except Exception as exc:  # a bug in picompact: say so briefly, the traceback only when asked
            if env.debug:
                env.stderr.write("".join(traceback.format_exception(exc)))
            hint = "" if env.debug else f"; run `{_debug_command(env.program_name, args)}` for the traceback"
            env.error(f"internal error ({type(exc).__name__}){hint}", ExitCode.INTERNAL)
            return ExitCode.INTERNAL
    except BrokenPipeError:  # the report itself met a closed pipe
        env.reader_gone()
        return ExitCode.OK


def _run(args: list[str], env: Environment) -> Any:
    """The command's result; run a second time, with the index left out, after a stale index (see above)."""
    try:
        return command(args).main(args=args, prog_name=env.program_name, standalone_mode=False, obj=env)
    except FileChangedError as exc:
        if not exc.index_used or env.stdout_written:
            raise
        where = f"{exc.path}: " if exc.path is not None else ""
        env.warn(
            f"{where}the file is not what picompact's index of it says (changed in place?): "
            "answering again from the file alone"
        )
    from pi_compact.session import index

    with index.suspended():
        return command(args).main(args=args, prog_name=env.program_name, standalone_mode=False, obj=env)


def _debug_command(program: str, args: list[str]) -> str:
    """The command line again with ``--debug`` where it is accepted: before the command's name."""
    import shlex

    rest = [a for a in args if a != "--debug"]
    shown = rest if len(rest) <= 4 else [*rest[:3], "…"]
    return shlex.join([program, "--debug", *shown]).replace("'…'", "…")


def _exit_code(result: Any) -> ExitCode:
    if result is None:
        return ExitCode.OK
    if isinstance(result, bool) or not isinstance(result, int):
        raise TypeError(f"a command returned {type(result).__name__}, not an exit code")
    try:
        return ExitCode(result)
    except ValueError:
        raise TypeError(f"a command returned the undocumented exit code {result}") from None


def _usage_message(exc: Any) -> str:
    message = exc.format_message().strip()
    ctx = getattr(exc, "ctx", None)
    where = f"{ctx.command_path} --help" if ctx is not None else "picompact --help"
    return f"{message} (see '{where}')"


def _json_mode_from_argv(args: list[str]) -> Any:
    """For an error click found before any option was processed: was ``--json`` given, and to which command?"""
    end = args.index("--") if "--" in args else len(args)
    given = args[:end]
    if "--json" not in given:
        return None
    name = next((a for a in given if not a.startswith("-")), None)
    return json_mode_for(name, args)


def console_main() -> int:
    """The console script: ``picompact``."""
    return int(main())


__all__ = ["command", "console_main", "main"]
