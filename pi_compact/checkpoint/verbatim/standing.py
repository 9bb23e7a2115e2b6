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
and both entry ids. Questions, code blocks, pasted logs and long sentences are left out. A sentence that leans on
an earlier one ("Do not redo it.") is taken with that sentence or not at all. Deterministic: the same spans give
the same block, so it is carried forward by the spans themselves.

``render_standing(items, max_tokens, verbatim=ids)`` writes the block: lines that differ only in a name or a
number merged into one (``standing_lines``), the instructions of messages the checkpoint shows whole
(``verbatim_user_entries``) left out, and, given a share of the budget, compressed to fit it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from pi_compact.checkpoint.verbatim.signatures import shorten
from pi_compact.js import js_len

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
# "Make sure it doesn't …": a rule about what must not happen, not a report that something does not work.
_ENSURE = re.compile(
    r"\b(?:make sure|ensure|so that)\s+(?:that\s+)?(?:it|this|that|they)\s+(?:don't|do not|doesn't|never)\b", re.I
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
_SMALL_VALUE = re.compile(r"\b(?:is|be|=|to|at)\s+\d\b(?![.,]\d)")  # "the retry limit should be 5"
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
# Words that stand for something said before: a sentence with one and nothing of its own is a fragment.
_ANAPHORA = re.compile(
    r"\b(?:it|its|this|that|these|those|they|them|their|both|either|neither|one|ones|same|such|there|here|"
    r"he|she|him|her|so|too|again)\b",
    re.IGNORECASE,
)
# What names a thing in a sentence: a capitalised word past the first, an identifier (snake_case, camelCase,
# dotted, hyphenated with digits), `code`, a quoted name.
_NAMED = re.compile(
    r"(?<![.!?]\s)\b[A-Z][a-z]+[A-Z]?\w*|\b\w+_\w+|\b[a-z]+[A-Z]\w*|\b\w+\.\w{1,5}\b|`[^`]+`|\"[^\"]{2,}\"|'[^' ]{2,}'"
)
# The pronoun is what the instruction is about: its subject ("It must not …", "Both are …") or the object of its
# first verb ("Never restart it …", "Don't automate that").
_ACTS_ON_PRONOUN = re.compile(
    r"^\W*(?:(?:it|this|that|these|those|they|both|either|neither)\b(?!'s\b)"
    r"|(?:(?:please|always|never|do not|don't|dont|must not|you must|make sure (?:to|you)|remember to|"
    r"from now on,?)\s+)*"
    r"(?:not\s+)?[a-z]+\s+(?:it|them|this|that|these|those|both)\b(?!\s+(?:is|are|was|were)\b))",
    re.IGNORECASE,
)
# A noun after a determiner ("the linter", "our staging database"): the sentence names what it is about.
_DETERMINED = re.compile(
    r"\b(?:the|a|an|our|your|my|each|every|any|all|no)\s+(?:(?:new|old|other|latest|previous|current|same)\s+)?"
    r"(?!(?:it|one|ones|same|other|others|way|thing|things|time|rest|first|last|next|new|old)\b)[a-z][\w-]{2,}",
    re.IGNORECASE,
)
# Verbs and qualifiers of instructions that say what to do, not what it is done to.
_GENERIC = frozenset(
    re.findall(
        r"\w+",
        """redo undo repeat reproduce needed need needs want wants anything everything something nothing thing things
    stuff work works working change changes changed touch touched modify modified remove removed delete deleted keep
    kept leave left make made done doing fine good right wrong again first last later before after without asking
    ask asked tell told sure okay happen happens ever either neither both same such there here their them they those
    these really anymore unless until while since because otherwise exactly always never must should would could
    going stay stays better worse enough important careful forget remember mind time times
    """,
    )
)
LINK_REACH = 64  # how many earlier values of a setting (or shape) a new value may supersede, newest first


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
        sentence = " ".join(raw.split()).strip(" -*>#").rstrip(";,")
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
    if sentence.rstrip().endswith("?") or (_NOT_AN_INSTRUCTION.search(sentence) and not _ENSURE.search(sentence)):
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
    valued = _VALUE.search(sentence) or _SMALL_VALUE.search(sentence)
    if declarative and _SETTING.search(sentence) and valued and _LINK.search(sentence):
        return "value"
    if _CONSTRAINT.search(sentence):
        return "constraint"
    if declarative and _CORRECTION.search(sentence) and _VALUE.search(sentence):
        return "value"
    return None


def is_fragment(sentence: str) -> bool:
    """Whether a sentence needs an earlier one to mean anything: its subject or object is a pronoun ("do not
    redo it.", "never restart it during office hours", "both are needed to reproduce it.") and nothing in it
    names what it is about (a pronoun that the instruction acts on needs a value or a name to stand without)."""
    if not _ANAPHORA.search(sentence):
        return False
    if _ACTS_ON_PRONOUN.search(_FILLER.sub("", sentence)):
        return not (_VALUE.search(sentence) or _NAMED.search(sentence[1:]))
    return not names_something(sentence)


def names_something(sentence: str, words: int = 3) -> bool:
    """Whether a sentence names what it is about: a value, a name or identifier, a noun after a determiner ("the
    release branch"), or ``words`` words of substance."""
    if _VALUE.search(sentence) or _NAMED.search(sentence[1:]) or _DETERMINED.search(sentence):
        return True
    return len([w for w in _content(sentence) if w not in _GENERIC]) >= words


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
    first message is not the session's opening (an earlier summary holds that), so no goal is taken from it.

    A sentence that leans on an earlier one for its subject ("Do not redo it.") is taken together with the
    sentence before it in the same message when that one names something, and left out otherwise. Linear in the
    number of sentences (a pasted list of thousands of rules is one pass)."""
    found = _Found()
    goal: Instruction | None = None
    if messages and opening:
        entry, text = messages[0]
        head = _opening(text)
        if head:
            goal = found.add(Instruction(entry, "goal", _cut(head, GOAL_CHARS)))
    for index, (entry, text) in enumerate([*messages, *later]):
        is_later = index >= len(messages)
        previous = ""
        taken: Instruction | None = None  # the instruction the previous sentence gave, if any
        for sentence in _sentences(text):
            kind = classify(sentence)
            before, previous = previous, sentence
            if kind is None or (index == 0 and opening and kind == "goal"):
                taken = None
                continue
            if is_fragment(sentence):
                joined = f"{before} {sentence}"
                if not before or not names_something(before, 2) or len(joined) > SENTENCE_CHARS:
                    taken = None
                    continue  # no antecedent in reach: not an instruction a reader can act on
                if taken is not None and not is_later:  # the antecedent was taken: it now holds both
                    taken = found.widen(taken, joined)
                    continue
                sentence = joined
            values = _VALUE.findall(sentence)
            shape = _shape(values[-1]) if values else ""
            item = Instruction(entry, kind, _cut(sentence), _keys(sentence), shape, words=_content(sentence))
            if kind == "value":
                item = found.link(item)
            if is_later:
                if item.replaces is not None:
                    found.mark(item.replaces, entry)
                taken = None
                continue
            if goal is not None and entry == goal.entry and item.text in goal.text:
                taken = None  # the opening request already says it, in the same words
                continue
            taken = found.add(item)
    return found.items()


class _Found:
    """The instructions found so far, in order, with the indexes that keep each step constant-time: by gist (a
    restated instruction moves to the end), by setting noun and by value shape (what a new value may supersede)."""

    def __init__(self) -> None:
        self.slots: list[Instruction | None] = []
        self.by_gist: dict[str, int] = {}
        self.by_key: dict[str, list[int]] = {}
        self.by_shape: dict[str, list[int]] = {}
        self.by_item: dict[tuple[str, str], int] = {}

    def add(self, item: Instruction) -> Instruction:
        gist = _gist(item.text)
        old = self.by_gist.get(gist)
        if old is not None and self.slots[old] is not None:
            self.remove(self.slots[old])  # type: ignore[arg-type]
        index = len(self.slots)
        self.slots.append(item)
        self.by_gist[gist] = index
        self.by_item[(item.entry, item.text)] = index
        if item.kind == "value":
            for key in item.keys:
                self.by_key.setdefault(key, []).append(index)
            self.by_shape.setdefault(item.shape, []).append(index)
        return item

    def remove(self, item: Instruction) -> None:
        index = self.by_item.pop((item.entry, item.text), None)
        if index is not None:
            self.slots[index] = None
            gist = _gist(item.text)
            if self.by_gist.get(gist) == index:
                del self.by_gist[gist]

    def widen(self, item: Instruction, text: str) -> Instruction:
        """``item`` in place, its sentence now ``text`` (the sentence and the one that leans on it)."""
        index = self.by_item.pop((item.entry, item.text))
        wider = replace(item, text=_cut(text), keys=item.keys | _keys(text), words=_content(text))
        self.slots[index] = wider
        self.by_item[(wider.entry, wider.text)] = index
        return wider

    def items(self) -> list[Instruction]:
        return [item for item in self.slots if item is not None]

    def mark(self, old: Instruction, by: str) -> None:
        index = self.by_item.get((old.entry, old.text))
        if index is not None and (item := self.slots[index]) is not None:
            self.slots[index] = replace(item, superseded_by=by)

    def link(self, item: Instruction) -> Instruction:
        """The item, with ``replaces`` set to the newest earlier value it supersedes (same setting noun, or a
        correction with a value of the same shape and no setting noun of its own)."""
        correction = bool(_CORRECTION.search(item.text))
        words = item.words
        candidates: set[int] = set()
        for key in item.keys:
            candidates.update(self.by_key.get(key, [])[-LINK_REACH:])
        if correction:
            candidates.update(self.by_shape.get(item.shape, [])[-LINK_REACH:])
        for index in sorted(candidates, reverse=True):
            earlier = self.slots[index]
            if earlier is None or earlier.kind != "value" or earlier.superseded_by is not None:
                continue
            shared = words & earlier.words
            # A shared setting noun and a word of what it is set for ("the dev server port"), or a correction
            # ("no, make it 4317") with a value of the same shape that names the same thing, or names nothing.
            same_setting = (
                bool(item.keys & earlier.keys)
                and bool(shared - item.keys)
                and (correction or item.shape == earlier.shape)
            )
            bare = correction and item.shape == earlier.shape and (bool(shared) or not words)
            if same_setting or bare:
                self.slots[index] = replace(earlier, superseded_by=item.entry)
                return replace(item, keys=item.keys | earlier.keys, replaces=earlier)
        return item


HEADER = "## Standing instructions\nThe user's, in their words:"
MIN_GOAL_CHARS = 40  # what the opening request keeps, at least, when the block must fit a small share
SHORT_SENTENCE_CHARS = 120  # a line's sentence when the block must fit a share (its quoted old value: half)
MAX_SLOT_SPAN = 4  # tokens that may differ between lines merged into one: one or two slots close together
MAX_VARIANTS = 12  # variants listed in a merged line's slot; the rest counted
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class StandingLine:
    """One line of the block: the instruction (a template with its variants when several were merged), its entry
    ids, oldest first, and how many instructions it stands for."""

    kind: str
    entries: tuple[str, ...]
    text: str
    old: Instruction | None = None  # the earlier value this one supersedes, quoted on the line
    superseded_by: str | None = None
    count: int = 1
    order: int = 0  # the position of its newest instruction (the block is oldest first)

    def render(self, limit: int | None = None) -> str:
        ids = list(dict.fromkeys(self.entries))
        where = ", ".join(ids) if len(ids) <= 3 else f"{ids[0]}..{ids[-1]}"
        text = self.text if limit is None else _cut(self.text, limit)
        line = f"- [{where}] {text}"
        if self.old is not None:
            line += f' (supersedes [{self.old.entry}] "{_cut(self.old.text, 100 if limit is None else limit // 2)}")'
        elif self.superseded_by is not None:
            line += f" (superseded by [{self.superseded_by}])"
        if self.count > 1:
            line += (
                f" ({self.count} messages)"
                if len(ids) == self.count
                else (f" ({self.count} in one message)" if len(ids) == 1 else f" ({self.count} in {len(ids)} messages)")
            )
        return line


def standing_lines(items: Sequence[Instruction], verbatim: Collection[str] = ()) -> list[StandingLine]:
    """The block's lines, oldest first: superseded values folded into the line of what replaced them (or marked
    with the id of the kept-tail message that replaced them), instructions whose message the checkpoint shows
    verbatim left out (``verbatim``: their entry ids), and lines that differ only in a name or a number merged
    into one line that lists the variants."""
    replaced = {(i.replaces.entry, i.replaces.text) for i in items if i.replaces is not None}
    shown = set(verbatim)
    lines: list[StandingLine] = []
    for item in items:
        if (item.entry, item.text) in replaced or item.entry in shown:
            continue
        lines.append(StandingLine(item.kind, (item.entry,), item.text, item.replaces, item.superseded_by))
    return _merge_templates(lines)


def _merge_templates(lines: list[StandingLine]) -> list[StandingLine]:
    """Lines identical but for one or two nearby words (a name, a number) become one line listing the variants.

    Linear in the lines: each line is filed under its words with the numbers masked, once as a whole and once per
    word left out; the largest files are merged first, each line into one merged line at most."""
    tokens = [line.text.split(" ") for line in lines]
    buckets: dict[tuple[object, ...], list[int]] = {}
    for index, line in enumerate(lines):
        if line.kind == "goal" or line.old is not None or line.superseded_by is not None:
            continue
        masked = tuple("\x00" if _DIGITS.search(t) else t for t in tokens[index])
        buckets.setdefault((line.kind, -1, masked), []).append(index)
        for j in range(len(masked)):
            buckets.setdefault((line.kind, j, masked[:j], masked[j + 1 :]), []).append(index)
    groups = sorted((ix for ix in buckets.values() if len(ix) > 1), key=lambda ix: (-len(ix), ix[0]))
    merged: dict[int, StandingLine] = {}  # the newest member's index -> the merged line
    used: set[int] = set()
    for members in groups:
        free = [i for i in members if i not in used]
        if len(free) < 2:
            continue
        group = _merged_line([lines[i] for i in free], [tokens[i] for i in free])
        if group is None:
            continue
        used.update(free)
        merged[free[-1]] = replace(group, order=free[-1])
    out = []
    for index, line in enumerate(lines):
        if index in merged:
            out.append(merged[index])
        elif index not in used:
            out.append(replace(line, order=index))
    return out


def _merged_line(lines: list[StandingLine], tokens: list[list[str]]) -> StandingLine | None:
    """One line for ``lines`` (same number of words), or None when the words that differ are too far apart."""
    first = tokens[0]
    differ = [j for j in range(len(first)) if any(t[j] != first[j] for t in tokens)]
    entries = tuple(e for line in lines for e in line.entries)
    if not differ:
        return StandingLine(lines[-1].kind, entries, lines[-1].text, count=len(lines))
    lo, hi = differ[0], differ[-1]
    if hi - lo >= MAX_SLOT_SPAN:
        return None
    variants = list(dict.fromkeys(" ".join(t[lo : hi + 1]) for t in tokens))
    text = " ".join([*first[:lo], _slot(variants), *first[hi + 1 :]])
    return StandingLine(lines[-1].kind, entries, text, count=len(lines))


def _common_prefix(texts: list[str]) -> str:
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def _slot(variants: list[str]) -> str:
    """The variants of a slot as one token: each variant whole (``{Redux, MobX}``: a path or a name stays one
    string a search finds), except a run of more than three numbers around a common prefix and suffix, written as
    ranges (``component-{001..019}``); past ``MAX_VARIANTS`` the rest counted."""
    prefix = _common_prefix(variants)
    suffix = _common_prefix([v[len(prefix) :][::-1] for v in variants])[::-1]
    while prefix and prefix[-1].isdigit():  # numbers stay whole
        prefix = prefix[:-1]
    while suffix and suffix[0].isdigit():
        suffix = suffix[1:]
    middles = [v[len(prefix) : len(v) - len(suffix)] for v in variants]
    if len(variants) > 3 and all(m.isdigit() for m in middles):
        numbers = sorted(set(middles), key=lambda m: (int(m), m))
        runs: list[list[str]] = []
        for m in numbers:
            if runs and int(m) == int(runs[-1][-1]) + 1:
                runs[-1].append(m)
            else:
                runs.append([m])
        parts = [run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}" for run in runs]
        more = len(parts) - MAX_VARIANTS
        listed = ",".join(parts[:MAX_VARIANTS]) + (f",… {more} more" if more > 0 else "")
        return f"{prefix}{{{listed}}}{suffix}"
    more = len(variants) - MAX_VARIANTS
    sep = " | " if any("," in v for v in variants) else ", "
    return "{" + sep.join(variants[:MAX_VARIANTS]) + (f"{sep}… {more} more" if more > 0 else "") + "}"


def render_standing(
    items: Sequence[Instruction], max_tokens: int | None = None, *, verbatim: Collection[str] = ()
) -> str:
    """The block, or "" when there is nothing to say (see ``standing_lines``): at most ``MAX_LINES`` lines (the
    opening request, a line counting what is left out, the newest). ``max_tokens`` (Pi's chars/4): the block
    compresses itself to fit: sentences cut short first, then the least valuable lines left out (preferences, then
    the oldest), the opening request last; below the smallest block (the header, the count and the opening request
    cut to ``MIN_GOAL_CHARS``) it is that smallest block."""
    lines = standing_lines(items, verbatim)
    if not lines:
        return ""
    text = _render(lines, None, MAX_LINES)
    if max_tokens is None or _tokens(text) <= max_tokens:
        return text
    budget = max_tokens * 4
    rows = [(line, line.render(SHORT_SENTENCE_CHARS)) for line in lines]
    goal = [row for row in rows if row[0].kind == "goal"]
    rest = [row for row in rows if row[0].kind != "goal"]
    if len(goal) + len(rest) > MAX_LINES:  # the newest, as without a budget
        rest = rest[-(MAX_LINES - len(goal)) :]
    # What goes first: preferences, then everything else, oldest first within each.
    order = sorted(rest, key=lambda row: (row[0].kind != "preference", row[0].order))
    total = js_len(HEADER) + sum(js_len(r) + 1 for _, r in (*goal, *rest)) + NOTE_CHARS
    dropped: set[int] = set()
    for line, rendered in order:
        if total <= budget:
            break
        dropped.add(line.order)
        total -= js_len(rendered) + 1
    kept = [row for row in rest if row[0].order not in dropped]
    left_out = sum(line.count for line in lines if line.kind != "goal") - sum(row[0].count for row in kept)
    head = [r for _, r in goal]
    if goal and total > budget:  # the opening request alone is too long: cut it, not below MIN_GOAL_CHARS
        room = max(MIN_GOAL_CHARS, min(len(goal[0][0].text), SHORT_SENTENCE_CHARS) - (total - budget))
        head = [goal[0][0].render(room)]
    body = [*head, *([_note(left_out)] if left_out else []), *(r for _, r in kept)]
    return HEADER + "\n" + "\n".join(body)


NOTE_CHARS = 64  # about what the line counting the left-out instructions costs


def _note(count: int) -> str:
    return f"- … {count} more not shown here (in the spans and the session file)"


def _render(lines: list[StandingLine], limit: int | None, max_lines: int) -> str:
    rendered = [line.render(limit) for line in lines]
    if len(rendered) > max_lines:  # the opening request, a count of what is left out, the newest instructions
        head = rendered[:1] if lines[0].kind == "goal" else []
        newest = rendered[-(max_lines - len(head)) :]
        left_out = sum(line.count for line in lines[len(head) : len(lines) - len(newest)])
        rendered = [*head, _note(left_out), *newest]
    return HEADER + "\n" + "\n".join(rendered)


def _tokens(text: str) -> int:
    return math.ceil(js_len(text) / 4)


_USER_HEAD = re.compile(r"^\[([^\]\n]+)\] user:\n", re.MULTILINE)


def verbatim_user_entries(messages: Sequence[tuple[str, str]], rendered: str) -> frozenset[str]:
    """The entry ids of ``messages`` ((entry id, text)) that ``rendered`` (the spans as the cap left them) shows
    whole under their own header (``[id] user:``, as spans render a user message): the block need not repeat
    them. One pass over the text."""
    starts: dict[str, list[int]] = {}
    for match in _USER_HEAD.finditer(rendered):
        starts.setdefault(match[1], []).append(match.end())
    whole = set()
    for entry, text in messages:
        for at in starts.get(entry, ()):
            end = at + len(text)
            if text and rendered.startswith(text, at) and (end == len(rendered) or rendered[end] == "\n"):
                whole.add(entry)
                break
    return frozenset(whole)
