"""Where Pi loads extensions from, whether it trusts a project, and what picompact's install recorded there.

Pi discovers extensions in ``<agent dir>/extensions/`` (every session) and ``<cwd>/.pi/extensions/`` (only in a
project Pi trusts). picompact's install writes ``index.ts`` and an ``install.json`` record into a ``picompact``
folder there (``pi_compact.extension.install``); this module only reads. A project's record comes with the
repository, so it is untrusted input: read without following links, bounded, and never run.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from pi_compact.errors import InstallError
from pi_compact.pi.settings import CONFIG_DIR_NAME, agent_dir, expand_path

EXTENSION_DIR_NAME = "picompact"
ENTRY_FILE = "index.ts"
MANIFEST_FILE = "install.json"
MANIFEST_SCHEMA = 1

Scope = Literal["global", "project"]


def extension_dir(scope: Scope, cwd: str | os.PathLike[str] | None = None) -> Path:
    """Where Pi discovers the extension: ``<agent dir>/extensions/picompact`` or ``<cwd>/.pi/extensions/picompact``."""
    if scope == "global":
        return agent_dir() / "extensions" / EXTENSION_DIR_NAME
    base = Path(expand_path(os.fspath(cwd if cwd is not None else os.getcwd())))
    return base / CONFIG_DIR_NAME / "extensions" / EXTENSION_DIR_NAME


@dataclass(frozen=True)
class Manifest:
    """The contents of ``install.json``."""

    command: list[str]
    version: str
    mode: str
    scope: str
    files: dict[str, str]  # file name -> sha256 of what install wrote
    created: list[str] = field(default_factory=list)  # folders above the extension's that install created

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": MANIFEST_SCHEMA,
            "command": self.command,
            "version": self.version,
            "mode": self.mode,
            "scope": self.scope,
            "files": self.files,
            "created": self.created,
        }


MAX_RECORD_BYTES = 1 << 20  # install.json and index.ts are a few KiB; anything bigger is not ours


def read_regular(path: Path, limit: int = MAX_RECORD_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, opened without following a symbolic link and without
    blocking on a FIFO; InstallError for anything else (FileNotFoundError passes through)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InstallError(
                "is a symbolic link; picompact reads and writes only its own files", path=str(path)
            ) from None
        if isinstance(exc, FileNotFoundError):
            raise
        raise InstallError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InstallError("is not a regular file", path=str(path))
        if info.st_size > limit:
            raise InstallError(f"is larger than {limit:,} bytes: not a file picompact wrote", path=str(path))
        data = bytearray()
        while chunk := os.read(fd, limit + 1 - len(data)):  # a file that grows past the bound is refused too
            data += chunk
            if len(data) > limit:
                raise InstallError(f"is larger than {limit:,} bytes: not a file picompact wrote", path=str(path))
        return bytes(data)
    finally:
        os.close(fd)


def read_manifest(directory: Path) -> Manifest | None:
    """The manifest in ``directory``; None when there is none; InstallError when it is unreadable."""
    path = directory / MANIFEST_FILE
    try:
        data = orjson.loads(read_regular(path))
    except FileNotFoundError:
        return None
    except orjson.JSONDecodeError as exc:
        raise InstallError(f"cannot read the install record: {exc}", path=str(path)) from None
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("command"), list)
        and all(isinstance(part, str) for part in data["command"])
        and isinstance(data.get("files"), dict)
    )
    if not ok:
        raise InstallError("not a picompact install record", path=str(path))
    created = data.get("created")
    return Manifest(
        command=list(data["command"]),
        version=str(data.get("version", "")),
        mode=str(data.get("mode", "verbatim")),
        scope=str(data.get("scope", "")),
        files={str(k): str(v) for k, v in data["files"].items()},
        created=[str(c) for c in created] if isinstance(created, list) else [],
    )


def project_trust(cwd: str | os.PathLike[str] | None = None) -> tuple[bool | None, str]:
    """Whether Pi trusts the project at ``cwd`` (its ``trust.json``, then ``defaultProjectTrust``), and what
    that means for a project install, in words. None: undecided (Pi asks in interactive mode)."""
    from pi_compact.pi.settings import project_trust_decision

    decision = project_trust_decision(os.fspath(cwd if cwd is not None else os.getcwd()), agent_dir())
    if decision is True:
        return True, "trusted: Pi loads project extensions and settings here"
    if decision is False:
        return False, "not trusted: Pi ignores project extensions and settings here (use /trust in Pi to change it)"
    return None, (
        "trust undecided: interactive Pi asks (/trust, or --approve); print, json and RPC modes skip project "
        "extensions and settings silently"
    )


def tools_installed(cwd: str | os.PathLike[str]) -> bool:
    """Whether Pi sessions in ``cwd`` get the ``context_*`` recovery tools: the extension is installed (globally,
    or in the project and the project is trusted) and not disabled in settings.

    This one decision picks what a verbatim checkpoint advertises for recovery (the tools, or shell commands),
    for ``picompact compact`` and for the extension alike."""
    from pi_compact.pi.config import load_config

    def installed(scope: Any) -> bool:
        directory = extension_dir(scope, cwd)
        try:
            return directory.is_dir() and read_manifest(directory) is not None
        except InstallError:
            return False

    found = installed("global") or (installed("project") and project_trust(cwd)[0] is True)
    if not found:
        return False
    try:
        return load_config(cwd).enabled
    except Exception:  # unreadable settings: the extension would still load
        return True
