"""Find a project's sessions the way Pi 1.6 finds them, so ``picompact check`` with no path opens the session
that ``pi --continue`` would resume, and ``picompact list`` shows what ``pi --resume`` shows.

Sessions live in ``<agent dir>/sessions/--<cwd with / \\ : turned into ->--/``, unless a session directory is
configured (``PI_CODING_AGENT_SESSION_DIR``, or ``sessionDir`` in the settings files). A file is a session when
its first parsed line is a header (``"type": "session"`` with a string ``id``); blank, malformed and falsy lines
before it are skipped, and a leading UTF-8 BOM makes the first line malformed, as it does for Pi.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from stat import S_ISREG
from typing import Any, TypedDict

from pi_compact.js import js_date
from pi_compact.pi.settings import expand_path, load_settings, project_trust_decision, resolve_agent_dir
from pi_compact.session.jsonline import parse_line, safe_text
from pi_compact.session.source import read_lines

ENV_SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR"
HEADER_SCAN_LIMIT = 1024 * 1024  # Pi gives up on a header not found in the first MiB
FIRST_MESSAGE_CHARS = 200
_CHUNK = 64 * 1024
# What JavaScript's String.prototype.trim removes.
_JS_WHITESPACE = (
    " \t\n\r\v\f\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


@dataclass(frozen=True)
class SessionSummary:
    """One session as a listing shows it.

    ``modified`` is Pi's notion of recency (the latest user/assistant message time, else the header time, else
    the file's mtime) and is what the list is sorted by; ``mtime`` is the file's own modification time.
    """

    path: Path
    id: str
    cwd: str
    name: str | None
    first_message: str | None
    entry_count: int
    message_count: int
    size: int
    modified: datetime
    mtime: datetime
    created: datetime | None
    parent_session: str | None


class SessionListingJSON(TypedDict):
    """``SessionListing.to_json()``: the ``sessions --json`` document."""

    sessions: list[dict[str, Any]]


@dataclass(frozen=True)
class SessionListing:
    """What ``picompact sessions`` shows: the sessions newest first, and the file picompact uses when no session
    is named (``pi --continue``'s pick; None when there is none)."""

    sessions: list[SessionSummary]
    default: Path | None
    # Directories that could not be listed (path, reason): their sessions are missing from ``sessions``
    unreadable: tuple[tuple[Path, str], ...] = ()

    def is_default(self, path: Path) -> bool:
        """Whether ``path`` is the default session (compared after resolving links)."""
        return self.default is not None and os.path.realpath(path) == os.path.realpath(self.default)

    def to_json(self) -> SessionListingJSON:
        return {
            "sessions": [
                {
                    "path": str(s.path),
                    "id": safe_text(s.id),
                    "cwd": safe_text(s.cwd),
                    "name": safe_text(s.name) if s.name else s.name,
                    "first_message": safe_text(s.first_message) if s.first_message else s.first_message,
                    "entries": s.entry_count,
                    "messages": s.message_count,
                    "size": s.size,
                    "modified": s.modified.isoformat(),
                    "file_modified": s.mtime.isoformat(),
                    "default": self.is_default(s.path),
                    "parent_session": safe_text(s.parent_session) if s.parent_session else None,
                }
                for s in self.sessions
            ],
        }


# --------------------------------------------------------------------------- parsing lines like JSON.parse


def _parse_line(line: bytes) -> Any:
    """Parse one line as Pi does (invalid UTF-8 replaced, lone surrogates, any depth); raise ValueError if malformed."""
    if not line.strip():
        raise ValueError("blank line")
    return parse_line(line).value


def _is_falsy(value: Any) -> bool:
    """JavaScript falsiness of a parsed JSON value: Pi skips such lines as if they were blank."""
    if value is None or value is False:
        return True
    if isinstance(value, (int, float)):
        return value == 0
    return value == ""


def _is_header(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def _header_from_line(line: bytes) -> tuple[bool, dict[str, Any] | None]:
    """(decided, header): undecided for blank/malformed/falsy lines, else the header or None (not a session)."""
    try:
        value = _parse_line(line)
    except ValueError:
        return False, None
    if _is_falsy(value):
        return False, None
    return True, value if _is_header(value) else None


def read_session_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The session header of ``path``, or None if it is not a Pi session (or unreadable, or no header in 1 MiB)."""
    try:
        with open(path, "rb") as handle:
            pending = b""
            scanned = 0
            while scanned < HEADER_SCAN_LIMIT:
                chunk = handle.read(min(_CHUNK, HEADER_SCAN_LIMIT - scanned))
                if not chunk:
                    return _header_from_line(pending)[1]
                scanned += len(chunk)
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    decided, header = _header_from_line(line)
                    if decided:
                        return header
            if handle.read(1):
                return None
            return _header_from_line(pending)[1]
    except OSError:
        return None


# --------------------------------------------------------------------------- where sessions are


def session_dir_for_cwd(cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str] | None = None) -> Path:
    """Pi's default session directory for ``cwd``: ``--<path, leading separator dropped, / \\ : as ->--``."""
    resolved = expand_path(os.fspath(cwd))
    safe = re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", resolved))
    return resolve_agent_dir(agent_dir) / "sessions" / f"--{safe}--"


def configured_session_dir(
    cwd: str | os.PathLike[str],
    *,
    agent_dir: str | os.PathLike[str] | None = None,
    session_dir: str | os.PathLike[str] | None = None,
) -> Path | None:
    """A session directory set by flag, ``$PI_CODING_AGENT_SESSION_DIR`` or ``sessionDir``; None for Pi's default.

    Pi 1.6 reads ``sessionDir`` from both settings files before it asks whether the project is trusted; picompact
    takes the project's ``.pi/settings.json`` only in a project Pi trusts without asking
    (``project_trust_decision``), so that a cloned repository cannot choose the sessions picompact reads (its
    planted sessions, say, that ``rules --write`` would turn into instructions). ``ignored_session_dir`` is the one
    left out.
    """
    if session_dir is not None and os.fspath(session_dir):
        return Path(expand_path(os.fspath(session_dir), base=cwd))
    env = os.environ.get(ENV_SESSION_DIR)
    if env:
        return Path(expand_path(env, base=cwd))
    trusted = project_trust_decision(cwd, agent_dir) is True
    configured = load_settings(cwd, agent_dir=agent_dir, project_trusted=trusted).merged.get("sessionDir")
    if isinstance(configured, str) and configured:
        return Path(expand_path(configured, base=cwd))
    return None


def ignored_session_dir(
    cwd: str | os.PathLike[str], *, agent_dir: str | os.PathLike[str] | None = None
) -> tuple[Path, Path] | None:
    """(the settings file, the directory) of a project's ``sessionDir`` that ``configured_session_dir`` leaves out
    because Pi does not trust the project without asking; None when there is none or it is used."""
    if os.environ.get(ENV_SESSION_DIR) or project_trust_decision(cwd, agent_dir) is True:
        return None
    loaded = load_settings(cwd, agent_dir=agent_dir, project_trusted=True)
    project = next((layer for layer in loaded.layers if layer.scope == "project"), None)
    value = project.data.get("sessionDir") if project is not None else None
    if project is None or not isinstance(value, str) or not value:
        return None
    return project.path, Path(expand_path(value, base=cwd))


def header_cwd_matches(value: Any, resolved_cwd: str) -> bool:
    """Whether a session header's ``cwd`` names the directory ``resolved_cwd`` (absolute, normalised). Pi writes
    the absolute directory it ran in; a relative one (``"."``, ``"proj"``) would match wherever picompact runs, so,
    unlike Pi's lexical resolve, it never matches."""
    return isinstance(value, str) and os.path.isabs(value) and expand_path(value) == resolved_cwd


def _cwd_matches(header: dict[str, Any], resolved_cwd: str) -> bool:
    return header_cwd_matches(header.get("cwd"), resolved_cwd)


Problems = list[tuple[Path, str]]  # directories that could not be listed, and why


def os_reason(exc: OSError) -> str:
    """An OS error as a short reason: "permission denied", "not a directory"."""
    reason = exc.strerror or type(exc).__name__
    return reason[:1].lower() + reason[1:]


def _jsonl_files(directory: Path, problems: Problems | None = None) -> Iterator[tuple[Path, os.stat_result]]:
    """The ``*.jsonl`` files of a directory; one that exists but cannot be listed is added to ``problems``."""
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return
    except OSError as exc:
        if problems is not None:
            problems.append((directory, os_reason(exc)))
        return
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        try:
            if entry.is_file():
                yield Path(entry.path), entry.stat()
        except OSError:
            continue


def _search_dir(
    cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str] | None, session_dir: str | os.PathLike[str] | None
) -> tuple[Path, bool]:
    """The directory to search, and whether Pi filters it by header cwd (only for a non-default directory)."""
    default = session_dir_for_cwd(cwd, agent_dir)
    custom = configured_session_dir(cwd, agent_dir=agent_dir, session_dir=session_dir)
    if custom is None:
        return default, False
    return custom, custom != default


def find_most_recent_session(
    cwd: str | os.PathLike[str],
    agent_dir: str | os.PathLike[str] | None = None,
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> Path | None:
    """The session ``pi --continue`` would resume in ``cwd``: the most recently modified valid session file.

    As in Pi, files in the default directory are not checked against the header ``cwd`` (the directory name
    already encodes it); in a configured session directory only sessions whose header ``cwd`` is ``cwd`` count.
    """
    directory, filter_cwd = _search_dir(cwd, agent_dir, session_dir)
    resolved_cwd = expand_path(os.fspath(cwd))
    files = sorted(_jsonl_files(directory), key=lambda item: (item[1].st_mtime_ns, item[0].name), reverse=True)
    for path, _ in files:
        header = read_session_header(path)
        if header is not None and (not filter_cwd or _cwd_matches(header, resolved_cwd)):
            return path
    return None


# --------------------------------------------------------------------------- listing


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = [
        text if isinstance(text := block.get("text"), str) else ""
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    return " ".join(parts)


def _activity_ms(entry: dict[str, Any], message: dict[str, Any]) -> float | None:
    stamp = message.get("timestamp")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return float(stamp)
    when = js_date(entry.get("timestamp"))
    return when.timestamp() * 1000 if when is not None else None


def summarize_session(path: str | os.PathLike[str]) -> SessionSummary | None:
    """Read one session file for a listing; None if it is not a Pi session or cannot be read. The file is read a
    line at a time (``session.source.read_lines``: a line too long to hold is read past), so a file of any size
    costs bounded memory."""
    path = Path(path)
    try:  # not blocking on a FIFO: only a regular file is read
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb", buffering=0) as stream:
            stat = os.fstat(stream.fileno())
            if not S_ISREG(stat.st_mode):
                return None
            return _summarize(path, stat, read_lines(stream))
    except OSError:
        return None


def _summarize(path: Path, stat: os.stat_result, lines: Iterable[bytes]) -> SessionSummary | None:
    header: dict[str, Any] | None = None
    entry_count = message_count = 0
    name: str | None = None
    first_message: str | None = None
    last_activity: float | None = None
    for line in lines:
        try:
            value = _parse_line(line)
        except ValueError:
            continue
        if _is_falsy(value):
            continue
        if header is None:
            if not _is_header(value):
                return None
            header = value
            continue
        entry_count += 1
        if not isinstance(value, dict):
            continue
        kind = value.get("type")
        if kind == "session_info":
            raw = value.get("name")
            name = raw.strip(_JS_WHITESPACE) or None if isinstance(raw, str) else None
            continue
        if kind != "message":
            continue
        message_count += 1
        message = value.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("role"), str) or "content" not in message:
            continue
        role = message["role"]
        if role not in ("user", "assistant"):
            continue
        activity = _activity_ms(value, message)
        if activity is not None:
            last_activity = max(last_activity or 0.0, activity)
        if first_message is None and role == "user":
            text = _message_text(message)
            if text:
                first_message = text[:FIRST_MESSAGE_CHARS]
    if header is None:
        return None
    mtime = datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    created = js_date(header.get("timestamp")) if isinstance(header.get("timestamp"), str) else None
    activity_time = js_date(last_activity) if last_activity is not None and last_activity > 0 else None
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    return SessionSummary(
        path=path,
        id=header["id"],
        cwd=cwd if isinstance(cwd, str) else "",
        name=name,
        first_message=first_message,
        entry_count=entry_count,
        message_count=message_count,
        size=stat.st_size,
        modified=activity_time or created or mtime,
        mtime=mtime,
        created=created,
        parent_session=parent if isinstance(parent, str) else None,
    )


def _summaries(directory: Path, problems: Problems | None = None) -> list[SessionSummary]:
    found = (summarize_session(path) for path, _ in _jsonl_files(directory, problems))
    return [summary for summary in found if summary is not None]


def _sort(sessions: list[SessionSummary]) -> list[SessionSummary]:
    """Newest first by Pi's ``modified``; ties by file mtime, then file name, newest first."""
    sessions.sort(key=lambda s: (s.modified, s.mtime, s.path.name), reverse=True)
    return sessions


def search_locations(
    cwd: str | os.PathLike[str] | None = None,
    all_: bool = False,
    agent_dir: str | os.PathLike[str] | None = None,
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> tuple[Path, str | None]:
    """Where ``list_sessions`` looks: the directory, and the header ``cwd`` it filters by (None: no filter)."""
    cwd = os.getcwd() if cwd is None else cwd
    if not all_:
        directory, filter_cwd = _search_dir(cwd, agent_dir, session_dir)
        return directory, expand_path(os.fspath(cwd)) if filter_cwd else None
    custom = configured_session_dir(cwd, agent_dir=agent_dir, session_dir=session_dir)
    return (custom if custom is not None else resolve_agent_dir(agent_dir) / "sessions"), None


def list_sessions(
    cwd: str | os.PathLike[str] | None = None,
    all_: bool = False,
    agent_dir: str | os.PathLike[str] | None = None,
    *,
    session_dir: str | os.PathLike[str] | None = None,
    problems: Problems | None = None,
) -> list[SessionSummary]:
    """Sessions of ``cwd`` (default: the current directory), or of every project with ``all_``, newest first.
    A directory that exists but cannot be listed is left out, and added to ``problems`` (path, reason).

    Mirrors Pi's session picker: a configured session directory is listed whole with ``all_``, and filtered by
    header ``cwd`` otherwise; without one, ``all_`` walks every project directory under ``<agent dir>/sessions``.
    """
    cwd = os.getcwd() if cwd is None else cwd
    if not all_:
        directory, filter_cwd = _search_dir(cwd, agent_dir, session_dir)
        sessions = _summaries(directory, problems)
        if filter_cwd:
            resolved = expand_path(os.fspath(cwd))
            sessions = [s for s in sessions if header_cwd_matches(s.cwd, resolved)]
        return _sort(sessions)
    custom = configured_session_dir(cwd, agent_dir=agent_dir, session_dir=session_dir)
    if custom is not None:
        return _sort(_summaries(custom, problems))
    root = resolve_agent_dir(agent_dir) / "sessions"
    sessions = []
    try:
        projects = [entry for entry in os.scandir(root) if entry.is_dir()]
    except FileNotFoundError:
        return []
    except OSError as exc:
        if problems is not None:
            problems.append((root, os_reason(exc)))
        return []
    for project in projects:
        sessions.extend(_summaries(Path(project.path), problems))
    return _sort(sessions)


def session_listing(
    cwd: str | os.PathLike[str] | None = None,
    all_: bool = False,
    agent_dir: str | os.PathLike[str] | None = None,
    *,
    session_dir: str | os.PathLike[str] | None = None,
) -> SessionListing:
    """``list_sessions`` together with the session picompact uses in ``cwd`` when none is named."""
    where = os.getcwd() if cwd is None else cwd
    problems: Problems = []
    return SessionListing(
        sessions=list_sessions(where, all_, agent_dir, session_dir=session_dir, problems=problems),
        default=find_most_recent_session(where, agent_dir, session_dir=session_dir),
        unreadable=tuple(problems),
    )
