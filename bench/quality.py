"""How much of what matters survives compaction: recall of planted facts, per kind, size and cap, through chains.

For each generated task session (``quality_sessions.py``) and each setting (window / keep-recent-tokens / cap), the
session is replayed turn by turn into a working copy. After every turn Pi's compaction check runs (picompact's
``check_session``, the rule of pi-sessions.md §6); when it says compact, ``picompact compact --mode verbatim`` is
run on the file in place, as a subprocess of the picompact tree under test (``--tree``), and the replay goes on
with the next turn under the new leaf. Once the session has been replayed, the text the model reads right after
each compaction (Pi's projection: the summary, the kept tail and the entries written with the compaction, such as
the re-orientation message; ``coverage.py``'s view) is searched for every planted fact whose entry that compaction
had compacted away.

    python bench/quality.py [--sizes 30k,100k,300k] [--windows 32000:8000,16000:4000,8000:2000]
                            [--caps default,1000,2000,8000] [--tree DIR] [--seed 1] [--jobs 2] [--json]
                            [--data-dir bench/data/quality] [--label NAME]

Markdown on stdout (``--json``: one JSON document instead); progress on stderr. See bench/README.md.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import quality_sessions as qs
from run import cpu_name

from pi_compact.js import js_len

# The scorer (and the replay's check) use the pi_compact this interpreter imports: the project's venv install, or
# the tree named by PYTHONPATH. The compactions use --tree's.
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.pi.messages import convert_to_llm
from pi_compact.pi.projection import build_projection
from pi_compact.pi.tokens import message_text_for_count
from pi_compact.session.load import load_session
from pi_compact.session.tree import Branch, get_branch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The kinds reported, in table order: "value_stale" and "error_resolved" are the separate reports of the value and
# error kinds (see score_facts).
REPORTED = (
    "rule",
    "constraint",
    "preference",
    "value",
    "value_stale",
    "goal",
    "decision",
    "progress",
    "error",
    "error_resolved",
    "tool_fact",
    "path_in_long_message",
    "user_message",
    "ruling_allowed",
    "ruling_denied",
    "task_fact",
    "file",
    "sentence",
)
# A ruling counts as kept when a line holds its parts and its polarity: a word of refusal for a denied case, of
# permission (and none of refusal) for an allowed one.
_DENY = re.compile(r"\b(?:not|never|don't|do not|no)\b", re.IGNORECASE)
_ALLOW = re.compile(r"\b(?:may|can|allowed|approved|fine)\b", re.IGNORECASE)
# A sentence of a user message: split at sentence ends and line breaks, at least this long, with words in it.
SENTENCE_MIN_CHARS = 20
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")
_FENCED = re.compile(r"```.*?```", re.DOTALL)
_WORDS = re.compile(r"[A-Za-z]{3,}(?:\s+\S+){3,}")
# A superseded value counts as marked when one of these words is on its line (whole words, case-insensitive).
STALE_MARKERS = ("superseded", "replaced", "was", "previously", "no longer", "outdated", "changed")
_MARKER = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in STALE_MARKERS) + r")\b", re.IGNORECASE)
DEFAULT_SIZES = "30k,100k,300k"
DEFAULT_WINDOWS = "32000:8000,16000:4000,8000:2000"
DEFAULT_CAPS = "default,1000,2000,8000"
DEFAULT_SHAPES = "task"
RESERVE_SHARE = 4  # reserveTokens = window / 4 (Pi's default 16384 leaves nothing of a 16k window)
# The model-free peer, pi-vcc: a command ``$PICOMPACT_PIVCC SESSION KEEP_RECENT RESERVE`` that compacts SESSION in
# place with pi-vcc's compile() on the span Pi 1.6 chooses (its prepareCompaction), appending the compaction with
# Pi's SessionManager. Nothing of pi-vcc is in this repository; without the variable its rows are left out.
PEER = "pi-vcc"
PEER_SIZE = "pi-vcc size"  # the cap label of picompact run at the peer's size
PEER_ENV = "PICOMPACT_PIVCC"


def norm(text: str) -> str:
    return qs.normalize(text).lower()


# ---------------------------------------------------------------------------------------------------------------
# Scoring


@dataclass
class Reading:
    """What the model reads right after one compaction, and which entries existed / were compacted."""

    index: int  # 1-based number of the compaction in the chain
    compaction_id: str
    text: str  # as the model reads it, lines kept
    flat: str  # whitespace collapsed, lower case
    before: set[str]  # ids of the entries on the branch before the compaction
    kept: set[str]  # ids of the entries in the model's context after it (kept tail and later)
    summary_tokens: int
    extra_tokens: int  # the entries written with the compaction (re-orientation message)


def model_text(messages: list[dict[str, Any]]) -> str:
    """The text of the messages as the model reads them (Pi's wire conversion), one message after the other."""
    return "\n".join(message_text_for_count(m) for m in convert_to_llm(messages))


def readings(path: Path) -> list[Reading]:
    """For every compaction on the branch of the session's leaf: what the model reads right after it."""
    session = load_session(path, keep_bodies=True)
    branch = get_branch(session)
    entries = branch.entries
    out = []
    for at, entry in enumerate(entries):
        if entry.type != "compaction":
            continue
        end = at + 1
        while end < len(entries) and entries[end].type not in ("message", "compaction"):
            end += 1
        after = build_projection(Branch(session, entries[:end]))
        text = model_text(after.messages)
        extra = [pe for pe in after.entries if pe.entry in entries[at + 1 : end]]
        out.append(
            Reading(
                index=len(out) + 1,
                compaction_id=entry.id,
                text=text,
                flat=norm(text),
                before={e.id for e in entries[:at]},
                kept={pe.entry.id for pe in after.entries if pe.entry is not entry},
                summary_tokens=math.ceil(js_len(str(entry.raw.get("summary") or "")) / 4),
                extra_tokens=sum(pe.tokens for pe in extra),
            )
        )
    return out


def present(needle: str, flat: str) -> bool:
    """The scoring rule: the needle, whitespace collapsed, case-insensitive, is a substring of the model's text."""
    n = norm(needle)
    return bool(n) and n in flat


def stale_unmarked(old: str, text: str) -> bool:
    """The old value is on some line of the model's text with none of STALE_MARKERS on that line."""
    n = norm(old)
    return any(n in norm(line) and not _MARKER.search(line) for line in text.split("\n"))


def parts_on_a_line(fact: dict[str, Any], reading: Reading) -> bool:
    """One line of the model's text holds every part of ``fact`` (and, for a ruling, its polarity)."""
    parts = [norm(p) for p in fact["parts"]]
    if not all(p in reading.flat for p in parts):
        return False
    for line in reading.text.split("\n"):
        low = norm(line)
        if not all(re.search(r"(?<!\w)" + re.escape(p) + r"(?![\w])", low) for p in parts):
            continue
        if fact["kind"] == "ruling_denied" and not _DENY.search(line):
            continue
        if fact["kind"] == "ruling_allowed" and (not _ALLOW.search(line) or _DENY.search(line)):
            continue
        return True
    return False


def user_sentences(text: str) -> list[str]:
    """The sentences of a user message that the ``sentence`` kind looks for (whitespace collapsed; pasted blocks
    between ``` fences are not sentences)."""
    out = []
    for part in _SENTENCE_END.split(_FENCED.sub("\n", text)):
        sentence = qs.normalize(part)
        if len(sentence) >= SENTENCE_MIN_CHARS and _WORDS.search(sentence) and not sentence.startswith("```"):
            out.append(sentence)
    return out


@dataclass
class SpanContent:
    """What the source session's entries hold for the kinds scored from the entries themselves."""

    files: dict[str, list[str]]  # entry id -> the paths its tool calls name, relative to the session's cwd
    sentences: dict[str, list[str]]  # entry id -> the sentences of its user message

    @classmethod
    def of(cls, source: Path, cwd: str) -> SpanContent:
        files: dict[str, list[str]] = {}
        sentences: dict[str, list[str]] = {}
        for line in source.read_bytes().split(b"\n")[1:]:
            if not line:
                continue
            entry = orjson.loads(line)
            message = entry.get("message") or {}
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                sentences[entry["id"]] = user_sentences(message["content"])
            elif message.get("role") == "assistant":
                paths = []
                for block in message.get("content") or []:
                    path = (block.get("arguments") or {}).get("path") if block.get("type") == "toolCall" else None
                    if isinstance(path, str):
                        paths.append(path[len(cwd) + 1 :] if path.startswith(cwd + "/") else path)
                if paths:
                    files[entry["id"]] = paths
        return cls(files, sentences)

    def score(self, reading: Reading, scores: dict[str, KindScore]) -> None:
        """``file``: every path a compacted call named, once, still named; ``sentence``: every sentence of a
        compacted user message, whole."""
        gone = reading.before - reading.kept
        named = sorted({p for i in gone for p in self.files.get(i, ())})
        for path in named:
            scores["file"].add(norm(path) in reading.flat, path)
        for i in sorted(gone):
            for sentence in self.sentences.get(i, ()):
                scores["sentence"].add(norm(sentence) in reading.flat, sentence[:60])


@dataclass
class KindScore:
    found: int = 0
    total: int = 0
    missed: list[str] = field(default_factory=list)

    def add(self, ok: bool, what: str) -> None:
        self.total += 1
        self.found += ok
        if not ok:
            self.missed.append(what)

    def to_json(self) -> dict[str, Any]:
        return {"found": self.found, "total": self.total, "missed": self.missed}


def score_facts(facts: list[dict[str, Any]], reading: Reading) -> dict[str, KindScore]:
    """Score every fact that ``reading``'s compaction had compacted (its entry before the compaction and not kept).

    - ``value``: the latest value as of the compaction (the change if it came before, else the first setting);
      ``value_stale`` counts, among values changed before the compaction whose first setting was compacted, those
      whose old value is present on a line with no marker word (lower is better).
    - ``error``: open errors (no successful rerun before the compaction); ``error_resolved``: the fixed ones, present.
    - ``user_message``: its first 40 characters, or its entry id (an explicit stub), present.
    - every other kind: its needle present.
    """
    scores = {k: KindScore() for k in REPORTED}

    def compacted(entry_id: str | None) -> bool:
        return entry_id is not None and entry_id in reading.before and entry_id not in reading.kept

    for f in facts:
        kind = f["kind"]
        if kind == "value":
            changed = f["entry_id"] in reading.before
            latest_entry, latest = (f["entry_id"], f["needle"]) if changed else (f["old_entry_id"], f["old_needle"])
            if compacted(latest_entry):
                scores["value"].add(present(latest, reading.flat), latest)
            if changed and compacted(f["old_entry_id"]):
                stale = stale_unmarked(f["old_needle"], reading.text)
                scores["value_stale"].add(stale, f["old_needle"])  # "found" here means: stale and unmarked
            continue
        if not compacted(f["entry_id"]):
            continue
        if kind == "error":
            resolved = f.get("resolved_entry_id") in reading.before
            scores["error_resolved" if resolved else "error"].add(present(f["needle"], reading.flat), f["needle"])
        elif kind == "user_message":
            ok = present(f["needle"], reading.flat) or f["entry_id"] in reading.flat
            scores["user_message"].add(ok, f["entry_id"])
        elif f.get("parts"):
            scores[kind].add(parts_on_a_line(f, reading), f["needle"])
        else:
            scores[kind].add(present(f["needle"], reading.flat), f["needle"])
    return scores


# ---------------------------------------------------------------------------------------------------------------
# Replay with chained compactions


@dataclass(frozen=True)
class Setting:
    size: int
    window: int
    keep: int
    cap: int | None  # None: picompact's default (keepRecentTokens / 2 unless settings say else)
    shape: str = "task"
    compactions: int | None = None  # None: whenever Pi's check says so; N: after the turns that end each Nth
    compactor: str = "picompact"  # or "pi-vcc": the peer's compile() on Pi's span (PICOMPACT_PIVCC)
    peer_sizes: tuple[int, ...] | None = None  # "at pi-vcc's size": the peer's brief tokens, compaction by compaction
    sizes_given: bool = False  # peer_sizes came from --peer-sizes (a run of the peer recorded earlier), not a run

    @property
    def reserve(self) -> int:
        return self.window // RESERVE_SHARE

    @property
    def cap_label(self) -> str:
        if self.compactor == PEER:
            return PEER
        if self.peer_sizes is not None:
            given = "/".join(dict.fromkeys(str(n) for n in self.peer_sizes))
            return f"{PEER_SIZE} ({given} given)" if self.sizes_given else PEER_SIZE
        return "default" if self.cap is None else str(self.cap)

    def flags(self) -> list[str]:
        out = ["--context-window", str(self.window), "--keep-recent-tokens", str(self.keep)]
        out += ["--reserve-tokens", str(self.reserve)]
        return out + ([] if self.cap is None else ["--cap", str(self.cap)])


def isolated_env(home: Path, tree: Path) -> dict[str, str]:
    """No user settings, no index cache, and ``tree``'s pi_compact first on the path."""
    env = dict(os.environ)
    env.update(HOME=str(home), PI_CODING_AGENT_DIR=str(home / "agent"), PICOMPACT_NO_CACHE="1")
    env["PYTHONPATH"] = str(tree)
    env.pop("PICOMPACT_MODEL", None)
    return env


def compact(path: Path, setting: Setting, tree: Path, env: dict[str, str], cap: int | None = None) -> tuple[int, str]:
    if setting.compactor == PEER:
        cmd = [os.environ[PEER_ENV], str(path), str(setting.keep), str(setting.reserve)]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    else:
        cmd = [sys.executable, "-m", "pi_compact", "compact", str(path), "--mode", "verbatim", "--force"]
        cmd += setting.flags() + ([] if cap is None else ["--cap", str(max(cap, 1))])
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree, timeout=300)
    return done.returncode, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""


def compact_at_size(path: Path, setting: Setting, tree: Path, env: dict[str, str], size: int) -> tuple[int, str]:
    """Compact with picompact so that what the compaction adds to the model's context (the summary and the
    re-orientation message) is at most ``size`` tokens: the cap is the size less the re-orientation message, lowered
    by any overshoot and tried again (up to four times) on the file as it was."""
    before = path.read_bytes()
    cap = size - 150
    code, err = 0, ""
    for _ in range(4):
        path.write_bytes(before)
        code, err = compact(path, setting, tree, env, cap)
        if code != 0:
            return code, err
        r = readings(path)[-1]
        over = r.summary_tokens + r.extra_tokens - size
        if over <= 0:
            break
        cap -= over
    return code, err


def session_file(data_dir: Path, size: int, seed: int, shape: str = "task") -> Path:
    path = data_dir / f"{shape}-{qs.size_label(size)}-s{seed}.jsonl"
    if not path.exists() or not qs.sidecar_path(path).exists():
        qs.write(path, size, seed, shape)
    return path


def forced_turns(turns: int, compactions: int) -> set[int]:
    """The turns after which a chain of ``compactions`` evenly spread compactions compacts (the last turn last)."""
    return {max(round(turns * k / compactions) - 1, 0) for k in range(1, compactions + 1)}


def replay(source: Path, setting: Setting, tree: Path, work: Path) -> dict[str, Any]:
    """Grow ``work`` turn by turn from ``source``, compacting whenever Pi's check says so."""
    sidecar = orjson.loads(qs.sidecar_path(source).read_bytes())
    lines = source.read_bytes().split(b"\n")
    header, entries = lines[0], [orjson.loads(line) for line in lines[1:] if line]
    starts = set(sidecar["turn_starts"])
    home = work.parent / "home"
    (home / "agent").mkdir(parents=True, exist_ok=True)
    env = isolated_env(home, tree)
    os.environ.update(HOME=env["HOME"], PI_CODING_AGENT_DIR=env["PI_CODING_AGENT_DIR"], PICOMPACT_NO_CACHE="1")
    options = CheckOptions(
        context_window=setting.window, reserve_tokens=setting.reserve, keep_recent_tokens=setting.keep
    )
    work.write_bytes(header + b"\n")
    leaf: str | None = None
    turns = [[e] if e["id"] in starts else [] for e in entries]
    grouped: list[list[dict[str, Any]]] = []
    for e, t in zip(entries, turns, strict=True):
        if t or not grouped:
            grouped.append([e])
        else:
            grouped[-1].append(e)
    chain: list[dict[str, Any]] = []
    failures: list[str] = []
    forced = forced_turns(len(grouped), setting.compactions) if setting.compactions else None
    for n, turn in enumerate(grouped):
        with work.open("ab") as fh:
            for e in turn:
                fh.write(orjson.dumps({**e, "parentId": leaf}) + b"\n")
                leaf = e["id"]
        if (n not in forced) if forced is not None else not check_session(work, options).should_compact:
            continue
        if setting.peer_sizes is not None:
            k = len(chain)
            if k >= len(setting.peer_sizes):
                failures.append(f"turn {n}: the peer's chain has no compaction {k + 1}")
                continue
            code, err = compact_at_size(work, setting, tree, env, setting.peer_sizes[k])
        else:
            code, err = compact(work, setting, tree, env)
        if code != 0:
            failures.append(f"turn {n}: exit {code}: {err.replace(str(work), '<session>')}")
            continue
        last = work.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        leaf = orjson.loads(last)["id"]
        chain.append({"turn": n})
    return {"sidecar": sidecar, "chain": chain, "failures": failures}


def run_setting(job: tuple[Setting, str, str, int, str | None]) -> dict[str, Any]:
    setting, data_dir, tree, seed, keep_dir = job
    t0 = time.monotonic()
    source = session_file(Path(data_dir), setting.size, seed, setting.shape)
    with tempfile.TemporaryDirectory(prefix="picompact-quality-") as tmp:
        work = Path(tmp) / "session.jsonl"
        run = replay(source, setting, Path(tree), work)
        reads = readings(work)
        if keep_dir:
            name = f"{setting.shape}-{qs.size_label(setting.size)}-w{setting.window}-k{setting.keep}"
            name += f"-cap{setting.cap_label}.jsonl"
            Path(keep_dir).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(work, Path(keep_dir) / name)
    facts = run["sidecar"]["facts"]
    content = SpanContent.of(source, run["sidecar"]["cwd"])
    per = [score_facts(facts, r) for r in reads]
    for scores, r in zip(per, reads, strict=True):
        content.score(r, scores)
    chain_total = {k: KindScore() for k in REPORTED}
    for s in per:
        for k, v in s.items():
            chain_total[k].found += v.found
            chain_total[k].total += v.total
    for c, r in zip(run["chain"], reads, strict=False):
        c.update(summary_tokens=r.summary_tokens, extra_tokens=r.extra_tokens)
        c["added_tokens"] = r.summary_tokens + r.extra_tokens
    return {
        "shape": setting.shape,
        "forced_compactions": setting.compactions,
        "size": setting.size,
        "size_label": qs.size_label(setting.size),
        "history_tokens": run["sidecar"]["history_tokens"],
        "turns": run["sidecar"]["turns"],
        "window": setting.window,
        "keep": setting.keep,
        "reserve": setting.reserve,
        "cap": setting.cap_label,
        "compactor": setting.compactor,
        "compactions": len(reads),
        "chain": run["chain"],
        "failures": run["failures"],
        "final": {k: v.to_json() for k, v in per[-1].items()} if per else None,
        "chain_total": {k: {"found": v.found, "total": v.total} for k, v in chain_total.items()},
        "final_summary_tokens": reads[-1].summary_tokens if reads else None,
        "max_summary_tokens": max((r.summary_tokens for r in reads), default=None),
        "final_extra_tokens": reads[-1].extra_tokens if reads else None,
        "final_added_tokens": reads[-1].summary_tokens + reads[-1].extra_tokens if reads else None,
        "seconds": round(time.monotonic() - t0, 1),
    }


def fixed_overhead(tree: Path) -> dict[str, int]:
    """Tokens of the checkpoint of a session with one short compacted turn: the introduction and envelope (the
    summary) and the re-orientation message, with next to nothing inside."""
    with tempfile.TemporaryDirectory(prefix="picompact-quality-") as tmp:
        home = Path(tmp) / "home"
        (home / "agent").mkdir(parents=True)
        path = Path(tmp) / "tiny.jsonl"
        header = {"type": "session", "version": 3, "id": "0199-overhead", "timestamp": "2026-01-01T00:00:00.000Z"}
        header["cwd"] = qs.CWD
        call = {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": f"{qs.CWD}/README.md"}}
        msgs = [
            {"role": "user", "content": "Read the README."},
            {"role": "assistant", "content": [call], "stopReason": "toolUse"},
            {
                "role": "toolResult",
                "toolCallId": "toolu_1",
                "toolName": "read",
                "content": [{"type": "text", "text": "weatherly: forecasts.\n" * 1000}],  # removed by a checkpoint
                "isError": False,
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Read it."}], "stopReason": "stop"},
            {"role": "user", "content": "Thanks, that is all for now."},
            {"role": "assistant", "content": [{"type": "text", "text": "You're welcome."}], "stopReason": "stop"},
        ]
        rows, parent = [header], None
        for i, m in enumerate(msgs):
            eid = f"0000000{i + 1}"
            stamp = f"2026-01-01T00:00:0{i}.000Z"
            rows.append({"type": "message", "id": eid, "parentId": parent, "timestamp": stamp, "message": m})
            parent = eid
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
        env = isolated_env(home, tree)
        cmd = [sys.executable, "-m", "pi_compact", "compact", str(path), "--mode", "verbatim", "--force"]
        cmd += ["--keep-recent-tokens", "10", "--context-window", "32000"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"overhead session: compact exit {done.returncode}: {done.stderr.strip()[-300:]}")
        r = readings(path)[-1]
        return {
            "summary_tokens": r.summary_tokens,
            "reorientation_tokens": r.extra_tokens,
            "total": r.summary_tokens + r.extra_tokens,
        }


# ---------------------------------------------------------------------------------------------------------------
# Report


def cell(score: dict[str, Any]) -> str:
    if not score["total"]:
        return "–"
    return f"{score['found']}/{score['total']}"


def pct(found: int, total: int) -> str:
    return f"{100 * found / total:.0f}%" if total else "–"


SHORT = {
    "rule": "rule",
    "constraint": "constr.",
    "preference": "pref.",
    "value": "value",
    "value_stale": "stale↓",
    "goal": "goal",
    "decision": "decis.",
    "progress": "progr.",
    "error": "err open",
    "error_resolved": "err fixed",
    "tool_fact": "tool fact",
    "path_in_long_message": "long msg",
    "user_message": "user msg",
    "ruling_allowed": "allowed",
    "ruling_denied": "denied",
    "task_fact": "task fact",
    "file": "files",
    "sentence": "sentences",
}
# ``all`` sums the planted kinds of the ``task`` shape (the figures of earlier reports), nothing of the others.
SCORED = [k for k in REPORTED[: REPORTED.index("user_message")] if k not in ("value_stale", "error_resolved")]


def overall(scores: dict[str, dict[str, Any]]) -> tuple[int, int]:
    return sum(scores[k]["found"] for k in SCORED), sum(scores[k]["total"] for k in SCORED)


def markdown(report: dict[str, Any]) -> str:
    out = [
        f"### Checkpoint quality: {report['label']}",
        "",
        f"- {report['date']}; {report['machine']}; scorer {report['scorer']}; compacting tree {report['tree']}",
        f"- `{report['command']}`",
        f"- fixed overhead (a checkpoint of one short compacted turn): {report['overhead']}",
        *([f"- {report['peer']}"] if report.get("peer") else []),
        "",
        "After the last compaction of each chain: facts found / facts compacted away (`stale↓`: superseded values "
        "shown with no marker, lower is better; `err fixed`: resolved errors still shown). `all` = every kind "
        "but stale, fixed errors and user messages. `ckpt` = the last checkpoint's tokens (max over the chain), "
        "+ its re-orientation message's; cap `pi-vcc`: the peer's brief; `pi-vcc size`: picompact with the summary and "
        "re-orientation message of each compaction held to the tokens of the peer's brief of the same span.",
        "",
    ]
    for shape in dict.fromkeys(r.get("shape", "task") for r in report["runs"]):
        runs = [r for r in report["runs"] if r.get("shape", "task") == shape]
        out += [f"Shape `{shape}`:", "", *_table(runs), ""]
    failures = [(r, x) for r in report["runs"] for x in r["failures"]]
    if failures:
        out += ["", "Compactions that failed (the replay went on):"]
        out += [f"- {r['size_label']} {r['window']}/{r['keep']} cap {r['cap']}: {x}" for r, x in failures[:20]]
    return "\n".join(out) + "\n"


def _table(runs: list[dict[str, Any]]) -> list[str]:
    """One row a run; the columns of the kinds any of them scored (``all``: the ``task`` shape's)."""
    kinds = [k for k in REPORTED if any(r["final"] and r["final"][k]["total"] for r in runs)]
    task = all(r.get("shape", "task") == "task" for r in runs)
    head = ["size", "window/keep", "cap", "comp.", "ckpt", *(SHORT[k] for k in kinds)]
    head += ["all", "all, chain"] if task else []
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in runs:
        final = r["final"]
        if final is None:
            out.append(f"| {r['size_label']} | {r['window']}/{r['keep']} | {r['cap']} | 0 | | no compaction |")
            continue
        f, t = overall(final)
        cf, ct = overall(r["chain_total"])
        row = [
            r["size_label"],
            f"{r['window']}/{r['keep']}",
            r["cap"],
            str(r["compactions"]),
            f"{r['final_summary_tokens']} ({r['max_summary_tokens']})"
            + (f" +{r['final_extra_tokens']}" if r.get("final_extra_tokens") else ""),
            *(cell(final[k]) for k in kinds),
        ]
        row += [f"{pct(f, t)} ({f}/{t})", pct(cf, ct)] if task else []
        out.append("| " + " | ".join(row) + " |")
    return out


def machine() -> str:
    return f"{cpu_name()}, {os.cpu_count()} cores; Python {platform.python_version()}"


def parse_windows(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        window, _, keep = part.partition(":")
        out.append((int(window), int(keep) if keep else int(window) // 4))
    return out


def parse_sizes(text: str) -> list[tuple[int, int | None]]:
    """``30k,100k`` or ``30k:2,100k:3`` (a chain of that many compactions evenly spread): (tokens, compactions)."""
    out = []
    for part in text.split(","):
        if part:
            size, _, n = part.partition(":")
            out.append((qs.parse_tokens(size), int(n) if n else None))
    return out


def settings(args: argparse.Namespace) -> list[Setting]:
    sizes = parse_sizes(args.sizes)
    windows = parse_windows(args.windows)
    caps = [None if c == "default" else int(c) for c in args.caps.split(",") if c and c != PEER]
    out = []
    for shape in [s for s in args.shapes.split(",") if s]:
        for size, compactions in sizes:
            for i, (window, keep) in enumerate(windows):
                for cap in caps if i == 0 or args.caps_everywhere else [None]:
                    out.append(Setting(size, window, keep, cap, shape, compactions))
    return out


def peer_settings(args: argparse.Namespace) -> list[Setting]:
    """The peer's runs (``--caps`` naming ``pi-vcc``): one a shape, size and first window."""
    if PEER not in args.caps.split(","):
        return []
    window, keep = parse_windows(args.windows)[0]
    return [
        Setting(size, window, keep, None, shape, compactions, compactor=PEER)
        for shape in [s for s in args.shapes.split(",") if s]
        for size, compactions in parse_sizes(args.sizes)
    ]


def given_sizes(args: argparse.Namespace) -> list[Setting]:
    """Runs of picompact at sizes given by ``--peer-sizes`` (``SHAPE-SIZE=N`` or ``=N1/N2/…``, comma-separated: the
    tokens of the peer's brief at each compaction of that chain, as a run with the peer recorded them; one number
    holds every compaction to it), at the first window, for the shapes and sizes asked for."""
    if not args.peer_sizes:
        return []
    given: dict[str, tuple[int, ...]] = {}
    for part in args.peer_sizes.split(","):
        key, _, numbers = part.partition("=")
        given[key.strip()] = tuple(int(n) for n in numbers.split("/") if n)
    window, keep = parse_windows(args.windows)[0]
    out = []
    for shape in [s for s in args.shapes.split(",") if s]:
        for size, compactions in parse_sizes(args.sizes):
            sizes = given.get(f"{shape}-{qs.size_label(size)}")
            if not sizes:
                continue
            if len(sizes) == 1 and compactions:
                sizes = sizes * compactions
            out.append(Setting(size, window, keep, None, shape, compactions, peer_sizes=sizes, sizes_given=True))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sizes",
        default=DEFAULT_SIZES,
        help=f"tokens of history, SIZE or SIZE:N for a chain of N evenly spread compactions (default {DEFAULT_SIZES})",
    )
    ap.add_argument("--shapes", default=DEFAULT_SHAPES, help=f"session shapes: {', '.join(qs.SHAPES)}")
    ap.add_argument("--windows", default=DEFAULT_WINDOWS, help="WINDOW:KEEP,… (reserve = window/4)")
    ap.add_argument("--caps", default=DEFAULT_CAPS, help="checkpoint caps for the first window (default: all)")
    ap.add_argument(
        "--peer-sizes",
        default="",
        help="SHAPE-SIZE=N[/N…],…: also run picompact held to these tokens (summary + re-orientation) at each "
        "compaction, the peer's brief sizes of an earlier run (e.g. task-100k=2707)",
    )
    ap.add_argument("--caps-everywhere", action="store_true", help="run every cap at every window")
    ap.add_argument("--tree", type=Path, default=ROOT, help="the picompact source tree whose compact is measured")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--data-dir", type=Path, default=HERE / "data" / "quality")
    ap.add_argument("--label", default=None, help="name of this run in the report (default: the tree's commit)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-overhead", action="store_true", help="skip the fixed-overhead measurement")
    ap.add_argument("--keep-sessions", type=Path, help="copy each replayed (compacted) session into this folder")
    ap.add_argument("--save-json", type=Path, help="also write the JSON document to this file")
    args = ap.parse_args(argv)
    tree = args.tree.resolve()
    if not (tree / "pi_compact" / "__init__.py").exists():
        ap.error(f"{tree} holds no pi_compact package")
    jobs = settings(args) + given_sizes(args)
    peers = peer_settings(args)
    peer_note = None
    if peers and not os.environ.get(PEER_ENV):
        peer_note = f"pi-vcc not measured: {PEER_ENV} names no command (see bench/README.md)"
        print(peer_note, file=sys.stderr)
        peers = []
    for size, shape in sorted({(s.size, s.shape) for s in jobs + peers}):  # generate once, before workers race
        session_file(args.data_dir, size, args.seed, shape)
    results: list[dict[str, Any]] = []
    keep = str(args.keep_sessions) if args.keep_sessions else None
    t0 = time.monotonic()

    def run_all(batch: list[Setting]) -> list[dict[str, Any]]:
        done = []
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for r in pool.map(run_setting, [(s, str(args.data_dir), str(tree), args.seed, keep) for s in batch]):
                print(
                    f"{r['shape']} {r['size_label']} {r['window']}/{r['keep']} cap {r['cap']}: "
                    f"{r['compactions']} compactions, "
                    f"{r['seconds']} s",
                    file=sys.stderr,
                )
                done.append(r)
        return done

    peer_runs = run_all(peers) if peers else []
    at_size = []
    for s, r in zip(peers, peer_runs, strict=True):
        sizes = tuple(c["summary_tokens"] for c in r["chain"])
        at_size.append(Setting(s.size, s.window, s.keep, None, s.shape, s.compactions, peer_sizes=sizes))
    results = run_all(jobs + at_size)
    results += peer_runs
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "pi_compact"], capture_output=True, text=True
    )
    rev = (commit.stdout.strip() or "?") + (" + uncommitted changes in pi_compact/" if dirty.stdout.strip() else "")
    import pi_compact

    report = {
        "label": args.label or rev,
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "tree": f"{tree} ({rev})",
        "scorer": str(Path(pi_compact.__file__).parent.parent),
        "command": " ".join(["python bench/quality.py", *(argv if argv is not None else sys.argv[1:])]),
        "seed": args.seed,
        "reserve_rule": f"window / {RESERVE_SHARE}",
        "stale_markers": list(STALE_MARKERS),
        "overhead": None if args.no_overhead else fixed_overhead(tree),
        "peer": peer_note or (f"pi-vcc through ${PEER_ENV} = {os.environ[PEER_ENV]}" if peers else None),
        "seconds": round(time.monotonic() - t0, 1),
        "runs": results,
    }
    if args.save_json:
        args.save_json.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.write(
        orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n" if args.json else markdown(report)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
