"""The instruction files (AGENTS.md, CLAUDE.md, AGENTS.override.md) Pi loads for a session's cwd.

``context_files_for(cwd, agent_dir, extra)`` repeats Pi 1.6's discovery (loadProjectContextFiles) on this machine:
the agent directory's file first, then one file per directory from the filesystem root down to cwd, the first that
exists of ``AGENTS.override.md``, ``AGENTS.md``, ``AGENTS.MD``, ``CLAUDE.md``, ``CLAUDE.MD``. Like Pi it skips the
main checkout's file that a nested linked git worktree's own file shadows. Files given explicitly (``extra``) come
last. A missing or unreadable file is simply absent; discovery never fails.

``context_files_from_session(entries)`` is the fallback when none of these exist here: the ``<project_instructions
path="…">`` blocks of the system prompt recorded in the session, which is what Pi actually supplied at the time.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from pi_compact.pi.messages import content_text, current_system_message, entry_messages
from pi_compact.session.entries import Entry

CONTEXT_FILE_NAMES = ("AGENTS.override.md", "AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD")
PROJECT_INSTRUCTIONS = re.compile(r'<project_instructions path="([^"\n]*)">\n(.*?)\n</project_instructions>', re.DOTALL)

Origin = Literal["global", "project", "extra", "session"]


class ContextFile(NamedTuple):
    """One instruction file: where it is and what it says (a leading BOM removed, as Pi does)."""

    path: str
    content: str
    origin: Origin

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "origin": self.origin}


def _resolve(path: str) -> str:
    """Node's path.resolve after Pi's normalizePath: ``~``/``~/`` and ``file://`` expanded, made absolute."""
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)
    elif path.startswith("file://"):
        path = path[len("file://") :]
    return os.path.abspath(path)


def _read_text(path: str) -> str | None:
    """The text of a regular file of at most ``session.source.max_line_bytes()`` (128 MiB), else None: a FIFO is
    not waited on, and a file larger than any instruction file (or than memory) is not read (Pi, which holds a file
    in one string, cannot read one past 512 MiB either)."""
    from pi_compact.session.source import max_line_bytes

    limit = max_line_bytes()
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            data = handle.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:  # grown meanwhile
        return None
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def _load_from_dir(directory: str, origin: Origin) -> ContextFile | None:
    """The first candidate name that is a readable regular file in ``directory`` (Pi's loadContextFileFromDir)."""
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(directory, name)
        if not os.path.exists(path) or not os.path.isfile(path):
            continue
        content = _read_text(path)
        if content is not None:
            return ContextFile(path, content, origin)
    return None


def _git_paths(cwd: str) -> tuple[str, str] | None:
    """(worktree root, common git dir) of the repository holding ``cwd`` (Pi's findGitPaths)."""
    directory = cwd
    while True:
        git = os.path.join(directory, ".git")
        if os.path.exists(git):
            if os.path.isfile(git):
                text = _read_text(git)
                if text is None:
                    return None
                text = text.strip()
                if not text.startswith("gitdir: "):
                    return None
                git_dir = os.path.abspath(os.path.join(directory, text[len("gitdir: ") :].strip()))
                if not os.path.exists(os.path.join(git_dir, "HEAD")):
                    return None
                common_file = os.path.join(git_dir, "commondir")
                common = git_dir
                if os.path.exists(common_file):
                    common_text = _read_text(common_file)
                    if common_text is None:
                        return None
                    common = os.path.abspath(os.path.join(git_dir, common_text.strip()))
                return directory, common
            if os.path.isdir(git):
                return (directory, git) if os.path.exists(os.path.join(git, "HEAD")) else None
            return None
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _within(parent: str, child: str) -> bool:
    parent, child = os.path.abspath(parent), os.path.abspath(child)
    return child == parent or child.startswith(parent if parent.endswith(os.sep) else parent + os.sep)


def _shadowed_context_file(cwd: str) -> str | None:
    """The main checkout's instruction file that a nested linked worktree's own file replaces, if any."""
    found = _git_paths(cwd)
    if found is None:
        return None
    repo_dir, common_dir = found
    common = os.path.realpath(common_dir)
    worktree_root = os.path.realpath(repo_dir)
    main_root = os.path.dirname(common)
    if not _within(main_root, worktree_root) or os.path.abspath(worktree_root) == os.path.abspath(main_root):
        return None
    if os.path.abspath(os.path.realpath(os.path.join(main_root, ".git"))) != os.path.abspath(common):
        return None
    own = _load_from_dir(worktree_root, "project")
    return os.path.join(main_root, os.path.basename(own.path)) if own is not None else None


def context_files_for(
    cwd: str, agent_dir: Path | None = None, extra: Sequence[str | os.PathLike[str]] = ()
) -> list[ContextFile]:
    """The instruction files Pi would load for ``cwd`` that exist here, then ``extra`` (given by the user).

    ``agent_dir`` defaults to Pi's (``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``).
    """
    if agent_dir is None:
        from pi_compact.pi.settings import agent_dir as default_agent_dir

        agent_dir = default_agent_dir()
    files: list[ContextFile] = []
    seen: set[str] = set()
    global_file = _load_from_dir(_resolve(os.fspath(agent_dir)), "global")
    if global_file is not None:
        files.append(global_file)
        seen.add(global_file.path)
    if cwd:
        resolved_cwd = _resolve(cwd)
        shadowed = _shadowed_context_file(resolved_cwd)
        ancestors: list[ContextFile] = []
        directory = resolved_cwd
        while True:
            found = _load_from_dir(directory, "project")
            is_shadowed = (
                shadowed is not None
                and found is not None
                and os.path.join(os.path.realpath(directory), os.path.basename(found.path)) == shadowed
            )
            if found is not None and not is_shadowed and found.path not in seen:
                ancestors.insert(0, found)
                seen.add(found.path)
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        files.extend(ancestors)
    for item in extra:
        loaded = load_context_file(item)
        if loaded is not None and loaded.path not in seen:
            files.append(loaded)
            seen.add(loaded.path)
    return files


def load_context_file(path: str | os.PathLike[str], origin: Origin = "extra") -> ContextFile | None:
    """One instruction file named by the user, or None when it is missing or unreadable."""
    resolved = _resolve(os.fspath(path))
    if not os.path.isfile(resolved):
        return None
    content = _read_text(resolved)
    return ContextFile(resolved, content, origin) if content is not None else None


def context_files_from_session(entries: Sequence[Entry]) -> list[ContextFile]:
    """The project-instruction blocks of the system prompt that ``entries`` (system messages replayed) set up."""
    messages = [m for entry in entries for m in entry_messages(entry) if m.get("role") == "system"]
    system = current_system_message(messages)
    if system is None:
        return []
    parts = [content_text(system.get("content") or "")]
    sections = system.get("sections")
    if isinstance(sections, dict):
        parts.extend(v for v in sections.values() if isinstance(v, str))
    files: list[ContextFile] = []
    for part in parts:
        for match in PROJECT_INSTRUCTIONS.finditer(part):
            files.append(ContextFile(match.group(1), match.group(2), "session"))
    return files
