"""Install, inspect and remove picompact's Pi extension (no printing; the CLI reports).

An install writes two files into a directory Pi discovers extensions in:

- ``index.ts``: the extension (package data, copied byte for byte; Pi loads TypeScript itself);
- ``install.json``: what this install wrote, the absolute command that runs this picompact (Pi may run with
  a PATH that does not hold the venv picompact lives in), its version and the default mode.

``install.json`` records the SHA-256 of every file written, so a later install or uninstall can tell a file the
user changed (left alone without ``force``) from one picompact wrote (replaced or removed).

A project's ``.pi/`` comes with the repository, so its install record is untrusted input: nothing here runs the
command it names (status reads the version from the files of that picompact), uninstall removes only plain file
names inside the extension directory, and no file is written or read through a symbolic link planted there.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TypedDict

import orjson

from pi_compact.errors import InstallError, UsageError
from pi_compact.pi.extensions import (
    ENTRY_FILE,
    MANIFEST_FILE,
    Manifest,
    Scope,
    extension_dir,
    read_manifest,
    read_regular,
)
from pi_compact.version import __version__

MODES = ("verbatim", "summary")


def extension_source() -> bytes:
    """The extension's TypeScript, as shipped in the package."""
    return resources.files("pi_compact.extension").joinpath(ENTRY_FILE).read_bytes()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def picompact_command() -> list[str]:
    """The absolute command that runs this picompact, wherever Pi's PATH points.

    The console script when we were started through it (a venv's ``bin/picompact``), else this interpreter with
    ``-m pi_compact``."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "picompact" and argv0.is_file():
        return [str(argv0.absolute())]
    beside = Path(sys.executable).parent / "picompact"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "pi_compact"]


def _own_name(name: str) -> bool:
    """Whether a manifest's file name is a plain name inside the extension directory (no path, no ``..``)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def _refuse_links(scope: Scope, directory: Path) -> None:
    """A project install's folders (``.pi``, ``.pi/extensions``, ``.pi/extensions/picompact``) come with the
    repository: refuse any that is a symbolic link, so nothing is written or removed outside the project."""
    if scope != "project":
        return
    for folder in (directory.parent.parent, directory.parent, directory):
        if folder.is_symlink():
            raise InstallError("is a symbolic link; a project install writes only inside the project", path=str(folder))


class InstallJSON(TypedDict):
    """``InstallResult.to_json()``: what ``pi install --json`` prints of the install."""

    directory: str
    scope: str
    command: list[str]
    mode: str
    previous_mode: str | None
    state: str
    version: str
    written: list[str]
    unchanged: list[str]
    replaced_changed: list[str]
    replaced_other: UninstallJSON | None


class UninstallJSON(TypedDict):
    """``UninstallResult.to_json()``: the ``pi uninstall --json`` document."""

    directory: str
    scope: str
    installed: bool
    removed: list[str]
    kept: list[str]
    kept_record: str | None
    removed_directory: bool
    removed_folders: list[str]
    refused: list[str]


@dataclass
class InstallResult:
    directory: Path
    scope: Scope
    command: list[str]
    mode: str
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    replaced_changed: list[Path] = field(default_factory=list)  # user-changed files overwritten with --force
    previous_mode: str | None = None  # the mode of the install this one updated (None: a first install)
    previous_version: str | None = None
    previous_command: list[str] | None = None
    replaced_other: UninstallResult | None = None  # --replace: the other scope's copy, removed

    @property
    def state(self) -> str:
        """installed (a first install, or a new index.ts), updated (only the record changed) or unchanged."""
        if any(p.name == ENTRY_FILE for p in self.written) or self.previous_mode is None:
            return "installed"
        same = (self.previous_mode, self.previous_version, self.previous_command) == (
            self.mode,
            __version__,
            self.command,
        )
        return "unchanged" if same else "updated"

    def to_json(self) -> InstallJSON:
        return {
            "directory": str(self.directory),
            "scope": self.scope,
            "command": self.command,
            "mode": self.mode,
            "previous_mode": self.previous_mode,
            "state": self.state,
            "version": __version__,
            "written": [str(p) for p in self.written],
            "unchanged": [str(p) for p in self.unchanged],
            "replaced_changed": [str(p) for p in self.replaced_changed],
            "replaced_other": self.replaced_other.to_json() if self.replaced_other else None,
        }


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` via a new temp file beside it (created exclusively, so a planted name or link is never
    followed) and a rename, which replaces a link at ``path`` rather than writing through it."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, 0o644)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(name, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def _other(scope: Scope) -> Scope:
    return "project" if scope == "global" else "global"


def _where(scope: Scope) -> str:
    return "globally" if scope == "global" else "in this project"


def _uninstall_flag(scope: Scope) -> str:
    return "picompact pi uninstall" + (" --project" if scope == "project" else "")


def _other_install(scope: Scope, cwd: str | os.PathLike[str] | None) -> tuple[bool, Manifest | None]:
    """Whether the extension is installed in the other scope, and its record when it can be read."""
    directory = extension_dir(_other(scope), cwd)
    try:
        manifest = read_manifest(directory) if directory.is_dir() else None
    except InstallError:
        return True, None  # something is there: not ours to overwrite silently
    return manifest is not None, manifest


def _refuse_second_copy(scope: Scope, cwd: str | os.PathLike[str] | None, replace: bool) -> UninstallResult | None:
    """A global and a project install both load in a trusted project: refuse a second copy, or with ``replace``
    remove the other one first (what the user changed there is kept, and the install refused)."""
    other = _other(scope)
    directory = extension_dir(other, cwd)
    if not _other_install(scope, cwd)[0]:
        return None
    flag = " --project" if scope == "project" else ""
    if not replace:
        raise InstallError(
            f"picompact's extension is already installed {_where(other)}; a second copy would load beside it in a "
            f"trusted project. Keep one: `{_uninstall_flag(other)}` first, or "
            f"`picompact pi install{flag} --replace` to move it here",
            path=str(directory),
        )
    removed = uninstall(other, cwd=cwd)
    if removed.kept or removed.refused:
        raise InstallError(
            f"--replace kept files changed since they were installed; remove them (`{_uninstall_flag(other)} "
            "--force`) and install again",
            path=str(directory),
        )
    return removed


def install(
    scope: Scope = "global",
    *,
    mode: str | None = None,
    force: bool = False,
    replace: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    command: list[str] | None = None,
) -> InstallResult:
    """Write the extension and its install record; refuse to overwrite a file picompact did not write, and
    refuse a second copy in the other scope (``replace``: remove that one). ``mode`` None keeps the recorded
    mode (verbatim for a first install)."""
    if mode is not None and mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)} (got {mode!r})")
    directory = extension_dir(scope, cwd)
    _refuse_links(scope, directory)
    previous = read_manifest(directory) if directory.is_dir() else None
    source = extension_source()
    cmd = command or picompact_command()
    moved = previous or (_other_install(scope, cwd)[1] if replace else None)  # --replace moves the copy here
    chosen = mode or (moved.mode if moved and moved.mode in MODES else "verbatim")
    result = InstallResult(directory, scope, cmd, chosen)
    if previous is not None:
        result.previous_mode, result.previous_version = previous.mode, previous.version
        result.previous_command = previous.command
    if directory.exists() and not directory.is_dir():
        raise InstallError("exists and is not a directory", path=str(directory))
    if directory.is_dir() and previous is None and any(directory.iterdir()) and not force:
        raise InstallError(
            "this directory holds files picompact did not install; move them away or use --force", path=str(directory)
        )
    target = directory / ENTRY_FILE
    if target.exists() or target.is_symlink():
        current = read_regular(target)
        recorded = previous.files.get(ENTRY_FILE) if previous else None
        if _sha256(current) == _sha256(source):
            result.unchanged.append(target)
        elif recorded != _sha256(current):
            if not force:
                raise InstallError(
                    "changed since picompact installed it; keep your changes elsewhere, or use --force to replace it",
                    path=str(target),
                )
            result.replaced_changed.append(target)
    result.replaced_other = _refuse_second_copy(scope, cwd, replace)
    created = [str(d) for d in reversed(directory.parents) if not d.exists()]
    if not directory.exists():
        created.append(str(directory))
    directory.mkdir(parents=True, exist_ok=True)
    if target not in result.unchanged:
        _write_atomic(target, source)
        result.written.append(target)
    kept = [c for c in (previous.created if previous else []) if c not in created]
    folders = [c for c in [*kept, *created] if c != str(directory)]
    manifest = Manifest(cmd, __version__, chosen, scope, {ENTRY_FILE: _sha256(source)}, folders)
    _write_atomic(directory / MANIFEST_FILE, orjson.dumps(manifest.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
    result.written.append(directory / MANIFEST_FILE)
    return result


@dataclass
class UninstallResult:
    directory: Path
    scope: Scope
    removed: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)  # changed by the user (kept without --force)
    removed_directory: bool = False
    installed: bool = True
    refused: list[str] = field(default_factory=list)  # manifest names outside the extension directory: never touched
    kept_record: Path | None = None  # install.json, kept with a kept file (it records what to remove later)
    removed_folders: list[Path] = field(default_factory=list)  # empty folders install had created above it

    def to_json(self) -> UninstallJSON:
        return {
            "directory": str(self.directory),
            "scope": self.scope,
            "installed": self.installed,
            "removed": [str(p) for p in self.removed],
            "kept": [str(p) for p in self.kept],
            "kept_record": str(self.kept_record) if self.kept_record else None,
            "removed_directory": self.removed_directory,
            "removed_folders": [str(p) for p in self.removed_folders],
            "refused": self.refused,
        }


def uninstall(
    scope: Scope = "global", *, force: bool = False, cwd: str | os.PathLike[str] | None = None
) -> UninstallResult:
    """Remove exactly the files install wrote (a file changed since is kept unless ``force``), then the
    directory if nothing else is left in it."""
    directory = extension_dir(scope, cwd)
    result = UninstallResult(directory, scope)
    _refuse_links(scope, directory)
    manifest = read_manifest(directory) if directory.is_dir() else None
    if manifest is None:
        result.installed = False
        return result
    for name, digest in manifest.files.items():
        if not _own_name(name) or name == MANIFEST_FILE:
            result.refused.append(name)
            continue
        path = directory / name
        if path.is_symlink():  # not a file install wrote: it writes regular files only
            result.kept.append(path)
            continue
        if not path.exists():
            continue
        try:
            current = read_regular(path)
        except InstallError:
            result.kept.append(path)
            continue
        if _sha256(current) != digest and not force:
            result.kept.append(path)
            continue
        path.unlink()
        result.removed.append(path)
    if result.kept:
        result.kept_record = directory / MANIFEST_FILE
        return result
    (directory / MANIFEST_FILE).unlink(missing_ok=True)
    result.removed.append(directory / MANIFEST_FILE)
    with contextlib.suppress(OSError):  # other files live there: not ours to remove
        directory.rmdir()
        result.removed_directory = True
    if result.removed_directory:
        # The folders above it that install created, deepest first, while they are empty; only ancestors of the
        # extension directory (a project's record comes with the repository), never through a symbolic link.
        above = directory.parents if scope == "global" else directory.parents[:2]  # a project: .pi/extensions, .pi
        ancestors = {str(p): p for p in above}
        for name in sorted(set(manifest.created), key=len, reverse=True):
            folder = ancestors.get(name)
            if folder is None or folder.is_symlink():
                continue
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue
            except OSError:
                break  # not empty: nothing above it is empty either
            result.removed_folders.append(folder)
    return result


# ---------------------------------------------------------------------------------------------------------------
# Status


class InstallStatusJSON(TypedDict):
    """``InstallStatus.to_json()``: one of ``pi status --json``'s ``installs``."""

    scope: str
    directory: str
    installed: bool
    error: str | None
    extension: str
    command: list[str] | None
    command_ok: bool
    installed_version: str | None
    command_version: str | None
    mode: str | None
    loads: str


@dataclass
class InstallStatus:
    """One install location: what is there and whether it would work."""

    scope: Scope
    directory: Path
    installed: bool
    manifest: Manifest | None = None
    error: str | None = None
    entry_state: str = "missing"  # missing | current (this picompact's extension) | outdated | changed
    command_ok: bool = False
    command_version: str | None = None
    loads: str = ""  # when Pi loads it

    def to_json(self) -> InstallStatusJSON:
        m = self.manifest
        return {
            "scope": self.scope,
            "directory": str(self.directory),
            "installed": self.installed,
            "error": self.error,
            "extension": self.entry_state,
            "command": m.command if m else None,
            "command_ok": self.command_ok,
            "installed_version": m.version if m else None,
            "command_version": self.command_version,
            "mode": m.mode if m else None,
            "loads": self.loads,
        }


SCRIPT_MARK = b"from pi_compact.cli import main"  # the console script pip writes for picompact
SH_EXEC = b"'''exec' \""  # pip's /bin/sh trampoline for an interpreter path too long for a #! line


def _script_interpreter(script: Path) -> Path | None:
    """The interpreter of picompact's console script at ``script``, read from its first lines (pip writes
    ``#!PYTHON``, or ``#!/bin/sh`` and an exec line for a long path); None when it is not that script."""
    try:
        head = read_regular(script, limit=64 * 1024)
    except (OSError, InstallError):
        return None
    if not head.startswith(b"#!") or SCRIPT_MARK not in head:
        return None
    first, _, rest = head[2:].partition(b"\n")
    words = first.strip().split()
    if words and words[0] == b"/bin/sh":
        second = rest.partition(b"\n")[0]
        if not second.startswith(SH_EXEC):
            return None
        words = [second[len(SH_EXEC) :].partition(b'"')[0]]
    if not words or not words[0]:
        return None
    return Path(os.fsdecode(words[0]))


def _distribution_version(interpreter: Path) -> str | None:
    """The version of the picompact distribution installed for ``interpreter``, read from its metadata
    (``picompact-VERSION.dist-info/METADATA`` in the site directories of its prefix, or the user's)."""
    prefix = interpreter.parent.parent
    roots = [prefix / "lib", prefix / "lib64", prefix / "local" / "lib", Path.home() / ".local" / "lib"]
    for root in roots:
        for site in sorted(root.glob("python3*/*-packages")):
            for info in sorted(site.glob("picompact-*.dist-info")):
                try:
                    text = read_regular(info / "METADATA").decode("utf-8", "replace")
                except (OSError, InstallError):
                    continue
                head = text.split("\n\n", 1)[0].split("\n")
                fields = dict(line.split(": ", 1) for line in head if ": " in line)
                if fields.get("Name", "").lower() == "picompact" and fields.get("Version"):
                    return fields["Version"].strip()
    return None


def _command_version(command: list[str]) -> str | None:
    """The version of the picompact that ``command`` runs, or None when it is not a working picompact.

    Read, never run: a project's install record comes with the repository, so its command is untrusted. This
    picompact's own command is known; otherwise the command must be an executable picompact console script, or
    ``PYTHON -m pi_compact``, and the version is that interpreter's picompact distribution metadata."""
    if command == picompact_command():
        return __version__
    exe = Path(command[0]) if command else Path()
    if not exe.is_absolute() or not exe.is_file() or not os.access(exe, os.X_OK):
        return None
    if command[1:] == ["-m", "pi_compact"]:
        interpreter: Path | None = exe
    elif len(command) == 1:
        interpreter = _script_interpreter(exe)
    else:
        return None
    if interpreter is None or not interpreter.is_file():
        return None
    return _distribution_version(interpreter)


def location_status(scope: Scope, cwd: str | os.PathLike[str] | None = None, trust: str = "") -> InstallStatus:
    directory = extension_dir(scope, cwd)
    status = InstallStatus(scope, directory, installed=False)
    try:
        manifest = read_manifest(directory) if directory.is_dir() else None
    except InstallError as exc:
        status.error = str(exc)
        return status
    if manifest is None:
        return status
    status.installed = True
    status.manifest = manifest
    entry = directory / ENTRY_FILE
    if entry.exists() or entry.is_symlink():
        try:
            digest = _sha256(read_regular(entry))
        except InstallError as exc:
            status.error = str(exc)
            return status
        if digest == _sha256(extension_source()):
            status.entry_state = "current"
        elif digest == manifest.files.get(ENTRY_FILE):
            status.entry_state = "outdated"
        else:
            status.entry_state = "changed"
    status.command_version = _command_version(manifest.command)
    status.command_ok = status.command_version is not None
    if scope == "global":
        status.loads = "in every Pi session (unless Pi runs with --no-extensions)"
    else:
        status.loads = trust
    return status
