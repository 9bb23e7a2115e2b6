"""The session files a cross-session search covers: Pi's sessions tree (``<agent dir>/sessions/<project>/*.jsonl``,
or the configured session directory), and any other trees named with ``--dir`` (walked to any depth).

A directory that cannot be listed is reported (path, reason) and skipped; so is a file that cannot be stat'ed.
Only regular ``*.jsonl`` files count; symlinks to directories are not followed (a loop cannot hang the walk),
symlinks to files are (Pi follows them too). A file reached by several names (hard links, symlinks, two roots)
is listed once.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pi_compact.pi.sessions import os_reason, search_locations


class FoundFiles:
    """The files found, each with its stat, sorted by path; and what could not be read (path, reason)."""

    __slots__ = ("files", "roots", "unreadable")

    def __init__(
        self,
        files: list[tuple[str, os.stat_result]],
        unreadable: list[tuple[str, str]] | None = None,
        roots: list[str] | None = None,
    ) -> None:
        self.files = files
        self.unreadable = [] if unreadable is None else unreadable
        self.roots = [] if roots is None else roots

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FoundFiles):
            return NotImplemented
        return (self.files, self.unreadable, self.roots) == (other.files, other.unreadable, other.roots)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FoundFiles(files={self.files!r}, unreadable={self.unreadable!r}, roots={self.roots!r})"


def default_root(cwd: str | None = None) -> Path:
    """The sessions tree Pi writes to: the configured session directory, else ``<agent dir>/sessions``."""
    return search_locations(cwd, all_=True)[0]


def _walk(root: str, depth: int | None, files: dict[str, os.stat_result], problems: list[tuple[str, str]]) -> None:
    """``root`` (absolute, normalized) walked: each file stat'ed by its name in its directory (``dir_fd``), which
    spares the kernel looking up the whole path again for every file."""
    stack = [(root, 0)]
    while stack:
        directory, level = stack.pop()
        try:
            fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            if directory != root:
                problems.append((directory, "no such directory"))
            continue
        except OSError as exc:
            problems.append((directory, os_reason(exc)))
            continue
        try:
            try:
                with os.scandir(fd) as listing:
                    entries = list(listing)
            except OSError as exc:
                problems.append((directory, os_reason(exc)))
                continue
            prefix = directory if directory.endswith("/") else directory + "/"
            for item in entries:
                name = item.name
                path = prefix + name  # what os.path.join makes of them
                try:
                    if item.is_dir(follow_symlinks=False):
                        if depth is None or level < depth:
                            stack.append((path, level + 1))
                        continue
                    if not name.endswith(".jsonl"):
                        continue
                    st = os.stat(name, dir_fd=fd)
                except OSError as exc:
                    problems.append((path, os_reason(exc)))
                    continue
                if stat.S_ISREG(st.st_mode):
                    files[path] = st
        finally:
            os.close(fd)


def session_files(dirs: list[str] | None = None, *, include_default: bool = True, cwd: str | None = None) -> FoundFiles:
    """Every ``*.jsonl`` file of Pi's sessions tree (``include_default``; the layout Pi reads: the files of the
    tree and of its project folders) and of each of ``dirs`` (any depth), by path."""
    files: dict[str, os.stat_result] = {}
    problems: list[tuple[str, str]] = []
    roots: list[str] = []
    if include_default:
        root = os.path.abspath(default_root(cwd))
        roots.append(root)
        _walk(root, 1, files, problems)
    for given in dirs or []:
        root = os.path.abspath(given)
        roots.append(root)
        if not os.path.isdir(root):
            problems.append((root, "not a directory" if os.path.exists(root) else "no such directory"))
            continue
        _walk(root, None, files, problems)
    return FoundFiles(sorted(_one_name_each(files).items()), problems, roots)


def _one_name_each(files: dict[str, os.stat_result]) -> dict[str, os.stat_result]:
    """One path per file (``st_dev``, ``st_ino``): a session reached through a hard link, a symlink or two roots is
    searched once, by its first name that is not a symlink (else its first name), the same one every time."""
    by_file: dict[tuple[int, int], list[str]] = {}
    for path, st in files.items():
        by_file.setdefault((st.st_dev, st.st_ino), []).append(path)
    if len(by_file) == len(files):
        return files
    kept: dict[str, os.stat_result] = {}
    for paths in by_file.values():
        paths.sort()
        name = next((p for p in paths if not os.path.islink(p)), paths[0])
        kept[name] = files[name]
    return kept
