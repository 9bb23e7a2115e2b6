"""Pi's ``read`` tool contract, read back from a session: what a recorded read shows and whether it is complete.

Pi 1.6's read tool takes ``path``, ``offset`` (1-based first line) and ``limit`` (line count). Its output is the
selected lines, cut at 2000 lines or 50 KB, and it says so in a notice at the end:

- ``[Showing lines a-b of n. Use offset=b+1 to continue.]`` (line cap; ``(50.0KB limit)`` before the period for the
  byte cap), with ``details.truncation`` set;
- ``[N more lines in file. Use offset=M to continue.]`` when ``limit`` stopped before the end of the file;
- ``[Line k is S, exceeds 50.0KB limit. Use bash: …]`` alone when the first selected line is too long to show;
- a failed read (``Offset N is beyond end of file (T lines total)``, missing file, …) is an error result.

So offset/limit alone never make a read partial: a read from line 1 with no notice and no truncation metadata showed
the whole file, whatever its limit. A read from a later line showed only the end of the file. Anything the contract
does not describe (several text blocks, a fractional offset) has unknown completeness. The helpers here never open
the file that was read: they judge the recorded output only.
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from typing import Any, Literal, NamedTuple

from pi_compact.session.entries import JsonDict
from pi_compact.session.mutations import MUTATING_TOOLS as MUTATING_TOOLS
from pi_compact.session.mutations import mutation_path as mutation_path

Completeness = Literal["full", "partial", "unknown"]

# The exact Pi 1.6 notices (read.js); each ends the output text.
SHOWING_NOTICE = re.compile(
    r"\n\n(\[Showing lines (\d+)-(\d+) of (\d+)(?: \((\d+(?:\.\d+)?(?:B|KB|MB)) limit\))?\. "
    r"Use offset=(\d+) to continue\.\])\Z"
)
MORE_LINES_NOTICE = re.compile(r"\n\n(\[(\d+) more lines in file\. Use offset=(\d+) to continue\.\])\Z")
LONG_LINE_NOTICE = re.compile(
    r"\A\[Line (\d+) is \d+(?:\.\d+)?(?:B|KB|MB), exceeds \d+(?:\.\d+)?(?:B|KB|MB) limit\. Use bash: .*\]\Z", re.DOTALL
)
# Older or slightly different wordings of the same two continuation notices: still a partial read.
LENIENT_NOTICE = re.compile(r"(?:\A|\n)(\[(?:Showing lines \d+-\d+ of \d+|\d+ more lines in file)[^\n]*\])\s*\Z")
BEYOND_END = re.compile(r"\AOffset \S+ is beyond end of file \(\d+ lines total\)\Z")
IMAGE_NOTE = re.compile(r"\ARead image file \[[^\]\n]+\](?:\n\[[^\n]*\])*\Z")

UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


# ---------------------------------------------------------------------------------------------------- paths


WINDOWS_PATH = re.compile(r"\A(?:[A-Za-z]:[\\/]|\\\\)")


def resolve_path(path: str, base: str) -> str:
    """Where Pi's file tools put ``path`` for ``base`` (resolveToCwd), done lexically: no filesystem access.

    ``@`` prefixes are dropped and unusual spaces become plain ones, as Pi does. ``~`` paths stay as written: they
    depend on the home directory of the machine that ran the session, which is not known here. A Windows session
    (drive-letter or UNC cwd) resolves with Windows rules and compares without case, like Pi there.
    """
    text = UNICODE_SPACES.sub(" ", path)
    if text.startswith("@"):
        text = text[1:]
    if text.startswith("file://"):
        text = text[len("file://") :]
    if text == "~" or text.startswith("~/"):
        return posixpath.normpath(text)
    if WINDOWS_PATH.match(base or "") or WINDOWS_PATH.match(text):
        return ntpath.normpath(ntpath.join(base, text)).lower()
    if not text.startswith("/"):
        text = posixpath.join(base or "/", text)
    return posixpath.normpath(text)


def is_windows_key(key: str) -> bool:
    """A key from ``resolve_path`` for a Windows session (lower-cased, backslashes)."""
    return bool(WINDOWS_PATH.match(key))


def key_basename(key: str) -> str:
    return ntpath.basename(key) if is_windows_key(key) else posixpath.basename(key)


def key_dirname(key: str) -> str:
    return ntpath.dirname(key) if is_windows_key(key) else posixpath.dirname(key)


_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with the characters that break or hide a line written as escapes (``\\n``, ``\\x1b``, ``\\u2028``):
    a path a tool was called with must not start a line of its own in a checkpoint (a heading, an instruction)."""
    if _LINE_BREAKING.search(text) is None:
        return text
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

    def escape(match: re.Match[str]) -> str:
        ch = match.group()
        return named.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")

    return _LINE_BREAKING.sub(escape, text)


def display_path(path: str, cwd: str) -> str:
    """The path as checkpoints show it (the same rule as tool signatures): relative to the session cwd where it
    lies under it, else as written; on one line (``one_line``)."""
    from pi_compact.checkpoint.verbatim.signatures import relative_path

    return one_line(relative_path(path, cwd))


# ---------------------------------------------------------------------------------------------------- calls


class ReadArgs(NamedTuple):
    """The arguments of one ``read`` call: ``path`` as written, ``offset``/``limit`` as recorded (maybe None)."""

    path: str
    offset: Any = None
    limit: Any = None


def read_args(arguments: Any) -> ReadArgs | None:
    """The read arguments, or None when there is no usable ``path``."""
    if not isinstance(arguments, dict):
        return None
    path = arguments.get("path")
    if not isinstance(path, str) or not path:
        return None
    return ReadArgs(path, arguments.get("offset"), arguments.get("limit"))


def tool_call_blocks(message: JsonDict) -> list[tuple[int, JsonDict]]:
    """(block index, block) of every tool call in an assistant message."""
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return []
    return [
        (i, block)
        for i, block in enumerate(message["content"])
        if isinstance(block, dict) and block.get("type") == "toolCall" and "name" in block
    ]


def nested_calls(message: JsonDict) -> list[JsonDict]:
    """The nested calls a tool result records (``nestedCalls.calls``)."""
    nested = message.get("nestedCalls") if message.get("role") == "toolResult" else None
    calls = nested.get("calls") if isinstance(nested, dict) else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


# ---------------------------------------------------------------------------------------------------- results


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _start_line(offset: Any) -> float | None:
    """Pi's 0-based start line (``offset ? max(0, offset - 1) : 0``); None when not a number."""
    if offset is None:
        return 0.0
    number = _number(offset)
    if number is None:
        return None
    return max(0.0, number - 1) if number else 0.0


def find_notice(text: str) -> str | None:
    """The continuation or truncation notice that ends a read output, without the blank line before it."""
    for pattern in (SHOWING_NOTICE, MORE_LINES_NOTICE):
        match = pattern.search(text)
        if match:
            return match.group(1)
    if LONG_LINE_NOTICE.match(text):
        return text
    match = LENIENT_NOTICE.search(text)
    return match.group(1) if match else None


def read_completeness(text: str, offset: Any, limit: Any, details: Any = None) -> tuple[Completeness, str | None]:
    """Whether a successful text read showed the whole file, and the notice that says otherwise.

    Partial: a notice, truncation metadata, or a start after line 1. Full: none of these, from line 1, with
    integral arguments. Unknown: arguments outside the contract (a fractional offset, a negative limit).
    """
    notice = find_notice(text)
    truncation = details.get("truncation") if isinstance(details, dict) else None
    truncated = isinstance(truncation, dict) and truncation.get("truncated") is True
    if notice is not None or truncated:
        return "partial", notice
    start = _start_line(offset)
    limit_number = None if limit is None else _number(limit)
    if start is None or not start.is_integer() or (limit is not None and limit_number is None):
        return "unknown", None
    if limit_number is not None and (not limit_number.is_integer() or limit_number < 0):
        return "unknown", None
    if start > 0:
        return "partial", None
    return "full", None


ReadStatus = Literal["ok", "error", "image", "non-text"]


class ReadOutput(NamedTuple):
    """A recorded read result judged against Pi's contract. Only ``status == "ok"`` is text evidence."""

    status: ReadStatus
    completeness: Completeness
    text: str  # the output exactly as recorded, notice included
    notice: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def body(self) -> str:
        """The file text shown, without the trailing notice."""
        if self.notice is None or not self.text.endswith(self.notice):
            return self.text
        return self.text[: len(self.text) - len(self.notice)].removesuffix("\n\n")


def text_blocks_only(content: Any) -> list[str] | None:
    """The texts of a content list made only of text blocks (a string counts as one); None otherwise."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list) or not content:
        return None
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            return None
        texts.append(block["text"])
    return texts


def parse_read_result(args: ReadArgs, message: JsonDict) -> ReadOutput:
    """Judge one read result message (as recorded, before context edits) for the call ``args``."""
    content = message.get("content")
    details = message.get("details")
    has_image = isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "image" for b in content)
    if message.get("isError") is True:
        return ReadOutput("error", "unknown", "")
    if has_image or (isinstance(details, dict) and "imageUnsupportedByModel" in details):
        return ReadOutput("image", "unknown", "")
    texts = text_blocks_only(content)
    if texts is None:
        return ReadOutput("non-text", "unknown", "")
    text = "\n".join(texts)
    if BEYOND_END.match(text):
        return ReadOutput("error", "unknown", text)
    if len(texts) == 1 and IMAGE_NOTE.match(text):
        return ReadOutput("image", "unknown", text)
    completeness, notice = read_completeness(text, args.offset, args.limit, details)
    if len(texts) != 1 and completeness == "full":
        completeness = "unknown"
    return ReadOutput("ok", completeness, text, notice)
