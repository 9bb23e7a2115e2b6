"""The "next page" command picompact prints: this command line again, continued with ``--cursor``.

It must run as printed. So the options that choose a page (``--cursor``, ``--page``) are dropped before the new
cursor is added, and the arguments are walked as click reads them: the value of an option that takes one is kept
as it is, even when it looks like ``--page`` (``grep -e --page``).
"""

from __future__ import annotations

import shlex

from pi_compact.cli.env import Environment

PAGE_OPTIONS = ("--cursor", "--page")


def _valued_options() -> set[str]:
    """Option names of the running command that take a value (a flag does not)."""
    from pi_compact.cli.compat import get_current_context

    ctx = get_current_context(silent=True)
    names: set[str] = set()
    while ctx is not None:
        for param in ctx.command.params:
            is_option = getattr(param, "param_type_name", "") == "option"
            if is_option and not getattr(param, "is_flag", False) and not getattr(param, "count", False):
                names.update(param.opts)
        ctx = ctx.parent
    return names


def next_command(env: Environment, cursor: str, drop: tuple[str, ...] = ()) -> str:
    """The command line that prints the next page, ready to paste into a shell; without the flags ``drop`` names
    (``search --reindex``: the next page need not build the index again)."""
    argv = list(env.argv)
    end = argv.index("--") if "--" in argv else len(argv)
    valued = _valued_options()
    kept: list[str] = []
    i = 0
    while i < end:
        arg = argv[i]
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        if name in PAGE_OPTIONS:
            i += 1 if "=" in arg else 2
            continue
        if arg in drop:
            i += 1
            continue
        kept.append(arg)
        if arg in valued and i + 1 < end:
            kept.append(argv[i + 1])
            i += 2
            continue
        i += 1
    return shlex.join([env.program_name, *kept, "--cursor", cursor, *argv[end:]])
