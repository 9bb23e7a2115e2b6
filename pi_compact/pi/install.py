"""Install, inspect and remove picompact's Pi extension (no printing; the CLI reports).

An install writes two files into a directory Pi discovers extensions in:

- ``index.ts``: the extension (package data, copied byte for byte; Pi loads TypeScript itself);
- ``install.json``: what this install wrote, the absolute command that runs this picompact (Pi may run with
  a PATH that does not hold the venv picompact lives in), its version and the default mode.

``install.json`` records the SHA-256 of every file written, so a later install or uninstall can tell a file the
user changed (left alone without ``force``) from one picompact wrote (replaced or removed).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import orjson

from pi_compact import __version__
from pi_compact.errors import PiCompactError, UsageError
from pi_compact.settings import CONFIG_DIR_NAME, agent_dir, expand_path

EXTENSION_DIR_NAME = "picompact"
ENTRY_FILE = "index.ts"
MANIFEST_FILE = "install.json"
MANIFEST_SCHEMA = 1
MODES = ("verbatim", "summary")

Scope = Literal["global", "project"]


class InstallError(PiCompactError):
    """The install would overwrite or remove something picompact did not write (exit 2)."""


def extension_source() -> bytes:
    """The extension's TypeScript, as shipped in the package."""
    return resources.files("pi_compact.pi").joinpath("extension", ENTRY_FILE).read_bytes()


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

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": MANIFEST_SCHEMA,
            "command": self.command,
            "version": self.version,
            "mode": self.mode,
            "scope": self.scope,
            "files": self.files,
        }


def read_manifest(directory: Path) -> Manifest | None:
    """The manifest in ``directory``; None when there is none; InstallError when it is unreadable."""
    path = directory / MANIFEST_FILE
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise InstallError(f"cannot read the install record: {exc}", path=str(path)) from None
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("command"), list)
        and all(isinstance(part, str) for part in data["command"])
        and isinstance(data.get("files"), dict)
    )
    if not ok:
        raise InstallError("not a picompact install record", path=str(path))
    return Manifest(
        command=list(data["command"]),
        version=str(data.get("version", "")),
        mode=str(data.get("mode", "verbatim")),
        scope=str(data.get("scope", "")),
        files={str(k): str(v) for k, v in data["files"].items()},
    )


@dataclass
class InstallResult:
    directory: Path
    scope: Scope
    command: list[str]
    mode: str
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    replaced_changed: list[Path] = field(default_factory=list)  # user-changed files overwritten with --force

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "scope": self.scope,
            "command": self.command,
            "mode": self.mode,
            "version": __version__,
            "written": [str(p) for p in self.written],
            "unchanged": [str(p) for p in self.unchanged],
            "replaced_changed": [str(p) for p in self.replaced_changed],
        }


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def install(
    scope: Scope = "global",
    *,
    mode: str = "verbatim",
    force: bool = False,
    cwd: str | os.PathLike[str] | None = None,
    command: list[str] | None = None,
) -> InstallResult:
    """Write the extension and its install record; refuse to overwrite a file picompact did not write."""
    if mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)} (got {mode!r})")
    directory = extension_dir(scope, cwd)
    previous = read_manifest(directory) if directory.is_dir() else None
    source = extension_source()
    cmd = command or picompact_command()
    result = InstallResult(directory, scope, cmd, mode)
    if directory.exists() and not directory.is_dir():
        raise InstallError("exists and is not a directory", path=str(directory))
    if directory.is_dir() and previous is None and any(directory.iterdir()) and not force:
        raise InstallError(
            "this directory holds files picompact did not install; move them away or use --force", path=str(directory)
        )
    target = directory / ENTRY_FILE
    if target.exists():
        current = target.read_bytes()
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
    directory.mkdir(parents=True, exist_ok=True)
    if target not in result.unchanged:
        _write_atomic(target, source)
        result.written.append(target)
    manifest = Manifest(cmd, __version__, mode, scope, {ENTRY_FILE: _sha256(source)})
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

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": str(self.directory),
            "scope": self.scope,
            "installed": self.installed,
            "removed": [str(p) for p in self.removed],
            "kept": [str(p) for p in self.kept],
            "removed_directory": self.removed_directory,
        }


def uninstall(
    scope: Scope = "global", *, force: bool = False, cwd: str | os.PathLike[str] | None = None
) -> UninstallResult:
    """Remove exactly the files install wrote (a file changed since is kept unless ``force``), then the
    directory if nothing else is left in it."""
    directory = extension_dir(scope, cwd)
    result = UninstallResult(directory, scope)
    manifest = read_manifest(directory) if directory.is_dir() else None
    if manifest is None:
        result.installed = False
        return result
    for name, digest in manifest.files.items():
        path = directory / name
        if not path.exists():
            continue
        if _sha256(path.read_bytes()) != digest and not force:
            result.kept.append(path)
            continue
        path.unlink()
        result.removed.append(path)
    if not result.kept:
        (directory / MANIFEST_FILE).unlink(missing_ok=True)
        result.removed.append(directory / MANIFEST_FILE)
        with contextlib.suppress(OSError):  # other files live there: not ours to remove
            directory.rmdir()
            result.removed_directory = True
    return result


# ---------------------------------------------------------------------------------------------------------------
# Status


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

    def to_json(self) -> dict[str, Any]:
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


def _command_version(command: list[str]) -> str | None:
    """``COMMAND --version`` -> its version, or None when it does not run."""
    import subprocess

    exe = Path(command[0])
    if not exe.is_file() or not os.access(exe, os.X_OK):
        return None
    try:
        proc = subprocess.run([*command, "--version"], capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    text = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or not text.startswith("picompact "):
        return None
    return text.removeprefix("picompact ").strip()


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
    if entry.exists():
        digest = _sha256(entry.read_bytes())
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


def project_trust(cwd: str | os.PathLike[str] | None = None) -> tuple[bool | None, str]:
    """Whether Pi trusts the project at ``cwd`` (its ``trust.json``, then ``defaultProjectTrust``), and what
    that means for a project install, in words. None: undecided (Pi asks in interactive mode)."""
    from pi_compact.settings import _trust_decision, load_settings

    where = os.fspath(cwd if cwd is not None else os.getcwd())
    warnings: list[str] = []
    decision = _trust_decision(expand_path(where), agent_dir(), warnings)
    if decision is None:
        default = load_settings(where, project_trusted=False).merged.get("defaultProjectTrust", "ask")
        if default == "always":
            decision = True
        elif default == "never":
            decision = False
    if decision is True:
        return True, "trusted: Pi loads project extensions and settings here"
    if decision is False:
        return False, "not trusted: Pi ignores project extensions and settings here (use /trust in Pi to change it)"
    return None, (
        "trust undecided: interactive Pi asks (/trust, or --approve); print, json and RPC modes skip project "
        "extensions and settings silently"
    )
