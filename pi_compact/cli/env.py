"""The Environment: everything a command touches besides its arguments (after httpie's ``Environment``).

One object owns the streams, the terminal facts (TTY, colour, ``NO_COLOR``), the variables, the JSON mode and the
debug flag. ``pi_compact.cli.core.main`` creates it (or takes one a test built) and hands it to every command through
the click context; commands print only through it: ``emit`` (one JSON document, ``schema_version`` stamped),
``emit_record`` (one JSON Lines record in the versioned envelope), ``text``, ``warn``, ``note``, ``progress``.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Literal, TextIO

import orjson

from pi_compact.errors import ExitCode, OutputWriteError
from pi_compact.js import js_double
from pi_compact.session.streams import write_fully

# The version of every JSON document and JSON Lines record picompact prints (docs/json.md, "JSON output").
SCHEMA_VERSION = 1

JsonMode = Literal["document", "lines"]

# ANSI styles for inline colour in human output (only used when ``Environment.colors`` is true).
_RESET = "\x1b[0m"
_STYLES = {
    "heading": "\x1b[1;35m",
    "id": "\x1b[35m",
    "number": "\x1b[32m",
    "section": "\x1b[36m",
    "match": "\x1b[1;31m",
    "dim": "\x1b[2m",
    "bold": "\x1b[1m",
    "red": "\x1b[1;31m",
    "green": "\x1b[32m",
    "yellow": "\x1b[33m",
    "cyan": "\x1b[36m",
}

INTERRUPTED_NOTE = "interrupted; nothing was written"

# What a terminal would act on instead of showing (C0 and C1 controls, DEL), what reorders or hides what a line
# shows: the bidirectional marks (U+061C, U+200E, U+200F), embeddings, overrides and isolates (U+202A..U+202E,
# U+2066..U+2069) and the tag characters (U+E0000..U+E007F: invisible, they smuggle text past a reader), and the
# bytes of a file name that is not UTF-8 (``os.fsdecode`` keeps each as a lone surrogate, U+DC80..U+DCFF)
_HIDDEN = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f\udc80-\udcff"
_UNPRINTABLE = re.compile(f"[\x00-\x1f\x7f-\x9f{_HIDDEN}]")
# The same in a session's text shown a line at a time: the tab stays (it only moves to the next column)
_UNSHOWN_TEXT = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_HIDDEN}]")
# What a line of human output on a terminal may hold of all that: tabs, line ends (a block of lines written at once),
# and, when colour is on, exactly the escape sequences of ``_STYLES`` (``Environment.style``). Anything else there
# came from a session or a file name that no command escaped: ``Environment.text`` escapes it, the last guard.
_UNSHOWN_LINE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_HIDDEN}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}
_STYLED_LINE = re.compile(
    "|".join(re.escape(code) for code in sorted({*_STYLES.values(), _RESET}, key=len, reverse=True))
    + f"|{_UNSHOWN_LINE.pattern}"
)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # the byte itself
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """``text`` with what a terminal would not show as text escaped: ``\\e``, ``\\n``, ``\\t``, ``\\r``,
    ``\\xNN`` for other C0 controls, DEL and each byte of a name that is not UTF-8, ``\\u0080``..``\\u009f``
    for C1 controls (a file name that paints the terminal or moves its cursor is shown, not obeyed)."""
    return _UNPRINTABLE.sub(_escape, text) if _UNPRINTABLE.search(text) else text


def terminal_text(text: str) -> str:
    """A line of a session's text as a terminal may show it: ``printable``'s escapes but for the tab (a tool's
    output that paints the terminal, moves its cursor or reorders the line with bidirectional controls is shown,
    not obeyed)."""
    return _UNSHOWN_TEXT.sub(_escape, text) if _UNSHOWN_TEXT.search(text) else text


def terminal_line(line: str, colors: bool) -> str:
    """A line of human output as a terminal gets it: tabs and line ends as they are, the colour of ``style`` when
    ``colors`` is on, and anything else a terminal would act on escaped as ``terminal_text`` escapes it."""
    if not _UNSHOWN_LINE.search(line):
        return line
    if not colors:
        return _UNSHOWN_LINE.sub(_escape, line)
    return _STYLED_LINE.sub(lambda m: m.group() if len(m.group()) > 1 else _escape(m), line)


# In a JSON document on a terminal: what JSON may hold raw but a terminal would act on (C1 controls, DEL, the bidi
# marks and controls, the tag characters; C0 controls too, which a raw line of a file may hold) as their \\u
# escapes: the same JSON, the same strings once parsed, shown rather than obeyed.
_JSON_UNSHOWN = re.compile(
    rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]"
    rb"|\xf3\xa0[\x80\x81][\x80-\xbf]"
)


def _json_escape(match: re.Match[bytes]) -> bytes:
    code = ord(match.group().decode("utf-8"))
    if code > 0xFFFF:
        code -= 0x10000
        return b"\\u%04x\\u%04x" % (0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF))
    return b"\\u%04x" % code


def terminal_json(data: bytes) -> bytes:
    """JSON (or a raw line of a session file) as a terminal gets it: what it would act on as ``\\uNNNN``."""
    return _JSON_UNSHOWN.sub(_json_escape, data) if _JSON_UNSHOWN.search(data) else data


def json_text(text: str) -> str:
    """A string JSON can hold: each byte of a file name that is not UTF-8 (a lone surrogate from ``os.fsdecode``)
    as the four characters ``\\xNN``, as Python shows such bytes; any other lone surrogate as U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


# The integers orjson writes: signed and unsigned 64-bit.
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _json_safe(value: Any) -> Any:
    """``value`` with every string (keys too) passed through ``json_text``, and every integer orjson cannot write
    (past 64 bits: a number of a session that was a double in JSON, made an integer) as JavaScript holds it: the
    nearest double (``JSON.parse`` reads the literal 10^30 as 1e+30, and a usage total of 1e308 tokens stays
    1e+308), or None past the largest (JavaScript's Infinity, which ``JSON.stringify`` writes as null)."""
    if isinstance(value, str):
        return json_text(value)
    if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN <= value <= _INT_MAX:
        number = js_double(value)
        return number if math.isfinite(number) else None
    if isinstance(value, Mapping):
        return {json_text(k) if isinstance(k, str) else k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def dumps(value: Any, option: int = 0) -> bytes:
    """orjson's JSON, also for what it refuses: a file name that is not UTF-8 (see ``json_text``), an integer past
    64 bits (see ``_json_safe``)."""
    try:
        return orjson.dumps(value, option=option)
    except TypeError:  # only then is the document walked: "surrogates not allowed", "Integer exceeds 64-bit range"
        return orjson.dumps(_json_safe(value), option=option)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class Environment:
    """Streams, terminal and variables of one run of picompact; build one with ``from_process`` or ``captured``."""

    def __init__(
        self,
        stdin: TextIO,
        stdout: TextIO,
        stderr: TextIO,
        environ: Mapping[str, str],
        *,
        stdin_isatty: bool = False,
        stdout_isatty: bool = False,
        stderr_isatty: bool = False,
        program_name: str = "picompact",
        argv: list[str] | None = None,
        debug: bool = False,
    ) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.environ = environ
        self.stdin_isatty = stdin_isatty
        self.stdout_isatty = stdout_isatty
        self.stderr_isatty = stderr_isatty
        self.program_name = program_name
        self.argv: list[str] = [] if argv is None else argv
        self.debug = debug
        # None: human output; "document": one JSON document (errors too); "lines": JSON Lines (errors as a record).
        self.json_mode: JsonMode | None = None
        # What Ctrl-C means at this point of the command (a command that already wrote says so here).
        self.interrupted_note = INTERRUPTED_NOTE
        # --color=always|never of a command that offers it (None: auto, the terminal decides).
        self.color_choice: bool | None = None
        self._console: Any = None
        # Whether anything was written to stdout yet (a command may then be run again from the start: ``cli.core``)
        self.stdout_written = False
        # What an embedding program or a test injects into ``compact`` (None: the real clock, random ids, no pause):
        # the time and the ids of the entries it writes, and a call made under the session's lock before writing.
        self.clock: Callable[[], Any] | None = None
        self.new_id: Callable[[Collection[str]], str] | None = None
        self.in_lock: Callable[[], None] | None = None
        # Whether this run is the whole process (``cli.core.main`` without an env): what it loads then lives to exit,
        # and is frozen for the collector (``gc.freeze``); a caller that passes an env keeps its own gc.
        self.owns_process = False

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_process(cls, argv: Sequence[str] | None = None) -> Environment:
        """The real process: ``sys`` streams, ``os.environ``, TTY detection."""
        return cls(
            stdin=sys.stdin,
            stdout=sys.stdout,
            stderr=sys.stderr,
            environ=os.environ,
            stdin_isatty=_isatty(sys.stdin),
            stdout_isatty=_isatty(sys.stdout),
            stderr_isatty=_isatty(sys.stderr),
            argv=list(sys.argv[1:] if argv is None else argv),
            debug=os.environ.get("PICOMPACT_DEBUG", "") not in ("", "0"),
        )

    @classmethod
    def captured(
        cls,
        *,
        stdin: bytes = b"",
        environ: Mapping[str, str] | None = None,
        tty: bool = False,
    ) -> Environment:
        """In-memory streams (read them back with ``stdout_bytes``/``stderr_bytes``): for tests and embedding."""
        environ = dict(os.environ if environ is None else environ)
        return cls(
            stdin=_memory_stream(stdin),
            stdout=_memory_stream(),
            stderr=_memory_stream(),
            environ=environ,
            stdin_isatty=tty,
            stdout_isatty=tty,
            stderr_isatty=tty,
            debug=environ.get("PICOMPACT_DEBUG", "") not in ("", "0"),
        )

    def stdout_bytes(self) -> bytes:
        """Everything written to an in-memory stdout."""
        return _memory_value(self.stdout)

    def stderr_bytes(self) -> bytes:
        """Everything written to an in-memory stderr."""
        return _memory_value(self.stderr)

    # ------------------------------------------------------------------ terminal

    @property
    def colors(self) -> bool:
        """Colour on stdout: as ``--color`` says, else a terminal, ``NO_COLOR`` unset, ``TERM`` not ``dumb``."""
        if self.color_choice is not None:
            return self.color_choice
        return self.stdout_isatty and "NO_COLOR" not in self.environ and self.environ.get("TERM") != "dumb"

    @property
    def stderr_colors(self) -> bool:
        return self.stderr_isatty and "NO_COLOR" not in self.environ and self.environ.get("TERM") != "dumb"

    def style(self, text: str, name: str) -> str:
        """``text`` in one of the named styles (heading, id, number, section, match, dim, bold, red, green, yellow,
        cyan): the one colour mechanism of human output. What is styled is one line of text: on a terminal what it
        would act on is escaped first (``shown_text``), so a field of a session styled as a heading or an id shows."""
        text = self.shown_text(text)
        return f"{_STYLES[name]}{text}{_RESET}" if self.colors else text

    @property
    def console(self) -> Any:
        """A rich Console on stdout, created on first use (rich is slow to import)."""
        self.stdout_written = True  # whatever it prints next
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=self.stdout,
                no_color=not self.colors,
                force_terminal=self.colors or None,
                highlight=False,
                soft_wrap=not self.stdout_isatty,
                emoji=False,
                markup=False,
            )
        return self._console

    @contextlib.contextmanager
    def progress(self, label: str, hint: str = "Ctrl-C aborts") -> Iterator[Callable[[str], None]]:
        """A spinner with the elapsed time on stderr while something slow runs (only on a terminal).

        Yields a function that changes the label."""
        if not self.stderr_isatty:
            yield lambda _label: None
            return
        from rich.console import Console
        from rich.text import Text

        start = time.monotonic()
        state = {"label": label}

        class Elapsed:
            def __rich__(self) -> Text:
                return Text(f"{state['label']}… {time.monotonic() - start:.0f} s ({hint})")

        console = Console(file=self.stderr, force_terminal=True, no_color=not self.stderr_colors, highlight=False)
        with console.status(Elapsed()):

            def update(new_label: str) -> None:
                state["label"] = new_label

            yield update

    # ------------------------------------------------------------------ output

    def text(self, line: str = "") -> None:
        """One line of human output on stdout."""
        self.stdout_written = True
        if self.stdout_isatty:  # what a command did not escape of a session or a name still must not drive it
            line = terminal_line(line, self.colors)
        with checked_write():
            try:
                self.stdout.write(line + "\n")
            except UnicodeEncodeError:  # a name that is not UTF-8, on a stream that refuses it: its bytes as they are
                self.stdout.flush()
                encoding = getattr(self.stdout, "encoding", None) or "utf-8"
                self.stdout.buffer.write((line + "\n").encode(encoding, "surrogateescape"))
                self.stdout.buffer.flush()

    def write_bytes(self, data: bytes) -> None:
        """Bytes on stdout, after any text written before them."""
        self.stdout_written = True
        with checked_write():
            self.stdout.flush()
            _write_all(self.stdout.buffer, data)

    def flush(self) -> None:
        """Flush stdout; a failed write (a full disk) is OutputWriteError, never a silent success."""
        with checked_write():
            self.stdout.flush()

    def emit(self, doc: Mapping[str, Any]) -> None:
        """One JSON document on stdout, ``schema_version`` first."""
        stamped = {"schema_version": SCHEMA_VERSION, **doc}
        stamped["schema_version"] = SCHEMA_VERSION
        self.write_bytes(self.shown_json(dumps(stamped, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"))

    def emit_record(self, record_type: str, data: Mapping[str, Any]) -> None:
        """One JSON Lines record on stdout: ``{"type", "version", "data"}`` (ripgrep's envelope)."""
        record = {"type": record_type, "version": SCHEMA_VERSION, "data": data}
        self.stdout_written = True
        with checked_write():
            self.stdout.flush()
            _write_all(self.stdout.buffer, self.shown_json(dumps(record, orjson.OPT_NON_STR_KEYS) + b"\n"), flush=False)

    def shown(self, path: str | os.PathLike[str]) -> str:
        """A path as human output on stdout shows it: on a terminal with control characters and the bytes of a
        name that is not UTF-8 escaped (``printable``); in a pipe as it is."""
        text = os.fspath(path)
        return printable(text) if self.stdout_isatty else text

    def shown_text(self, text: str) -> str:
        """A line of a session's text as human output on stdout shows it: on a terminal with what it would act on
        escaped (``terminal_text``); in a pipe as it is."""
        return terminal_text(text) if self.stdout_isatty else text

    def shown_json(self, data: bytes) -> bytes:
        """JSON (or a raw line of a session) as stdout shows it: on a terminal with what it would act on written
        as ``\\uNNNN`` escapes (the same JSON); in a pipe as it is."""
        return terminal_json(data) if self.stdout_isatty else data

    def warn(self, message: str) -> None:
        self._diagnostic(f"{self.program_name}: warning: {message}\n")

    def note(self, message: str) -> None:
        self._diagnostic(f"{self.program_name}: {message}\n")

    def _diagnostic(self, line: str) -> None:
        """A line on stderr; when stderr itself cannot be written (``2>/dev/full``), the command goes on without it."""
        if self.stderr_isatty:  # a file name in the message must not drive the terminal
            line = printable(line[:-1]) + line[-1:] if line.endswith("\n") else printable(line)
        with contextlib.suppress(OSError, ValueError):
            try:
                self.stderr.write(line)
            except UnicodeEncodeError:
                self.stderr.write(line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))
            self.stderr.flush()

    def error(self, message: str, code: int) -> None:
        """The documented error report: one line on stderr; with ``--json`` also one JSON line on stdout."""
        message = " ".join(message.split("\n")).strip()
        with contextlib.suppress(OSError, ValueError, OutputWriteError):  # stdout may be what failed
            error = {"message": message, "exit_code": int(code)}
            if self.json_mode == "lines":
                record = {"type": "error", "version": SCHEMA_VERSION, "data": error}
                self.write_bytes(self.shown_json(dumps(record) + b"\n"))
            elif self.json_mode == "document":
                self.write_bytes(self.shown_json(dumps({"schema_version": SCHEMA_VERSION, "error": error}) + b"\n"))
        self._diagnostic(f"{self.program_name}: error: {message}\n")

    def reader_gone(self) -> None:
        """stdout's reader went away (``| head``): stop writing there, quietly.

        For a real file descriptor, point it at /dev/null so that the interpreter's last flush cannot fail."""
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            fd = self.stdout.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)

    # ------------------------------------------------------------------ compatibility with the older ``Output``

    @property
    def color(self) -> bool:
        return self.colors

    def json(self, data: Any) -> None:
        self.emit(data)


def _write_all(stream: Any, data: bytes, flush: bool = True) -> None:
    """All of ``data`` (``session.streams.write_fully``), then a flush unless the caller batches."""
    write_fully(stream, data)
    if flush:
        stream.flush()


@contextlib.contextmanager
def checked_write() -> Iterator[None]:
    """Writes to stdout: a closed pipe stays BrokenPipeError (the reader went away: exit 0); any other OS error
    (ENOSPC, EIO, ...) becomes OutputWriteError, exit 3, "write error: No space left on device"."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputWriteError(f"write error: {exc.strerror or exc}", path="<stdout>") from None


def _memory_stream(data: bytes = b"") -> TextIO:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", write_through=True)


def _memory_value(stream: TextIO) -> bytes:
    stream.flush()
    buffer = stream.buffer
    if isinstance(buffer, io.BytesIO):
        return buffer.getvalue()
    raise TypeError("not an in-memory stream")


def current_env() -> Environment:
    """The Environment of the command being run (from the click context), else one for this process."""
    from pi_compact.cli.compat import get_current_context

    ctx = get_current_context(silent=True)
    obj = ctx.find_object(Environment) if ctx is not None else None
    return obj if obj is not None else Environment.from_process()


__all__ = [
    "INTERRUPTED_NOTE",
    "SCHEMA_VERSION",
    "Environment",
    "ExitCode",
    "JsonMode",
    "current_env",
    "dumps",
    "json_text",
    "printable",
    "terminal_json",
    "terminal_line",
    "terminal_text",
]
