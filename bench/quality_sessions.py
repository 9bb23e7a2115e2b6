"""Generate coding-task sessions with planted facts, for the checkpoint-quality harness (``quality.py``).

A session is one task on a small Python project: user turns (short requests, long pasted logs and stack traces),
assistant text with ``read``/``bash``/``edit``/``write``/``grep``/``find`` calls and their paired results. Facts of
each kind (see ``KINDS``) are planted in it, each carrying a *needle*: a string that occurs in the session only in
the entries the fact names, so scoring is a plain substring check. The same seed and size give the same bytes.

    python bench/quality_sessions.py --size 100k --out bench/data/quality/task-100k.jsonl [--seed 1]

writes the session and, next to it, ``task-100k.facts.json``: every planted fact (kind, needle, entry ids, turn
index) and the entry id that starts each turn. Sizes are in Pi's tokens (chars / 4) of message history.
Assistant replies carry no usage, so Pi's context estimate is the sum of its per-message estimates whatever
compactions are added later (a replay appends compactions between turns).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from random import Random
from typing import Any

import orjson
from session_content import NOUNS, PROFILES, USER_PROMPTS, Content

from pi_compact.pi.tokens import estimate_tokens

KINDS = (
    "rule",
    "constraint",
    "preference",
    "value",
    "goal",
    "decision",
    "progress",
    "error",
    "tool_fact",
    "path_in_long_message",
    "user_message",
)
# The kinds the other shapes plant (``SHAPES``): rulings of the user (which instruction holds: allowed and denied
# cases), task facts (a value the task found or was given, in user messages, replies and tool outputs).
SHAPE_KINDS = ("ruling_allowed", "ruling_denied", "task_fact")
LONG_MESSAGE_OFFSET = 400  # a path_in_long_message needle starts after this many characters of its message
USER_TRACE_CHARS = 40  # a user message's trace: its first 40 characters (whitespace collapsed)
MAX_OUTPUT_CHARS = 6000  # tool outputs are cut to their tail at this size, so the smallest window still fits a turn
CWD = "/home/dev/weatherly"
PROFILE = PROFILES[0]  # weatherly, a Python project
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def parse_tokens(text: str) -> int:
    """``30k``, ``100k``, ``1.5m`` or a plain number of tokens."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([km]?)\s*", text.lower())
    if not m:
        raise ValueError(f"not a token count: {text!r} (use e.g. 30k, 100k, 300k)")
    return int(float(m.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[m.group(2)])


def size_label(tokens: int) -> str:
    return f"{tokens // 1000}k" if tokens % 1000 == 0 else str(tokens)


@dataclass
class Fact:
    """One planted fact. ``needle`` is scored; ``entries`` are every entry its needle occurs in (the first is
    ``entry_id``, where it is planted). A value's ``old_*`` fields are the value it replaced; an error's
    ``resolved_*`` fields the successful rerun of the same command."""

    kind: str
    sub: str
    needle: str
    entry_id: str
    turn: int
    entries: list[str]
    text: str = ""
    old_needle: str | None = None
    old_entry_id: str | None = None
    old_turn: int | None = None
    resolved_entry_id: str | None = None
    resolved_turn: int | None = None
    # Found when one line of the model's text holds every part (the needle's words may be merged or reworded
    # around them, as a block that merges lines differing in a name does); a ruling's polarity must be on it too.
    parts: list[str] | None = None


# ---------------------------------------------------------------------------------------------------------------
# Fact texts. Every template carries a fresh token (``tok``: a made-up word with a digit) so that its needle is
# unique in the session; ``needle`` is the part of the sentence any faithful record of the fact would contain.

RULES = (
    ("never modify data/{tok}_ledger.db, that's the production ledger and it is append-only", "data/{tok}_ledger.db"),
    ("please don't touch deploy/{tok}.env, it holds the live credentials", "deploy/{tok}.env"),
    ("never run `make reset-{tok}` yourself, it wipes the shared database", "make reset-{tok}"),
    ("always run scripts/verify_{tok}.sh before you call anything done", "scripts/verify_{tok}.sh"),
    ("never push to the release/{tok} branch directly, I merge there myself", "release/{tok}"),
    ("don't add files under gen/{tok}/, that directory is generated", "gen/{tok}/"),
)
CONSTRAINTS = (
    ("it must stay compatible with Python 3.9, the {tok} hosts still run it", "{tok} hosts"),
    ("no new third-party dependencies, only the stdlib and {tok}-utils", "{tok}-utils"),
    ("the public function load_{tok}() must keep its signature, other teams call it", "load_{tok}()"),
    ("peak memory has to stay under {num} MB on the {tok} workers", "{num} MB on the {tok} workers"),
    ("the /v2/{tok} endpoint must answer within 200 ms at p99", "/v2/{tok}"),
)
PREFERENCES = (
    ("I prefer small commits, one change each, with messages prefixed `{tok}:`", "{tok}:"),
    ("use tabs, not spaces, in Makefile.{tok}", "Makefile.{tok}"),
    ("I like descriptive test names, like test_{tok}_rejects_empty_station", "test_{tok}_rejects_empty_station"),
    ("I'd rather you use the {tok}-trace logger than print() for debugging", "{tok}-trace logger"),
    ("keep docstrings in the {tok} numpydoc style please", "{tok} numpydoc style"),
)
VALUES = (
    ("the dev server listens on port {a}", "actually, no: make the dev server port {b}", "{n5}"),
    ("the upstream timeout is {a} ms", "raise the upstream timeout to {b} ms", "{n4}"),
    ("the import batch size is {a} rows", "change of mind on the import batch: use {b} rows", "{n4}"),
    ("we deploy to the region {a}", "we moved, deploy to {b} from now on", "eu-{tok}-{d}"),
    ("the forecast bucket is {a}", "the forecast bucket got renamed to {b}", "wx-{tok}-data"),
)
DECISIONS = (
    (
        "I'll use a trie for the {tok} lookups instead of a hash map, because every query is a prefix match.",
        "trie for the {tok} lookups",
    ),
    (
        "I'm going with SQLite for the {tok} cache rather than pickle files: it survives concurrent writers.",
        "SQLite for the {tok} cache",
    ),
    (
        "Decision: keep the {tok} parsing in a pure function and do all I/O in the CLI layer.",
        "{tok} parsing in a pure function",
    ),
    (
        "I'll batch the {tok} requests in groups of 50 instead of one call per station, to stay under the rate limit.",
        "batch the {tok} requests",
    ),
    (
        "Let's store the timestamps in the {tok} table as UTC epoch seconds rather than ISO strings.",
        "{tok} table as UTC epoch seconds",
    ),
)
ERRORS = (
    ("sqlite3.OperationalError: no such table: {tok}_readings", "no such table: {tok}_readings"),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'config/{tok}.toml'", "config/{tok}.toml"),
    ("ImportError: cannot import name '{Tok}Client' from 'weatherly.api'", "{Tok}Client"),
    ("PermissionError: [Errno 13] Permission denied: '/var/run/{tok}.sock'", "/var/run/{tok}.sock"),
    ("ConnectionRefusedError: [Errno 111] Connection refused ({tok}.internal:8443)", "{tok}.internal:8443"),
)
LONG_MESSAGE_LINES = (
    ("ERROR [worker] request id=req_{tok} failed: upstream returned 502", "req_{tok}"),
    ('  File "/home/dev/weatherly/src/weatherly/{tok}_adapter.py", line 88, in fetch', "{tok}_adapter.py"),
    ("{Tok}Error: segment overlap at offset 4410 in station feed", "{Tok}Error: segment overlap"),
    ("WARN config loaded from /etc/weatherly/{tok}.conf (fallback)", "/etc/weatherly/{tok}.conf"),
)
GOALS = (
    "add a {tok} forecast export that writes one CSV file per station and hour",
    "make the {tok} station importer resumable after a crash",
)
GOAL_CHANGES = (
    "also expose the export through a {tok} endpoint in the HTTP API",
    "on top of that, the importer has to run as a {tok} cron job every ten minutes",
)
REQUEST_OPENERS = (
    "Next,",
    "Now",
    "OK, next:",
    "Can you",
    "Please",
    "Moving on:",
    "One more thing:",
    "Alright,",
    "Good. Now",
    "Thanks. Next",
)
CASUAL_LEADS = ("Oh, and ", "Also, ", "By the way, ", "Before I forget: ", "One rule: ", "Note: ", "Heads up: ")
VALUE_LEADS = ("FYI, ", "For reference, ", "Also, ", "Note: ")
ASSISTANT_OPENERS = (
    "Let me look at {file} first.",
    "I'll check how {ident} is used.",
    "Running the tests for {noun} to see where we are.",
    "Now let me update {file}.",
    "Let me search for the {noun} handling.",
    "I'll read the {noun} module before changing anything.",
)
ASSISTANT_CLOSERS = (
    "Done: {file} now handles the {noun} case, and the {noun2} tests pass.",
    "I've updated {file}. The {noun} path is covered by a new test.",
    "That's in place. Next I'd look at the {noun2} handling in {file}.",
    "The change to {file} is done; {num} tests pass locally.",
)
_SYLLABLES = (
    "ka", "ve", "lo", "tri", "zun", "mar", "qui", "dex", "pol", "sa", "nor", "bel", "ty", "gro", "fen", "wil",
    "cor", "hax", "jo", "ru",
)  # fmt: skip


class Generator:
    """The ``task`` shape: a Python forecast service, the facts of ``KINDS`` planted at random places."""

    cwd = CWD

    def __init__(self, target_tokens: int, seed: int) -> None:
        self.rng = Random(seed)
        self.target = target_tokens
        self.seed = seed
        self.c = Content(self.rng, PROFILE, CWD)
        self.entries: list[dict[str, Any]] = []
        self.facts: list[Fact] = []
        self.turn_starts: list[str] = []
        self.tokens = 0
        self.turn = -1
        self._ids: set[str] = set()
        self._tokens_used: set[str] = set()
        self._calls = 0
        self._clock = 1767225600000  # 2026-01-01
        self._numbers: set[int] = set()
        self._stated: dict[str, int] = {}

    # -- low level -----------------------------------------------------------------------------------------

    def tok(self) -> str:
        while True:
            word = "".join(self.rng.choice(_SYLLABLES) for _ in range(self.rng.randint(2, 3)))
            word += str(self.rng.randint(2, 9))
            if word not in self._tokens_used:
                self._tokens_used.add(word)
                return word

    def number(self, digits: int) -> int:
        while True:
            n = self.rng.randint(10 ** (digits - 1) + 1, 10**digits - 1)
            if n not in self._numbers:
                self._numbers.add(n)
                return n

    def _id(self) -> str:
        while True:
            value = f"{self.rng.getrandbits(32):08x}"
            if value not in self._ids and not value.isdigit():
                self._ids.add(value)
                return value

    def _add(self, message: dict[str, Any]) -> str:
        self._clock += self.rng.randint(800, 40000)
        entry_id = self._id()
        parent = self.entries[-1]["id"] if self.entries else None
        stamp = _iso(self._clock)
        message = {**message, "timestamp": self._clock}
        self.entries.append(
            {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}
        )
        self.tokens += estimate_tokens(message)
        return entry_id

    def user(self, text: str) -> str:
        entry_id = self._add({"role": "user", "content": text})
        self.turn_starts.append(entry_id)
        return entry_id

    def assistant(self, text: str = "", calls: list[dict[str, Any]] = ()) -> str:  # type: ignore[assignment]
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += calls
        return self._add(
            {
                "role": "assistant",
                "content": content,
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "stopReason": "toolUse" if calls else "stop",
            }
        )

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        self._calls += 1
        return {"type": "toolCall", "id": f"toolu_{self._calls:05d}", "name": name, "arguments": arguments}

    def result(self, call: dict[str, Any], text: str, is_error: bool = False) -> str:
        return self._add(
            {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": [{"type": "text", "text": self.c.tail(text, MAX_OUTPUT_CHARS)}],
                "isError": is_error,
            }
        )

    def step(self, text: str, name: str, output: str, is_error: bool = False, **arguments: Any) -> tuple[str, str]:
        """One assistant message with one call, and its result: (assistant id, result id)."""
        call = self.call(name, **arguments)
        return self.assistant(text, [call]), self.result(call, output, is_error)

    def fact(self, kind: str, sub: str, needle: str, entries: list[str], text: str = "", **extra: Any) -> Fact:
        f = Fact(kind, sub, needle, entries[0], self.turn, entries, text, **extra)
        self.facts.append(f)
        return f

    # -- filler --------------------------------------------------------------------------------------------

    def fill(self, template: str) -> str:
        return self.c.fill(template)

    def request(self) -> str:
        r = self.rng
        base = self.fill(r.choice(USER_PROMPTS[:11] + USER_PROMPTS[14:15]))
        return f"{r.choice(REQUEST_OPENERS)} {base[0].lower()}{base[1:]} (this is about {self.c.ident()})"

    def pasted(self) -> str:
        r = self.rng
        kind = r.random()
        if kind < 0.4:
            body = "\n".join(self.c.trace_lines() + self.c.trace_lines())
            lead = f"The {r.choice(NOUNS)} job in CI crashes with this trace:"
        elif kind < 0.7:
            body = self.c.app_log(r.randint(12, 30))
            lead = f"Here's the {r.choice(NOUNS)} worker log from staging, something is off with {self.c.ident()}:"
        else:
            body = self.c.test_log(r.randint(15, 35))
            lead = f"My local run of the {r.choice(NOUNS)} tests says:"
        return f"{lead}\n\n```\n{body}\n```\n\nCan you find out what's wrong?"

    def read_step(self) -> None:
        path = f"{CWD}/{self.rng.choice(PROFILE.files)}"
        self.step(
            self.fill(self.rng.choice(ASSISTANT_OPENERS)), "read", self.c.code(self.rng.randint(25, 90)), path=path
        )

    def bash_step(self) -> None:
        r = self.rng
        if r.random() < 0.6:
            cmd = r.choice(PROFILE.test_cmds)
            out = self.c.test_log(r.randint(10, 50))
            failed = " failed," in out.rsplit("\n", 1)[-1] and not out.rsplit("\n", 1)[-1].startswith("===== 0 failed")
        else:
            cmd = r.choice(PROFILE.build_cmds)
            out = self.c.build_log()
            failed = out.startswith("src/") or "error" in out.split("\n", 1)[0]
        if failed:
            out += "\n\nCommand exited with code 1"
        self.step(self.fill(r.choice(ASSISTANT_OPENERS)), "bash", out, failed, command=cmd)

    def edit_step(self, path: str | None = None) -> str:
        path = path or f"{CWD}/{self.rng.choice(PROFILE.files)}"
        old, new = self.c.code(self.rng.randint(2, 6)), self.c.code(self.rng.randint(2, 8))
        _, result = self.step(
            self.fill("Updating the {noun} handling."),
            "edit",
            f"Successfully replaced 1 block in {path}.",
            path=path,
            edits=[{"oldText": old, "newText": new}],
        )
        return result

    def grep_step(self) -> None:
        r = self.rng
        lines = [f"{r.choice(PROFILE.files)}:{r.randint(1, 400)}:{r.choice(self.c.pool).strip()}" for _ in range(12)]
        self.step(self.fill("Let me find where {noun} is handled."), "grep", "\n".join(lines), pattern=r.choice(NOUNS))

    def filler_step(self) -> None:
        pick = self.rng.random()
        if pick < 0.35:
            self.read_step()
        elif pick < 0.65:
            self.bash_step()
        elif pick < 0.85:
            self.edit_step()
        else:
            self.grep_step()

    # -- planted facts -------------------------------------------------------------------------------------

    def _fill_fact(self, template: str, values: dict[str, str]) -> str:
        return template.format(**values)

    def _values(self) -> dict[str, str]:
        tok = self.tok()
        return {"tok": tok, "Tok": tok.capitalize(), "num": str(self.number(3))}

    def statement(self, kind: str) -> tuple[str, str, str]:
        """(sentence, needle, sub) for a rule, constraint or preference stated in a user message."""
        pools = {"rule": RULES, "constraint": CONSTRAINTS, "preference": PREFERENCES}
        pool = pools[kind]
        i = self._stated.get(kind, 0) % len(pool)
        self._stated[kind] = self._stated.get(kind, 0) + 1
        sentence, needle = pool[i]
        v = self._values()
        return self._fill_fact(sentence, v), self._fill_fact(needle, v), f"{kind}{i}"

    def value_pair(self, i: int) -> tuple[str, str, str, str]:
        first, change, shape = VALUES[i % len(VALUES)]

        def one() -> str:
            return shape.format(n5=self.number(5), n4=self.number(4), tok=self.tok(), d=self.rng.randint(1, 3))

        a, b = one(), one()
        return first.format(a=a), change.format(b=b), a, b

    def run_turn(self, pending: list[tuple[str, Any]]) -> None:
        """One turn: a user message carrying the user-side facts, steps carrying the rest, a closing reply."""
        r = self.rng
        self.turn += 1
        said: list[tuple[str, str, str]] = []  # (kind, sub, needle) stated in the user message
        text = self.request()
        long_line: tuple[str, str] | None = None
        goal_text: tuple[str, str] | None = None
        for kind, arg in pending:
            if kind in ("rule", "constraint", "preference"):
                sentence, needle, sub = self.statement(kind)
                text += f"\n\n{r.choice(CASUAL_LEADS)}{sentence}."
                said.append((kind, sub, needle))
            elif kind == "value_set":
                text += f"\n\n{r.choice(VALUE_LEADS)}{arg['first']}."
            elif kind == "value_change":
                text += f"\n\n{arg['change'][0].upper()}{arg['change'][1:]}."
            elif kind == "goal_change":
                goal_text = arg
                text = f"Change of plan: {arg[0]}. {text}"
            elif kind == "long_line":
                long_line = arg
        if self.turn == 0:
            goal, needle = self.goal
            text = (
                f"I'm working on weatherly, our forecast service. The goal for this session: {goal}. "
                f"Start by reading the code around {self.c.file()} and the tests."
            )
        if long_line is not None or (self.turn > 0 and r.random() < 0.18):
            text = self._long_message(text, long_line)
        user_id = self.user(text)
        for kind, sub, needle in said:
            self.fact(kind, sub, needle, [user_id], text)
        if self.turn == 0:
            self.fact("goal", "initial", self.goal[1], [user_id], text)
        if goal_text is not None:
            self.fact("goal", "changed", goal_text[1], [user_id], text)
        if long_line is not None:
            self.fact("path_in_long_message", "late_line", long_line[1], [user_id], text)
        for kind, arg in pending:
            if kind == "value_set":
                arg["set_entry"], arg["set_turn"] = user_id, self.turn
            elif kind == "value_change":
                self.fact(
                    "value",
                    arg["sub"],
                    arg["b"],
                    [user_id],
                    text,
                    old_needle=arg["a"],
                    old_entry_id=arg["set_entry"],
                    old_turn=arg["set_turn"],
                )
        steps = [(k, a) for k, a in pending if k not in ("rule", "constraint", "preference", "value_set")]
        steps = [(k, a) for k, a in steps if k not in ("value_change", "goal_change", "long_line")]
        n_filler = r.randint(1, 4)
        slots = sorted(r.sample(range(n_filler + len(steps)), len(steps)))
        planted = iter(steps)
        for i in range(n_filler + len(steps)):
            if slots and slots[0] == i:
                slots.pop(0)
                kind, arg = next(planted)
                self.planted_step(kind, arg)
            else:
                self.filler_step()
        self.assistant(self.fill(r.choice(ASSISTANT_CLOSERS)))

    def _long_message(self, text: str, line: tuple[str, str] | None) -> str:
        """A long pasted message after ``text``; ``line`` (text, needle) goes after LONG_MESSAGE_OFFSET chars."""
        pasted = self.pasted()
        if line is None:
            return f"{text}\n\n{pasted}"
        head = f"{text}\n\n"
        lines = pasted.split("\n")
        # the first line break at or after the offset (counting the request before the paste), inside the block
        at, pos = len(lines) - 3, len(head)
        for i, ln in enumerate(lines):
            if pos > LONG_MESSAGE_OFFSET + 20 and i > 2 and i < len(lines) - 3:
                at = i
                break
            pos += len(ln) + 1
        lines.insert(max(at, 3), line[0])
        return head + "\n".join(lines)

    def planted_step(self, kind: str, arg: Any) -> None:
        r = self.rng
        if kind == "decision":
            v = self._values()
            sentence, needle = DECISIONS[arg % len(DECISIONS)]
            sentence, needle = sentence.format(**v), needle.format(**v)
            text = f"{self.fill('Looking at {file}, the {noun} part needs a choice.')} {sentence}"
            call = self.call("read", path=f"{CWD}/{r.choice(PROFILE.files)}")
            aid = self.assistant(text, [call])
            self.result(call, self.c.code(r.randint(20, 60)))
            self.fact("decision", f"decision{arg % len(DECISIONS)}", needle, [aid], sentence)
        elif kind == "progress_file":
            tok = self.tok()
            rel = f"src/weatherly/{tok}_export.py"
            if arg % 2 == 0:
                aid, rid = self.step(
                    f"Creating the new module for {tok}.",
                    "write",
                    f"Successfully wrote {r.randint(800, 4000)} bytes to {CWD}/{rel}",
                    path=f"{CWD}/{rel}",
                    content=self.c.code(r.randint(20, 60)),
                )
                self.fact("progress", "file_written", rel, [aid, rid])
            else:
                call = self.call("edit", path=f"{CWD}/{rel}", edits=[{"oldText": "pass", "newText": "return 0"}])
                aid = self.assistant(f"Editing the {tok} module.", [call])
                rid = self.result(call, f"Successfully replaced 1 block in {CWD}/{rel}.")
                self.fact("progress", "file_edited", rel, [aid, rid])
        elif kind == "progress_command":
            tok = self.tok()
            cmd = f"python -m weatherly.tools.{tok} --rebuild-index"
            aid, _ = self.step("Rebuilding the index.", "bash", f"rebuilt {r.randint(20, 900)} entries", command=cmd)
            self.fact("progress", "command", f"weatherly.tools.{tok}", [aid])
        elif kind == "progress_test":
            tok = self.tok()
            name = f"test_{tok}_roundtrip"
            ok = arg % 2 == 0
            log = self.c.test_log(r.randint(8, 20)).split("\n")
            log.insert(2, f"tests/test_export.py::{name} {'PASSED' if ok else 'FAILED'} [ 20%]")
            out = "\n".join(log) + ("" if ok else "\n\nCommand exited with code 1")
            _, rid = self.step("Running the export tests.", "bash", out, not ok, command="pytest tests/test_export.py")
            said = f"`{name}` passes now." if ok else f"`{name}` still fails; I'll come back to it."
            aid = self.assistant(said)
            self.fact("progress", "test_pass" if ok else "test_fail", name, [aid, rid], said)
        elif kind == "progress_commit":
            tok = self.tok()
            msg = f"export: add {tok} rollover"
            out = f"[main {r.getrandbits(28):07x}] {msg}\n 2 files changed, {r.randint(5, 90)} insertions(+)"
            aid, rid = self.step("Committing this step.", "bash", out, command=f'git commit -am "{msg}"')
            self.fact("progress", "commit", msg, [aid, rid])
        elif kind == "error":
            v = self._values()
            line, needle = ERRORS[arg["i"] % len(ERRORS)]
            line, needle = line.format(**v), needle.format(**v)
            trace = "\n".join(self.c.trace_lines()[:-1])
            out = f"{trace}\n{line}\n\nCommand exited with code 1"
            _, rid = self.step("Trying the sync.", "bash", out, True, command=arg["command"])
            arg["fact"] = self.fact("error", f"error{arg['i'] % len(ERRORS)}", needle, [rid], line)
        elif kind == "error_fix":
            aid, rid = self.step(
                "Running it again after the fix.", "bash", f"synced {r.randint(3, 99)} stations", command=arg["command"]
            )
            arg["fact"].resolved_entry_id = rid
            arg["fact"].resolved_turn = self.turn
        elif kind == "tool_fact":
            tok = self.tok()
            sub = ("grep_path", "version", "failing_test", "find_path")[arg % 4]
            if sub == "grep_path":
                path = f"src/weatherly/{tok}/loader.py"
                lines = [
                    f"{r.choice(PROFILE.files)}:{r.randint(1, 400)}:{r.choice(self.c.pool).strip()}" for _ in range(6)
                ]
                lines.insert(r.randint(0, 6), f"{path}:{r.randint(1, 300)}:def load_station(row):")
                _, rid = self.step("Where are stations loaded?", "grep", "\n".join(lines), pattern="def load_station")
                needle = path
            elif sub == "version":
                needle = f"{r.randint(2, 9)}.{r.randint(10, 40)}.{self.number(3)}"
                out = f"Name: pyproj\nVersion: {needle}\nSummary: Python interface to PROJ\nLocation: /usr/lib/python3"
                _, rid = self.step("Which pyproj is installed?", "bash", out, command="pip show pyproj")
            elif sub == "failing_test":
                needle = f"test_{tok}_boundary"
                log = self.c.test_log(r.randint(8, 20))
                out = f"{log}\nFAILED tests/test_units.py::{needle} - AssertionError: 273.15 != 273.16"
                _, rid = self.step("Running the units tests.", "bash", out + "\n\nCommand exited with code 1", True,
                                   command="pytest tests/test_units.py")  # fmt: skip
            else:
                needle = f"data/fixtures/{tok}_2019.csv"
                found = [f"./data/fixtures/{self.c.ident()}.csv" for _ in range(5)]
                found.insert(r.randint(0, 5), f"./{needle}")
                _, rid = self.step("Looking for fixture files.", "find", "\n".join(found), pattern="*.csv", path="data")
            self.fact("tool_fact", sub, needle, [rid])

    # -- the session ---------------------------------------------------------------------------------------

    def schedule(self) -> list[tuple[float, str, Any]]:
        """(position in the session as a share of its tokens, kind, argument) for every planted fact."""
        r = self.rng
        s = self.target / 100_000

        def count(base: float, lo: int, hi: int) -> int:
            return max(lo, min(hi, round(base * s)))

        plan: list[tuple[float, str, Any]] = []
        for kind, base, lo, hi, span in (
            ("rule", 4, 2, 8, (0.01, 0.25)),
            ("constraint", 3, 2, 6, (0.01, 0.35)),
            ("preference", 3, 2, 6, (0.02, 0.5)),
        ):
            plan += [(r.uniform(*span), kind, None) for _ in range(count(base, lo, hi))]
        for i in range(count(3, 2, 6)):
            first, change, a, b = self.value_pair(i)
            arg = {"first": first, "change": change, "a": a, "b": b, "sub": f"value{i % len(VALUES)}"}
            at = r.uniform(0.03, 0.4)
            plan += [(at, "value_set", arg), (at + r.uniform(0.25, 0.45), "value_change", arg)]
        v = self._values()
        i = r.randrange(len(GOAL_CHANGES))
        change = GOAL_CHANGES[i].format(**v)
        plan.append(
            (
                r.uniform(0.5, 0.65),
                "goal_change",
                (change, f"{v['tok']} endpoint" if i == 0 else f"{v['tok']} cron job"),
            )
        )
        plan += [(r.uniform(0.02, 0.95), "decision", i) for i in range(count(6, 3, 12))]
        progress = ("progress_file", "progress_command", "progress_test", "progress_commit")
        plan += [(r.uniform(0.02, 0.95), progress[i % 4], i // 4) for i in range(count(8, 4, 16))]
        for i in range(count(4, 2, 8)):
            at = r.uniform(0.03, 0.85)
            arg = {"i": i, "command": f"python -m weatherly.sync --profile {self.tok()}"}
            plan.append((at, "error", arg))
            if i % 2 == 0:  # every other error is fixed a few turns later by the same command
                plan.append((at + r.uniform(0.03, 0.1), "error_fix", arg))
        plan += [(r.uniform(0.02, 0.95), "tool_fact", i) for i in range(count(5, 4, 12))]
        for i in range(count(3, 2, 6)):
            v = self._values()
            line, needle = LONG_MESSAGE_LINES[i % len(LONG_MESSAGE_LINES)]
            plan.append((r.uniform(0.03, 0.95), "long_line", (line.format(**v), needle.format(**v))))
        plan.sort(key=lambda p: p[0])
        return plan

    def run(self) -> None:
        v = self._values()
        i = self.rng.randrange(len(GOALS))
        self.goal = (GOALS[i].format(**v), f"{v['tok']} forecast export" if i == 0 else f"{v['tok']} station importer")
        plan = self.schedule()
        while self.tokens < self.target or plan:
            share = self.tokens / self.target
            pending: list[tuple[str, Any]] = []
            while plan and plan[0][0] <= share and len(pending) < 3:
                _, kind, arg = plan.pop(0)
                if kind == "value_change" and "set_entry" not in arg:  # its setting is still pending: next turn
                    plan.insert(0, (share, kind, arg))
                    break
                if kind == "error_fix" and "fact" not in arg:
                    plan.insert(0, (share, kind, arg))
                    break
                pending.append((kind, arg))
            self.run_turn(pending)
        self.user_facts()

    def user_facts(self) -> None:
        """A trace fact for every user message: its first characters."""
        for e in self.entries:
            m = e["message"]
            if m["role"] == "user":
                text = m["content"]
                self.facts.append(
                    Fact(
                        "user_message",
                        "trace",
                        normalize(text)[:USER_TRACE_CHARS],
                        e["id"],
                        self.turn_starts.index(e["id"]),
                        [e["id"]],
                    )
                )

    def header(self) -> dict[str, Any]:
        return {
            "type": "session",
            "version": 3,
            "id": f"0199{self.seed:04x}-{self.target:08x}"[:36],
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": self.cwd,
        }


# ---------------------------------------------------------------------------------------------------------------
# Other shapes. ``rulings``: a TypeScript dashboard task whose user gives one ruling after another in the same
# template ("Do not adopt LIB for component-NNN", "You may use LIB for component-NNN"), states task values in
# passing, and whose agent reads the same files in many ranges and reports values it found; ``pasted``: a task whose
# user pastes long logs with the value that matters in their middle (past what a head-of-message stub keeps).

RULING_LIBS = ("chartkit", "gridline", "formflow", "tablestack")
DENY_TEMPLATES = (
    "Do not adopt {lib} for component-{n}; it breaks the print layout.",
    "Do not adopt {lib} for component-{n}; legal has not cleared its licence.",
    "Do not adopt {lib} for component-{n}; the bundle budget rules it out.",
)
ALLOW_TEMPLATES = (
    "You may use {lib} for component-{n}, it passed the review.",
    "You may use {lib} for component-{n}, the team signed off on it.",
)
TASK_FACTS_USER = (
    ("The {tok} widget refreshes every {n} seconds.", ("{tok}", "{n} seconds")),
    ("The API key for {tok} lives in vault path secret/{tok}/{n}.", ("secret/{tok}/{n}",)),
    ("Our SLA for the {tok} page is {n} ms at p95.", ("{tok}", "{n} ms")),
    ("The feature flag is dash_{tok}_{n} and it stays off in production.", ("dash_{tok}_{n}",)),
)
TASK_FACTS_FOUND = (
    ("Found it: the {tok} chart caps the series at {n} points.", ("{tok}", "{n} points")),
    ("The {tok} query takes {n} ms because it scans the whole table.", ("{tok}", "{n} ms")),
    ("The bundle grew to {n} KB after the {tok} import.", ("{tok}", "{n} KB")),
    ("The {tok} reducer is called {n} times per render.", ("{tok}", "{n} times")),
)
TASK_FACTS_OUTPUT = (
    ("export const {TOK}_LIMIT = {n};", ("{TOK}_LIMIT = {n}",)),
    ('  "{tok}-core": "^{n}.0.0",', ("{tok}-core", "{n}.0.0")),
)
FRAGMENTS = ("do not redo it.", "both are needed to reproduce it.", "keep it that way.", "that one is fine.")
DASH_FILES = (
    "src/components/Dashboard.tsx",
    "src/components/ChartPanel.tsx",
    "src/components/FilterBar.tsx",
    "src/hooks/useMetrics.ts",
    "src/store/metricsSlice.ts",
    "src/api/metrics.ts",
    "test/Dashboard.test.tsx",
)
DASH_CWD = "/home/dev/acme-dashboard"


class RulingsGenerator(Generator):
    """The ``rulings`` shape (see above): rulings, task facts, many ranged reads of a few files."""

    cwd = DASH_CWD

    def __init__(self, target_tokens: int, seed: int) -> None:
        super().__init__(target_tokens, seed)
        self.c = Content(self.rng, PROFILES[1], self.cwd)
        self.lib = self.rng.choice(RULING_LIBS)

    def component(self) -> str:
        return f"{self.number(3):03d}"

    def task_fact(self, pool: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, str, list[str]]:
        """(sentence, needle, parts) of a task fact with a fresh token and number."""
        template, parts = self.rng.choice(pool)
        tok = self.tok()
        v = {"tok": tok, "TOK": tok.upper(), "n": str(self.number(4))}
        filled = [p.format(**v) for p in parts]
        return template.format(**v), filled[-1] if len(filled) > 1 else filled[0], filled

    def ranged_read(self) -> None:
        r = self.rng
        path = f"{self.cwd}/{r.choice(DASH_FILES)}"
        offset = r.randint(1, 400)
        self.step(
            self.fill("Reading more of {noun} handling."),
            "read",
            self.c.code(r.randint(20, 60)),
            path=path,
            offset=offset,
            limit=r.randint(40, 110),
        )

    def filler(self) -> None:
        r = self.rng
        pick = r.random()
        if pick < 0.5:
            self.ranged_read()
        elif pick < 0.7:
            self.bash_step()
        else:
            self.edit_step(f"{self.cwd}/{r.choice(DASH_FILES)}")

    def run_turn(self, pending: list[tuple[str, Any]]) -> None:
        r = self.rng
        self.turn += 1
        sentences: list[str] = []
        planted: list[tuple[str, str, str, list[str]]] = []  # kind, sub, needle, parts
        if self.turn == 0:
            tok = self.tok()
            sentences.append(
                f"We are rebuilding the metrics dashboard of acme, project {tok}: every panel moves to the new "
                f"store and the page must render in under {self.number(3)} ms."
            )
            planted.append(("goal", "initial", f"project {tok}", [f"project {tok}"]))
        else:
            sentences.append(self.fill(r.choice(REQUEST_OPENERS) + " look at the {noun} panel in {file}."))
        if self.turn > 0 and r.random() < 0.75:
            n = self.component()
            if r.random() < 0.65:
                sentences.append(r.choice(DENY_TEMPLATES).format(lib=self.lib, n=n))
                planted.append(("ruling_denied", "deny", f"component-{n}", [self.lib, n]))
            else:
                sentences.append(r.choice(ALLOW_TEMPLATES).format(lib=self.lib, n=n))
                planted.append(("ruling_allowed", "allow", f"component-{n}", [self.lib, n]))
        if r.random() < 0.45:
            sentence, needle, parts = self.task_fact(TASK_FACTS_USER)
            sentences.append(sentence)
            planted.append(("task_fact", "user", needle, parts))
        if r.random() < 0.3:
            sentences.append(r.choice(FRAGMENTS).capitalize())
        text = " ".join(sentences)
        if self.turn > 0 and r.random() < 0.12:
            text = f"{text}\n\n{self.pasted()}"
        user_id = self.user(text)
        for kind, sub, needle, parts in planted:
            self.fact(kind, sub, needle, [user_id], text, parts=parts)
        for _ in range(r.randint(1, 4)):
            self.filler()
        if r.random() < 0.5:
            line, needle, parts = self.task_fact(TASK_FACTS_OUTPUT)
            code = self.c.code(r.randint(20, 50)).split("\n")
            code.insert(r.randint(0, len(code)), line)
            path = f"{self.cwd}/{r.choice(DASH_FILES)}"
            _, rid = self.step("Checking the constants.", "read", "\n".join(code), path=path)
            self.fact("task_fact", "output", needle, [rid], line, parts=parts)
        closing = self.fill(r.choice(ASSISTANT_CLOSERS))
        if r.random() < 0.5:
            sentence, needle, parts = self.task_fact(TASK_FACTS_FOUND)
            aid = self.assistant(f"{sentence} {closing}")
            self.fact("task_fact", "found", needle, [aid], sentence, parts=parts)
        else:
            self.assistant(closing)

    def run(self) -> None:
        while self.tokens < self.target:
            self.run_turn([])
        self.user_facts()


class PastedGenerator(RulingsGenerator):
    """The ``pasted`` shape: most user messages paste a long log, and the value that matters sits in its middle."""

    def run_turn(self, pending: list[tuple[str, Any]]) -> None:
        r = self.rng
        self.turn += 1
        lead = self.fill(r.choice(REQUEST_OPENERS) + " the {noun} panel of {file} misbehaves.")
        planted: list[tuple[str, str, str, list[str]]] = []
        if self.turn == 0:
            tok = self.tok()
            lead = f"We are hunting a slow-render bug in the acme dashboard, ticket {tok}. " + lead
            planted.append(("goal", "initial", f"ticket {tok}", [f"ticket {tok}"]))
        log = self.c.app_log(r.randint(14, 30)).split("\n")
        sentence, needle, parts = self.task_fact(TASK_FACTS_USER)
        log.insert(len(log) // 2, f"NOTE {sentence}")
        planted.append(("task_fact", "pasted", needle, parts))
        if r.random() < 0.5:
            n = self.component()
            deny = r.random() < 0.6
            template = r.choice(DENY_TEMPLATES if deny else ALLOW_TEMPLATES).format(lib=self.lib, n=n)
            kind = "ruling_denied" if deny else "ruling_allowed"
            planted.append((kind, "deny" if deny else "allow", f"component-{n}", [self.lib, n]))
            tail = f"\n\n{template}"
        else:
            tail = ""
        text = f"{lead}\n\n```\n" + "\n".join(log) + f"\n```\n\nWhat do you make of it?{tail}"
        user_id = self.user(text)
        for kind, sub, needle, parts in planted:
            self.fact(kind, sub, needle, [user_id], text, parts=parts)
        for _ in range(r.randint(1, 3)):
            self.filler()
        sentence, needle, parts = self.task_fact(TASK_FACTS_FOUND)
        aid = self.assistant(f"{sentence} {self.fill(r.choice(ASSISTANT_CLOSERS))}")
        self.fact("task_fact", "found", needle, [aid], sentence, parts=parts)


SHAPES: dict[str, type[Generator]] = {"task": Generator, "rulings": RulingsGenerator, "pasted": PastedGenerator}


def _iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def entry_text(entry: dict[str, Any]) -> str:
    """Every string in an entry's message (text, arguments, outputs), for needle checks."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(entry.get("message"))
    return normalize("\n".join(out)).lower()


def validate(entries: list[dict[str, Any]], facts: list[Fact]) -> list[str]:
    """Problems: a needle found outside the entries its fact names, or missing from one of them."""
    texts = {e["id"]: entry_text(e) for e in entries}
    problems = []
    for f in facts:
        needles = [(f.needle, set(f.entries))]
        if f.old_needle is not None and f.old_entry_id is not None:
            needles.append((f.old_needle, {f.old_entry_id}))
        for needle, claimed in needles:
            n = normalize(needle).lower()
            where = {i for i, t in texts.items() if n in t}
            if f.kind == "user_message":
                if f.entry_id not in where:
                    problems.append(f"{f.kind} {needle!r}: not in {f.entry_id}")
                continue
            if where != claimed:
                problems.append(f"{f.kind}/{f.sub} {needle!r}: in {sorted(where)}, claimed {sorted(claimed)}")
    return problems


def generate(
    target_tokens: int, seed: int = 1, shape: str = "task"
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(header, entries, sidecar) of a session of about ``target_tokens`` tokens of history, of ``shape``."""
    for attempt in range(5):  # a short needle may occur by chance in generated text (a number inside a hex id)
        gen = SHAPES[shape](target_tokens, seed + 1000 * attempt)
        gen.run()
        problems = validate(gen.entries, gen.facts)
        if not problems:
            break
    if problems:
        raise RuntimeError("generator planted an ambiguous needle:\n" + "\n".join(problems[:10]))
    sidecar = {
        "format": 1,
        "seed": seed,
        "generator_seed": gen.seed,  # seed + 1000 per attempt that planted an ambiguous needle
        "shape": shape,
        "target_tokens": target_tokens,
        "history_tokens": gen.tokens,
        "entries": len(gen.entries),
        "turns": len(gen.turn_starts),
        "turn_starts": gen.turn_starts,
        "cwd": gen.cwd,
        "facts": [asdict(f) for f in gen.facts],
    }
    return gen.header(), gen.entries, sidecar


def sidecar_path(session: Path) -> Path:
    return session.with_name(session.name.removesuffix(".jsonl") + ".facts.json")


def write(path: Path, target_tokens: int, seed: int = 1, shape: str = "task") -> dict[str, Any]:
    header, entries, sidecar = generate(target_tokens, seed, shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in [header, *entries]))
    sidecar["session"] = path.name
    sidecar_path(path).write_bytes(orjson.dumps(sidecar, option=orjson.OPT_INDENT_2))
    return sidecar


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="100k", help="tokens of history: 30k, 100k, 300k…")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--shape", choices=sorted(SHAPES), default="task")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    sidecar = write(args.out, parse_tokens(args.size), args.seed, args.shape)
    kinds = {k: sum(1 for f in sidecar["facts"] if f["kind"] == k) for k in (*KINDS, *SHAPE_KINDS)}
    print(
        f"{args.out}: {sidecar['entries']} entries, {sidecar['turns']} turns, {sidecar['history_tokens']} tokens; "
        + ", ".join(f"{k} {n}" for k, n in kinds.items()),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
