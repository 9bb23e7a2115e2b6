"""Standing instructions: what the user set for the whole task, kept in a block the cap never trims.

Users state early what holds throughout ("never modify the production ledger", "it must stay compatible with
Python 3.9", "I prefer small commits", "the service listens on 4100") and correct it later ("no, make it 4317").
Those sentences are what a resumed agent most needs and what an oldest-first cap used to drop first.
``standing_instructions`` picks them out of the compacted user messages, sentence by sentence, with narrow cues
(precision first: an ordinary request such as "add a --verbose flag" is not a standing instruction):

- ``rule``: never / always / don't / must not / from now on / make sure …;
- ``constraint``: must / has to / compatible with / at most / without …;
- ``preference``: I prefer / I'd rather / please use / let's use …;
- ``value``: a setting noun (port, timeout, version, directory …) with a value (a number, version, path, URL or
  `code`), or a correction ("no, make it 4317") that names a value of the same shape as an earlier one;
- ``goal``: the opening request of the session, and a later change of plan ("scratch that, …").

A later value of the same setting supersedes the earlier one: the block shows the new sentence with the old one
and both entry ids. Questions, code blocks, pasted logs and long sentences are left out. Deterministic: the same
spans give the same block, so it is carried forward by the spans themselves.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pi_compact.checkpoint.verbatim.signatures import shorten

KINDS = ("goal", "rule", "constraint", "preference", "value")
MAX_LINES = 40  # a bound on the block whatever the session: the opening request and the newest instructions
SENTENCE_CHARS = 240
MIN_SENTENCE_CHARS = 6
GOAL_CHARS = 240

_RULE = re.compile(
    r"\b(?:never|always|do not|don't|dont|must not|mustn't|shall not|should never|should always|should not|"
    r"shouldn't|avoid|under no circumstances|at all times|from now on|going forward|make sure (?:to|that|you|it|the)|"
    r"remember (?:to|that)|no matter what|not allowed|forbidden|off[- ]limits|leave .{1,40} alone|"
    r"do not touch|stay away from|hands off)\b",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|has to|have to be|needs to be|need to be|required|requirement|compatible with|cannot use|can't use|"
    r"no external|without (?:adding|using|any|changing)|only (?:use|touch|change|modify|edit)|at most|at least|"
    r"no more than|no longer than|maximum|minimum|limit(?:ed)? to|keep (?:it|them|the \w+) (?:under|below|within)|"
    r"no new|only the stdlib|dependenc(?:y|ies) (?:are|is) (?:not )?allowed)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:i prefer|i'd prefer|i would prefer|i'd rather|i would rather|i like (?!that|this|it\b)\w+|"
    r"i want (?:it to|all|every)|"
    r"please use|please keep|let's use|let's stick|let's keep|we use|we prefer|we always|stick to|"
    r"use \S+(?: \S+){0,4} (?:instead of|rather than)|use [\w -]{1,30}, not\b|use `[^`\n]{1,40}`, not\b|"
    r"keep (?:the |all |our )?[\w -]{1,30} (?:style|format|short|small|consistent|sorted|alphabetical)|"
    r"in the [\w -]{1,30} style)\b",
    re.IGNORECASE,
)
_GOAL_CHANGE = re.compile(
    r"\b(?:new goal|change of plans?|change the plan|scratch that|forget (?:about )?(?:the|that|it)|"
    r"instead,? let's|let's instead|the goal is now|now the goal|new task|we're switching|"
    r"the real goal|what i actually want)\b",
    re.IGNORECASE,
)
_NOT_AN_INSTRUCTION = re.compile(
    r"\b(?:it|that|this|they|he|she|which|there)\s+(?:don't|do not|didn't|doesn't|never)\b"
    r"|\bi\s+(?:don't|do not|didn't|never)\s+(?!want|like|need|allow)\w+"
    r"|\bdon't worry\b|\bthank|Error:|ENOENT|Traceback|\\n",
    re.IGNORECASE,
)
# What starts a request for work rather than a statement of what holds ("Refactor X so that …", "move a to b").
_TASK = re.compile(
    r"^\W*(?:(?:ok|okay|alright|so|now|next|then|and|also|please|good|great|thanks)\W+)*(?:can you |could you |"
    r"would you |let's |let us )?(?:refactor|explain|revert|move|copy|create|createa|add|fix|implement|write|read|"
    r"look|check|run|open|show|tell|why|how|what|where|rename|update|remove|delete|profile|find|investigate|"
    r"review|debug|try|test|build|install|commit|push|merge)\b",
    re.IGNORECASE,
)
_LINK = re.compile(
    r"\b(?:is|are|=|should be|must be|has to be|defaults? to|listens? on|runs? on|lives? (?:in|at|under)|"
    r"go(?:es)? (?:in|into|under)|belongs? (?:in|under)|set (?:it )?to|use|uses|make it|change (?:it )?to|raise|"
    r"lower|increase|decrease|bump)\b|:\s",
    re.IGNORECASE,
)
_SETTING = re.compile(
    r"\b(?:port|host(?:name)?|url|endpoint|base url|timeout|time-?out|version|node|python|runtime|region|bucket|"
    r"database|db|schema|table|queue|topic|namespace|branch|directory|folder|dir|path|limit|threshold|retries|"
    r"retry|interval|ttl|size|width|indent(?:ation)?|tabs|spaces|level|model|env(?:ironment)?|config|setting|"
    r"listens? on|lives? (?:in|at|under)|go(?:es)? (?:in|into|under)|belongs? (?:in|under)|deadline|budget|"
    r"concurrency|workers|memory|cpu|rate limit|max|min|default|license|encoding|locale|timezone|currency|precision|"
    r"format|server|service|cluster|account|project|repo(?:sitory)?|registry)\b",
    re.IGNORECASE,
)
_VALUE = re.compile(
    r"https?://\S+|`[^`\n]{1,60}`|\b[\w.-]+:\d{2,5}\b|\b\d+\.\d+(?:\.\d+)*\b|\b\d{2,}\b"
    r"|(?<![\w])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]*"
)
_RENAMED = re.compile(
    r"\b(?:(?:got |was |were |has been |have been )?(?:renamed|moved) to|is now|are now|now lives (?:in|at))\s+\S"
)
_CORRECTION = re.compile(
    r"^\W*(?:no|nope|actually|correction|wait|sorry|oops|instead|rather|change|update|make it|switch|not)\b"
    r"|\b(?:instead|make it|change it to|set it to|now it's|now it is|should be|use \S+ not)\b",
    re.IGNORECASE,
)
_PASTED_START = re.compile(r"^[+-]\s*\d|^\w+:\s*['\"]|^\[[^\]]*\]$")  # a diff line, a field of a printed object
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_WORD = re.compile(r"[A-Za-z][\w-]{3,}")
_STOP = frozenset(
    [
        "this",
        "that",
        "with",
        "from",
        "have",
        "been",
        "will",
        "would",
        "should",
        "could",
        "make",
        "into",
        "your",
        "they",
        "them",
        "then",
        "than",
        "when",
        "what",
        "which",
        "also",
        "just",
        "only",
        "still",
        "some",
        "more",
        "most",
        "very",
        "much",
        "each",
        "every",
        "about",
        "above",
        "after",
        "before",
        "again",
        "instead",
        "actually",
        "change",
        "mind",
        "sorry",
        "wait",
        "please",
        "note",
        "heads",
        "sure",
        "rather",
        "alright",
        "okay",
        "thanks",
    ]
)
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|so|now|and|also|oh|wait|btw|by the way|note|heads up|before i forget|one rule|"
    r"for reference|one more thing|actually)\b[\s,:;.!-]*)+",
    re.IGNORECASE,
)
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Instruction:
    """One standing instruction: the user entry it came from, its kind, the sentence; ``replaces`` is the earlier
    instruction of the same setting it supersedes, if any; ``superseded_by`` the later one that replaces it."""

    entry: str
    kind: str
    text: str
    keys: frozenset[str] = frozenset()
    shape: str = ""
    replaces: Instruction | None = None
    superseded_by: str | None = None
    words: frozenset[str] = frozenset()  # the sentence's content words (``_content``), taken once


def _sentences(text: str) -> list[str]:
    text = _FENCE.sub("\n", text)
    out = []
    for raw in _SENTENCE.split(text):
        sentence = " ".join(raw.split()).strip(" -*>#")
        if MIN_SENTENCE_CHARS <= len(sentence) <= SENTENCE_CHARS * 2 and not _looks_pasted(sentence):
            out.append(sentence)
    return out


def split_sentences(text: str) -> list[str]:
    """A user message's sentences as ``standing_instructions`` reads them: code blocks and pasted lines left out,
    whitespace collapsed (``picompact rules`` reads messages the same way)."""
    return _sentences(text)


def _looks_pasted(sentence: str) -> bool:
    """Log lines, stack frames and code: many symbols, few words."""
    letters = sum(c.isalpha() or c == " " for c in sentence)
    return (
        (len(sentence) > 30 and letters < len(sentence) * 0.6)
        or sentence.startswith(("at ", 'File "', "Traceback", "$ ", "> "))
        or bool(_PASTED_START.match(sentence))
    )


def _opening(text: str) -> str:
    """The opening of a message as one line: its first paragraph, up to where pasted text (logs, code) starts."""
    kept: list[str] = []
    for line in _FENCE.sub("\n\n", text).split("\n"):
        stripped = line.strip()
        if not stripped:
            if kept:
                break
            continue
        if kept and _looks_pasted(stripped):
            break
        kept.append(stripped)
    return " ".join(" ".join(kept).split())


def _shape(value: str) -> str:
    """A value's shape, so a bare correction ("no, 4317") can find the setting it corrects."""
    if value.startswith(("http://", "https://")):
        return "url"
    if value.startswith("`"):
        return "code"
    if "/" in value:
        return "path"
    if re.fullmatch(r"\d+", value):
        return f"int{len(value)}"
    if re.fullmatch(r"\d+(?:\.\d+)+", value):
        return "version"
    return "other"


def _cut(text: str, limit: int = SENTENCE_CHARS) -> str:
    return shorten(text, limit)


def classify(sentence: str) -> str | None:
    """The kind of a user sentence that states a standing instruction, else None."""
    if sentence.rstrip().endswith("?") or _NOT_AN_INSTRUCTION.search(sentence):
        return None
    if _GOAL_CHANGE.search(sentence):
        return "goal"
    if _RULE.search(sentence):
        return "rule"
    if _PREFERENCE.search(sentence):
        return "preference"
    declarative = not _TASK.match(sentence)
    if _RENAMED.search(sentence) and _SETTING.search(sentence):
        return "value"
    if declarative and _SETTING.search(sentence) and _VALUE.search(sentence) and _LINK.search(sentence):
        return "value"
    if _CONSTRAINT.search(sentence):
        return "constraint"
    if declarative and _CORRECTION.search(sentence) and _VALUE.search(sentence):
        return "value"
    return None


def _gist(sentence: str) -> str:
    """A sentence without its leading discourse words and case, to tell a repeated instruction from a new one."""
    return " ".join(_FILLER.sub("", sentence.lower()).split()).strip(" .!")


def _content(sentence: str) -> frozenset[str]:
    """The sentence's content words (four letters or more, no common words), lower case, values left out."""
    return frozenset(w.lower() for w in _WORD.findall(_VALUE.sub(" ", sentence)) if w.lower() not in _STOP)


def _keys(sentence: str) -> frozenset[str]:
    return frozenset(m.lower() for m in _SETTING.findall(sentence))


def standing_instructions(
    messages: Sequence[tuple[str, str]], later: Sequence[tuple[str, str]] = (), *, opening: bool = True
) -> list[Instruction]:
    """The standing instructions in ``messages`` ((entry id, user text), oldest first): the first message's
    opening as the goal, then every classified sentence, deduplicated (a repeated sentence keeps its latest id).
    ``later`` are newer user messages (the kept tail): they only mark what they supersede. ``opening`` False: the
    first message is not the session's opening (an earlier summary holds that), so no goal is taken from it."""
    found: list[Instruction] = []
    if messages and opening:
        entry, text = messages[0]
        head = _opening(text)
        if head:
            found.append(Instruction(entry, "goal", _cut(head, GOAL_CHARS)))
    for index, (entry, text) in enumerate([*messages, *later]):
        is_later = index >= len(messages)
        for sentence in _sentences(text):
            kind = classify(sentence)
            if kind is None or (index == 0 and opening and kind == "goal"):
                continue
            values = _VALUE.findall(sentence)
            shape = _shape(values[-1]) if values else ""
            item = Instruction(entry, kind, _cut(sentence), _keys(sentence), shape, words=_content(sentence))
            if kind == "value":
                item = _link(found, item)
            if is_later:
                if item.replaces is not None:
                    _mark(found, item.replaces, entry)
                continue
            same = _gist(item.text)
            found = [f for f in found if _gist(f.text) != same]
            found.append(item)
    return found


def _link(found: list[Instruction], item: Instruction) -> Instruction:
    """The item, with ``replaces`` set to the newest earlier value it supersedes (same setting noun, or a
    correction with a value of the same shape and no setting noun of its own)."""
    correction = bool(_CORRECTION.search(item.text))
    words = item.words
    for index in range(len(found) - 1, -1, -1):
        earlier = found[index]
        if earlier.kind != "value" or earlier.superseded_by is not None:
            continue
        shared = words & earlier.words
        # A shared setting noun and a word of what it is set for ("the dev server port"), or a correction ("no,
        # make it 4317") with a value of the same shape that names the same thing, or names nothing at all.
        same_setting = (
            bool(item.keys & earlier.keys) and bool(shared - item.keys) and (correction or item.shape == earlier.shape)
        )
        bare = correction and item.shape == earlier.shape and (bool(shared) or not words)
        if same_setting or bare:
            found[index] = replace(earlier, superseded_by=item.entry)
            return replace(item, keys=item.keys | earlier.keys, replaces=earlier)
    return item


def _mark(found: list[Instruction], old: Instruction, by: str) -> None:
    for index, item in enumerate(found):
        if item.entry == old.entry and item.text == old.text:
            found[index] = replace(item, superseded_by=by)


def render_standing(items: Sequence[Instruction]) -> str:
    """The block, or "" when there is nothing: one line per instruction, superseded ones folded into the line of
    what replaced them (or marked with the id that replaced them, when that is in the kept conversation)."""
    replaced = {(i.replaces.entry, i.replaces.text) for i in items if i.replaces is not None}
    lines = []
    for item in items:
        if (item.entry, item.text) in replaced:
            continue
        text = f"- [{item.entry}] {item.text}"
        if item.replaces is not None:
            text += f' (supersedes [{item.replaces.entry}] "{_cut(item.replaces.text, 100)}")'
        elif item.superseded_by is not None:
            text += f" (superseded by [{item.superseded_by}])"
        lines.append(text)
    if not lines:
        return ""
    if len(lines) > MAX_LINES:  # the opening request, a count of what is left out, the newest instructions
        head = lines[:1] if items and items[0].kind == "goal" else []
        newest = lines[-(MAX_LINES - len(head)) :]
        left_out = len(lines) - len(head) - len(newest)
        note = f"- … {left_out} older instructions not shown here (they are in the spans and the session file)"
        lines = [*head, note, *newest]
    return "## Standing instructions\nSaid by the user in the compacted part, in their words (never trimmed):\n" + (
        "\n".join(lines)
    )
