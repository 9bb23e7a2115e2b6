"""The typer application object every command module registers on.

A command takes ``ctx: typer.Context`` and gets its :class:`~pi_compact.cli.env.Environment` with ``env_of(ctx)``;
it prints only through it, raises ``PiCompactError`` for problems, and returns an ``ExitCode`` (None means 0).
``pi_compact.cli.core.main`` runs the app and is the only place where exceptions become exit codes.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

import typer
from typer.core import TyperGroup

from pi_compact.cli.env import Environment, current_env
from pi_compact.version import __version__


def _usage_metavar(make_metavar: Any) -> Any:
    """Typer writes a required argument ``{NAME}`` in the usage line; picompact writes it ``NAME``, as click and
    most tools do, so that SESSION reads ``SESSION`` (required) or ``[SESSION]`` (optional) in every help."""

    def make(self: Any, ctx: Any, *, usage: bool = False) -> str:
        var = str(make_metavar(self, ctx, usage=usage))
        if usage and self.required and var.startswith("{") and var.endswith("}"):
            return var[1:-1]
        return var

    return make


typer.core.TyperArgument.make_metavar = _usage_metavar(typer.core.TyperArgument.make_metavar)  # type: ignore[method-assign]


class ReaderGone(Exception):
    """stdout's reader went away (EPIPE); carried past click, which would turn it into exit 1."""


class Interrupted(Exception):
    """Ctrl-C; carried past click, which would turn it into a silent exit 130."""


class PiCompactGroup(TyperGroup):
    """The root group: lets a broken pipe and Ctrl-C reach ``main`` as themselves; finds the shell of
    ``--show-completion`` and ``--install-completion`` also where no shell started picompact (``completion_shell``)."""

    def get_params(self, ctx: Any) -> Any:
        for param in self.params:  # typer adds the completion options after creating the group
            callback = param.callback
            if param.name in _COMPLETION_OPTIONS and callback is not None and callback not in _WRAPPED:
                param.callback = _for_known_shell(callback, _COMPLETION_OPTIONS[param.name])
        return super().get_params(ctx)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with _carried():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with _carried():
            return super().invoke(ctx)


# The shells typer writes completion for.
COMPLETION_SHELLS = ("bash", "zsh", "fish", "powershell", "pwsh")
_COMPLETION_OPTIONS = {"install_completion": "--install-completion", "show_completion": "--show-completion"}
_WRAPPED: set[Any] = set()


def completion_shell(environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(the shell to complete for, or None; the shell found among the parent processes, if any).

    typer asks shellingham, which looks among the parent processes; a program that is no shell (an editor, a
    Python script, cron) may have none there, or only ``sh``. Then the login shell, ``$SHELL``, is the one meant."""
    import shellingham

    try:
        found: str | None = str(shellingham.detect_shell()[0]).lower()
    except (shellingham.ShellDetectionFailure, OSError, RuntimeError):
        found = None
    if found in COMPLETION_SHELLS:
        return found, found
    login = os.path.basename(environ.get("SHELL", "")).lower().removesuffix(".exe")
    return (login if login in COMPLETION_SHELLS else None), found


def _for_known_shell(callback: Any, flag: str) -> Any:
    """typer's completion callback, given the shell by name (which it accepts), or a usage error naming the way
    to give it when there is none."""

    def run(ctx: Any, param: Any, value: Any) -> Any:
        if not value or ctx.resilient_parsing or isinstance(value, str):
            return callback(ctx, param, value)
        environ = env_of(ctx).environ
        shell, found = completion_shell(environ)
        if shell is None:
            from pi_compact.cli.compat import UsageError

            parent = f"the parent shell, {found}, has no completion" if found else "no parent process is a shell"
            login = environ.get("SHELL")
            why = f"SHELL={login} is not {', '.join(COMPLETION_SHELLS[:-1])} or pwsh" if login else "SHELL is not set"
            raise UsageError(
                f"{flag}: cannot tell which shell to complete for ({parent}, and {why}): run it from bash, zsh, fish "
                f"or PowerShell, or name the shell in SHELL, e.g. SHELL=bash picompact {flag}",
                ctx=ctx,
            )
        return callback(ctx, param, shell)

    _WRAPPED.add(run)
    return run


@contextlib.contextmanager
def _carried() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError as exc:
        raise ReaderGone() from exc
    except KeyboardInterrupt as exc:
        raise Interrupted() from exc


# The module of this package that defines each command: running one command imports only its module (the
# others cost a third of a small ``check``'s start-up). A command missing here still works, through the whole app;
# tests/cli/test_lazy_commands.py checks this table against what the modules register.
COMMAND_MODULES = {
    "audit": "audit",
    "check": "check",
    "compact": "compact",
    "context": "search",
    "coverage": "coverage",
    "grep": "search",
    "lint": "lint",
    "list": "search",
    "lookup": "lookup",
    "prune": "prune",
    "search": "search_sessions",
    "rules": "rules",
    "show": "search",
    "sessions": "sessions",
}

# Modules of this package that define no commands.
INFRASTRUCTURE = frozenset({"app", "common", "compat", "core", "env", "options", "paging", "schema"})


def _module_of(info: Any) -> str:
    return str(info.callback.__module__)


class LazyTyper(typer.Typer):
    """The root app. Command modules register on it when imported; reading its commands (typer does, to build
    the click group; so does ``--help``) imports every command module first, and ``load`` imports one."""

    def __init__(self, **kwargs: Any) -> None:
        self._commands: list[Any] = []
        self._groups: list[Any] = []
        self._complete = False
        self._loading = False
        super().__init__(**kwargs)

    @property  # type: ignore[override]
    def registered_commands(self) -> list[Any]:
        self._load_all()
        self._commands.sort(key=_module_of)  # in module order, however they were loaded: help lists them so
        return self._commands

    @registered_commands.setter
    def registered_commands(self, value: list[Any]) -> None:
        self._commands = value

    @property  # type: ignore[override]
    def registered_groups(self) -> list[Any]:
        self._load_all()
        return self._groups

    @registered_groups.setter
    def registered_groups(self, value: list[Any]) -> None:
        self._groups = value

    def _load_all(self) -> None:
        if self._complete or self._loading:
            return
        import pkgutil

        self._loading = True
        try:
            package = importlib.import_module(__package__ or "pi_compact.cli")
            for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
                if module.name not in INFRASTRUCTURE and not module.name.startswith("_"):
                    importlib.import_module(f"{package.__name__}.{module.name}")
            self._complete = True
        finally:
            self._loading = False

    def only(self, name: str) -> typer.Typer | None:
        """An app holding the root callback and just the command NAME, importing only its module (None when
        NAME is not in ``COMMAND_MODULES``)."""
        module = COMMAND_MODULES.get(name)
        if module is None:
            return None
        if not self._complete:
            self._loading = True
            try:
                importlib.import_module(f"{__package__ or 'pi_compact.cli'}.{module}")
            finally:
                self._loading = False
        found = [c for c in self._commands if (c.name or c.callback.__name__.lower().replace("_", "-")) == name]
        if len(found) != 1:
            return None
        single = LazyTyper.__new__(LazyTyper)
        single.__dict__.update(self.__dict__)
        single._commands, single._groups, single._complete = found, [], True
        return single


app = LazyTyper(
    name="picompact",
    cls=PiCompactGroup,
    help=(
        "Check, compact and search Pi coding-agent sessions.\n\n"
        "SESSION may be omitted: then the most recent Pi session for the current directory is used.\n\n"
        "Exit codes: 0 done; 1 the answer is no (check: compaction needed, grep: no match, lookup: not found); "
        "2 usage or input error; 3 external failure (model provider, lock, file changed underneath); "
        "70 internal error (a bug: --debug shows the traceback); 130 interrupted. Errors are one line on stderr, "
        "'picompact: error: ...', and one JSON line on stdout with --json."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def env_of(ctx: typer.Context) -> Environment:
    """The Environment ``main`` handed to this run (one for the process when the app is run some other way)."""
    found = ctx.find_object(Environment)
    if found is None:
        found = current_env()
        ctx.find_root().obj = found
    return found


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        env_of(ctx).text(f"picompact {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Show the version and exit."
    ),
    debug: bool = typer.Option(
        False, "--debug", help="Show the traceback of an unexpected error (internal error, exit 70)."
    ),
) -> None:
    """Check, compact and search Pi coding-agent sessions."""
    if debug:
        env_of(ctx).debug = True
