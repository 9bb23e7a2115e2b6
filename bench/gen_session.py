"""Generate large, realistic Pi v3 session files for the benchmarks.

Real sessions that need compacting are tens to hundreds of MB: long tool outputs (file contents, test logs),
base64 screenshots, thinking blocks with opaque signatures, and the bookkeeping entries Pi writes around them.
This script writes such a file deterministically from a seed, streaming entry by entry (it never holds the
whole file in memory), so every machine benchmarks the same bytes.

    python bench/gen_session.py --size 100MB --out bench/data/session-100mb.jsonl [--seed N]

The file keeps going past the requested size until the live context (after the last compaction) is over
Pi's compaction threshold for a 200k window, so `check` reports that compaction is needed and `compact` has
work to do. A few rare literals (see RARE_LITERALS) occur exactly once each, for grep benchmarks.
"""

from __future__ import annotations

import argparse
import base64
import calendar
import re
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any, BinaryIO

import orjson
from session_content import (
    ASSISTANT_TEXTS,
    ERROR_MESSAGES,
    EXOTIC_SNIPPETS,
    LATE_TOOL_DECLS,
    MODELS,
    NOUNS,
    PROFILES,
    THINKING_TEXTS,
    TOOL_DECLS,
    USER_PROMPTS,
    Content,
    png,
    tool_decl,
)

# Each occurs exactly once in a generated file; the key says where and at which fraction of the size.
RARE_LITERALS: dict[str, str] = {
    "user_text": "NEEDLE-USER-ORCHID-2291",  # in one user prompt, ~10% into the file
    "tool_output": "E_RARE_NEEDLE_4711",  # in one bash test log, ~50% into the file
    "assistant_text": "NEEDLE-ASSISTANT-QUASAR-8817",  # in one assistant reply, ~90% into the file
}
NEEDLE_POSITIONS: dict[str, float] = {"user_text": 0.10, "tool_output": 0.50, "assistant_text": 0.90}
# A pattern that matches many lines (test logs, compiler output, app logs).
COMMON_REGEX = "error|fail"

CONTEXT_WINDOW = 200_000
RESERVE_TOKENS = 16_384
KEEP_RECENT_TOKENS = 20_000
THRESHOLD = CONTEXT_WINDOW - RESERVE_TOKENS
IMAGE_TOKENS = 1200  # Pi counts 4800 chars per image block

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]?i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str) -> int:
    """'10MB' -> 10 MiB in bytes; K/M/G are powers of 1024, like `ls -h`."""
    m = _SIZE_RE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 200KB, 10MB, 1.5GB)")
    unit = (m.group(2) or "").lower().rstrip("b").rstrip("i")
    return int(float(m.group(1)) * _UNITS[unit])


# --------------------------------------------------------------------------------------------------------
# Session writer


@dataclass(frozen=True)
class GenStats:
    """What was written, for the summary line and for the benchmarks."""

    path: str
    bytes: int
    entries: int
    turns: int
    images: int
    compactions: int
    needle_ids: dict[str, str]
    leaf_id: str


@dataclass
class _Ctx:
    """One projected message since the last compaction: enough to place the next cut."""

    entry_id: str
    tokens: int
    kind: str  # user | assistant | toolResult | other


def _msg_tokens(chars: int, images: int = 0) -> int:
    return (chars + 3) // 4 + images * IMAGE_TOKENS


class Generator:
    """Writes one session: header, system prompt, then turns until the size and threshold are reached."""

    def __init__(self, fh: BinaryIO, size: int, seed: int) -> None:
        self.fh = fh
        self.size = size
        self.rng = Random(seed)
        r = self.rng
        self.profile = PROFILES[r.randrange(len(PROFILES))]
        self.cwd = f"/home/dev/src/{self.profile.name}"
        self.c = Content(r, self.profile, self.cwd)
        self.written = 0
        self.entries = 0
        self.turns = 0
        self.images = 0
        self.compactions = 0
        self.ids: set[str] = set()
        self.leaf: str | None = None
        self.clock_ms = calendar.timegm((2025, 9, 1, 8, 0, 0)) * 1000 + r.randint(0, 86_400_000 * 60)
        self.model = MODELS[0]
        self.thinking = "medium"
        self.sections: dict[str, str] = {}
        self.tools: list[dict[str, Any]] = []
        self.ctx: list[_Ctx] = []
        self.base_tokens = 0  # system message + latest compaction summary
        self.cached_tokens = 0  # what the previous request left in the provider cache
        self.recent_prompts: deque[str] = deque(maxlen=12)
        self.read_files: set[str] = set()
        self.modified_files: set[str] = set()
        self.assistant_ids: deque[str] = deque(maxlen=50)
        self.pending_needles = dict(RARE_LITERALS)
        self.needle_ids: dict[str, str] = {}
        self.in_branch = False
        self.final_edit = False  # one edit that stays in the live context at the end

    # ---- primitives

    def _tick(self, lo: float, hi: float) -> int:
        self.clock_ms += int(self.rng.uniform(lo, hi) * 1000)
        return self.clock_ms

    @staticmethod
    def _iso(ms: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"

    def _new_id(self) -> str:
        while True:
            i = f"{self.rng.getrandbits(32):08x}"
            if i not in self.ids:
                self.ids.add(i)
                return i

    def _write(self, obj: dict[str, Any]) -> None:
        line = orjson.dumps(obj)
        self.fh.write(line)
        self.fh.write(b"\n")
        self.written += len(line) + 1

    def _emit(
        self, type_: str, fields: dict[str, Any], *, parent: str | bool | None = True, lo: float = 0.05, hi: float = 2.0
    ) -> str:
        """Append one entry under the current leaf (or `parent`), make it the leaf, return its id."""
        eid = self._new_id()
        ms = self._tick(lo, hi)
        pid = self.leaf if parent is True else parent
        self._write({"type": type_, "id": eid, "parentId": pid, "timestamp": self._iso(ms), **fields})
        self.entries += 1
        self.leaf = eid
        return eid

    def _message(
        self,
        message: dict[str, Any],
        *,
        tokens: int,
        kind: str,
        lo: float = 0.05,
        hi: float = 2.0,
        parent: str | bool | None = True,
        in_ctx: bool = True,
    ) -> str:
        message["timestamp"] = self.clock_ms + 1
        eid = self._emit("message", {"message": message}, lo=lo, hi=hi, parent=parent)
        if in_ctx:
            self.ctx.append(_Ctx(eid, tokens, kind))
        return eid

    @property
    def ctx_tokens(self) -> int:
        return self.base_tokens + sum(c.tokens for c in self.ctx)

    def _frac(self) -> float:
        return self.written / max(self.size, 1)

    def _take_needle(self, key: str) -> str | None:
        if key in self.pending_needles and self._frac() >= NEEDLE_POSITIONS[key]:
            return self.pending_needles.pop(key)
        return None

    # ---- entries

    def header(self) -> None:
        r = self.rng
        sid = (
            f"{r.getrandbits(32):08x}-{r.getrandbits(16):04x}-7{r.getrandbits(12):03x}-"
            f"{8 + r.getrandbits(2):x}{r.getrandbits(12):03x}-{r.getrandbits(48):012x}"
        )
        self._write(
            {"type": "session", "version": 3, "id": sid, "timestamp": self._iso(self.clock_ms), "cwd": self.cwd}
        )

    def system_prompt(self) -> None:
        self.sections = {
            "preamble": "You are a coding assistant running inside pi. You read code, run commands and change "
            "files on the user's behalf.",
            "tools": "<tools>\n" + "\n".join(f"- {t[0]}: {t[1]}" for t in TOOL_DECLS) + "\n</tools>",
            "rules": "<rules>\n- Prefer read over cat\n- Keep edits minimal and exact\n- Be concise\n</rules>",
            "cwd": f"<cwd>\n{self.cwd}\n</cwd>",
        }
        self.tools = [tool_decl(*t) for t in TOOL_DECLS]
        msg = {"role": "system", "content": "", "sections": dict(self.sections), "toolsAdded": self.tools}
        chars = sum(len(v) for v in self.sections.values()) + len(orjson.dumps(self.tools))
        self._message(msg, tokens=_msg_tokens(chars), kind="system", parent=None, in_ctx=False)
        self.base_tokens = _msg_tokens(chars)

    def system_patch(self) -> None:
        r = self.rng
        if len(self.tools) == len(TOOL_DECLS) and r.random() < 0.4:
            added = [tool_decl(*t) for t in LATE_TOOL_DECLS]
            self.tools += added
            msg: dict[str, Any] = {"role": "system", "content": "", "toolsAdded": added}
            chars = len(orjson.dumps(added))
        else:
            sub = r.choice(("src", "tests", "docs", "."))
            key, val = (
                ("cwd", f"<cwd>\n{self.cwd}/{sub}\n</cwd>")
                if r.random() < 0.6
                else ("skills", "<skills>\n- release-notes: read .pi/skills/release-notes/SKILL.md first\n</skills>")
            )
            self.sections[key] = val
            msg = {"role": "system", "content": "", "sections": {key: val}}
            chars = len(val)
        self._message(msg, tokens=_msg_tokens(chars), kind="system", in_ctx=False)
        self.base_tokens += _msg_tokens(chars)

    def model_change(self) -> None:
        self.model = self.rng.choice([m for m in MODELS if m != self.model])
        self._emit("model_change", {"provider": self.model[0], "modelId": self.model[1]})

    def thinking_change(self) -> None:
        self.thinking = self.rng.choice([t for t in ("off", "low", "medium", "high") if t != self.thinking])
        self._emit("thinking_level_change", {"thinkingLevel": self.thinking})

    def _usage(self, output_tokens: int, *, zero: bool = False) -> dict[str, Any]:
        provider = self.model[0]
        p_in, p_out, p_cr, p_cw = self.model[3]
        if zero:
            inp = out = cr = cw = 0
        else:
            total_ctx = self.ctx_tokens
            out = output_tokens
            if provider == "anthropic":
                cr = min(self.cached_tokens, total_ctx)
                inp = self.rng.randint(1, 12)
                cw = max(total_ctx - cr - inp, 0)
            elif provider == "openai":
                cr = min(self.cached_tokens, total_ctx) // 1024 * 1024
                inp, cw = total_ctx - cr, 0
            else:
                cr, inp, cw = 0, total_ctx, 0
            self.cached_tokens = total_ctx + out
        cost = {
            "input": round(inp * p_in / 1e6, 6),
            "output": round(out * p_out / 1e6, 6),
            "cacheRead": round(cr * p_cr / 1e6, 6),
            "cacheWrite": round(cw * p_cw / 1e6, 6),
        }
        cost["total"] = round(sum(cost.values()), 6)
        return {
            "input": inp,
            "output": out,
            "cacheRead": cr,
            "cacheWrite": cw,
            "totalTokens": inp + out + cr + cw,
            "cost": cost,
        }

    def _call_id(self) -> str:
        r = self.rng
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        if self.model[0] == "anthropic":
            return "toolu_01" + "".join(r.choices(alphabet, k=22))
        if self.model[0] == "openai":
            return "call_" + "".join(r.choices(alphabet, k=24))
        return f"call_{r.getrandbits(40):010x}"

    def assistant(
        self, content: list[dict[str, Any]], stop: str, *, error: str | None = None, lo: float = 2.0, hi: float = 40.0
    ) -> str:
        chars = 0
        for b in content:
            if b["type"] == "text":
                chars += len(b["text"])
            elif b["type"] == "thinking":
                chars += len(b["thinking"])
            elif b["type"] == "toolCall":
                chars += len(b["name"]) + len(orjson.dumps(b["arguments"]))
        tokens = _msg_tokens(chars)
        provider, model, api, _ = self.model
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": api,
            "provider": provider,
            "model": model,
            "usage": self._usage(tokens, zero=error is not None),
            "stopReason": stop,
        }
        if error is not None:
            msg["errorMessage"] = error
        msg["responseId"] = f"resp_{self.rng.getrandbits(96):024x}"
        msg["durationMs"] = self.rng.randint(800, 90_000)
        msg["thinkingLevel"] = self.thinking
        eid = self._message(msg, tokens=0 if error else tokens, kind="assistant", lo=lo, hi=hi)
        if error is None:
            self.assistant_ids.append(eid)
        return eid

    def tool_result(
        self, call: dict[str, Any], text: str, *, image: bytes | None = None, is_error: bool = False
    ) -> str:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if image is not None:
            content.append({"type": "image", "data": base64.b64encode(image).decode(), "mimeType": "image/png"})
            self.images += 1
        msg = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "content": content,
            "isError": is_error,
            "durationMs": self.rng.randint(3, 9000),
        }
        return self._message(msg, tokens=_msg_tokens(len(text), 1 if image else 0), kind="toolResult", lo=0.05, hi=8.0)

    def _image(self) -> bytes:
        r = self.rng
        return png(r, r.randint(160, 420), r.randint(120, 320))

    def _tool_call(self, force_bash_test: bool) -> tuple[dict[str, Any], str, bytes | None, bool]:
        """Pick a tool call and produce (call, output text, optional image, is_error)."""
        r, c = self.rng, self.c
        names = ["read", "bash", "edit", "write"] + (
            [t[0] for t in LATE_TOOL_DECLS] if len(self.tools) > len(TOOL_DECLS) else []
        )
        weights = [35, 30, 20, 5, 6, 2, 2][: len(names)]
        name = "bash" if force_bash_test else r.choices(names, weights)[0]
        image = None
        is_error = False
        if name == "read":
            if r.random() < 0.012:
                path = f"{self.cwd}/docs/screenshots/{r.choice(NOUNS)}-{r.randint(1, 9)}.png"
                args: dict[str, Any] = {"path": path}
                out, image = "Read image file [image/png]", self._image()
            else:
                path = c.file()
                args = {"path": path}
                n = min(int(r.paretovariate(1.2) * 60), 2000)
                if r.random() < 0.2:
                    off = r.randint(1, 500)
                    args.update(offset=off, limit=n)
                out = c.head(c.code(n))
            self.read_files.add(path)
        elif name == "bash":
            kind = (
                "test"
                if force_bash_test
                else r.choices(["test", "build", "diff", "log", "misc"], [35, 20, 15, 15, 15])[0]
            )
            needle = self._take_needle("tool_output") if kind == "test" else None
            if kind == "test":
                args = {"command": r.choice(self.profile.test_cmds)}
                out = c.test_log(min(int(r.paretovariate(1.3) * 40), 1500), needle)
            elif kind == "build":
                args = {"command": r.choice(self.profile.build_cmds)}
                out = c.build_log()
            elif kind == "diff":
                args = {"command": r.choice(("git diff", "git diff --stat HEAD~1", "git show HEAD"))}
                out = c.diff(r.randint(1, 12))
            elif kind == "log":
                args = {"command": f"tail -n 500 logs/{r.choice(NOUNS)}.log"}
                out = c.app_log(r.randint(20, 500))
            else:
                args = {
                    "command": r.choice(
                        ("git status --short", "ls -la", "git log --oneline -20", "echo $SHELL", "wc -l src/**/*")
                    )
                }
                out = "\n".join(f"{r.choice(' MA?')}{r.choice('M ')} {c.file()}" for _ in range(r.randint(1, 30)))
            out = c.tail(out)
            if r.random() < 0.2:
                args["timeout"] = r.choice((60, 120, 600))
            is_error = kind == "build" and "error" in out and r.random() < 0.5
            if is_error:
                out += f"\n\nCommand exited with code {r.choice((1, 2, 101))}"
        elif name == "edit":
            path = c.file()
            edits = [
                {"oldText": c.code(r.randint(1, 8)), "newText": c.code(r.randint(1, 12))}
                for _ in range(r.randint(1, 3))
            ]
            args = {"path": path, "edits": edits}
            if r.random() < 0.05:
                out, is_error = f"Could not find the exact text in {path}. The old text must match exactly.", True
            else:
                out = f"Successfully replaced {len(edits)} block(s) in {path}."
                self.modified_files.add(path)
        elif name == "write":
            path = c.file()
            body = c.code(r.randint(10, 300))
            args = {"path": path, "content": body}
            out = f"Successfully wrote {len(body.encode())} bytes to {path}"
            self.modified_files.add(path)
        elif name == "grep":
            args = {
                "pattern": r.choice(("TODO|FIXME", c.ident(), "fn |def ", "error")),
                "path": r.choice(("src", "tests", ".")),
            }
            out = (
                "\n".join(
                    f"{r.choice(self.profile.files)}:{r.randint(1, 900)}: {r.choice(c.pool).strip()}"
                    for _ in range(r.randint(0, 80))
                )
                or "No matches found"
            )
        elif name == "ls":
            args = {"path": r.choice(("src", "tests", "."))}
            out = "\n".join(sorted({f.split("/")[-1] for f in r.sample(self.profile.files, 6)}))
        else:
            args = {"pattern": r.choice(("**/*.py", "**/*.ts", "**/*.rs", "*.md"))}
            out = "\n".join(r.sample(self.profile.files, 5))
        call = {"type": "toolCall", "id": self._call_id(), "name": name, "arguments": args}
        return call, out, image, is_error

    def user(self) -> None:
        r, c = self.rng, self.c
        text = c.fill(r.choice(USER_PROMPTS))
        if r.random() < 0.08:
            text += "\n\n" + r.choice(EXOTIC_SNIPPETS)
        needle = None if self.in_branch else self._take_needle("user_text")
        if needle:
            text += f"\n\nThe ticket says the failing job id is {needle}, in case that helps."
        self.recent_prompts.append(text.split("\n")[0][:200])
        images = 1 if r.random() < 0.025 else 0
        content: str | list[dict[str, Any]]
        if images or r.random() < 0.5:
            content = [{"type": "text", "text": text}]
            if images:
                content.append(
                    {"type": "image", "data": base64.b64encode(self._image()).decode(), "mimeType": "image/png"}
                )
                self.images += 1
        else:
            content = text
        eid = self._message(
            {"role": "user", "content": content}, tokens=_msg_tokens(len(text), images), kind="user", lo=20, hi=600
        )
        if needle:
            self.needle_ids["user_text"] = eid

    def turn(self) -> None:
        r, c = self.rng, self.c
        self.turns += 1
        if r.random() < 0.03:
            self.bash_execution()
        if r.random() < 0.03:
            self.custom_message()
        if r.random() < 0.02:
            self.system_patch()
        if r.random() < 0.015:
            self.model_change()
        if r.random() < 0.015:
            self.thinking_change()
        self.user()
        steps = min(int(r.expovariate(1 / 4)), 25)
        for _ in range(steps):
            if self.ctx_tokens > THRESHOLD:  # Pi would compact now; let the turn end here
                break
            if r.random() < 0.01:
                self.assistant([], "error", error=r.choice(ERROR_MESSAGES))
            blocks: list[dict[str, Any]] = []
            if self.thinking != "off" and r.random() < 0.5:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": c.fill(r.choice(THINKING_TEXTS)),
                        "thinkingSignature": c.signature(),
                    }
                )
            if r.random() < 0.4:
                blocks.append({"type": "text", "text": c.fill(r.choice(ASSISTANT_TEXTS[:5]))})
            force = "tool_output" in self.pending_needles and self._frac() >= NEEDLE_POSITIONS["tool_output"]
            calls = [self._tool_call(force and i == 0) for i in range(1 if r.random() < 0.8 else r.randint(2, 3))]
            blocks += [call[0] for call in calls]
            self.assistant(blocks, "toolUse")
            for call, out, image, is_error in calls:
                eid = self.tool_result(call, out, image=image, is_error=is_error)
                if RARE_LITERALS["tool_output"] in out:
                    self.needle_ids["tool_output"] = eid
        if r.random() < 0.01:
            self.assistant([], "aborted", error="Request was aborted")
            return
        blocks = []
        if self.thinking != "off" and r.random() < 0.6:
            blocks.append(
                {"type": "thinking", "thinking": c.fill(r.choice(THINKING_TEXTS)), "thinkingSignature": c.signature()}
            )
        text = c.fill(r.choice(ASSISTANT_TEXTS))
        if r.random() < 0.05:
            text += " " + r.choice(EXOTIC_SNIPPETS)
        needle = self._take_needle("assistant_text")
        if needle:
            text += f"\n\nI filed this as {needle} so we can track the flaky run."
        blocks.append({"type": "text", "text": text})
        eid = self.assistant(blocks, "stop")
        if needle:
            self.needle_ids["assistant_text"] = eid

    def bash_execution(self) -> None:
        r, c = self.rng, self.c
        cmd = r.choice(("git status --short", "git log --oneline -5", "echo $SHELL", "ls", "make lint"))
        out = c.app_log(r.randint(1, 20)) if r.random() < 0.5 else "\x1b[32m✓\x1b[0m all good\n"
        msg = {
            "role": "bashExecution",
            "command": cmd,
            "output": out,
            "exitCode": r.choice((0, 0, 0, 1)),
            "cancelled": False,
            "truncated": False,
        }
        self._message(msg, tokens=_msg_tokens(len(cmd) + len(out)), kind="user", lo=5, hi=120)

    def custom_message(self) -> None:
        r, c = self.rng, self.c
        text = "<git-status>\n" + c.diff(1)[:1500] + "\n</git-status>"
        eid = self._emit(
            "custom_message",
            {"customType": "git-status", "content": [{"type": "text", "text": text}], "display": r.random() < 0.7},
        )
        self.ctx.append(_Ctx(eid, _msg_tokens(len(text)), "user"))

    def bookkeeping(self) -> None:
        """Entries that never reach the model: labels, extension state, usage, names."""
        r = self.rng
        if r.random() < 0.03 and self.assistant_ids:
            self._emit(
                "label",
                {
                    "targetId": r.choice(self.assistant_ids),
                    "label": r.choice(("before-refactor", "✅ tests green", "checkpoint-1", "ここから", "good state")),
                },
            )
        if r.random() < 0.02:
            self._emit(
                "custom", {"customType": "todo-state", "data": {"open": r.randint(0, 9), "done": r.randint(0, 30)}}
            )
        if r.random() < 0.02 and self.model[0] == "anthropic":
            self._emit(
                "usage",
                {"kind": "cache_warm", "provider": self.model[0], "model": self.model[1], "usage": self._usage(1)},
                lo=60,
                hi=600,
            )
        if r.random() < 0.003:
            self.session_info()

    def session_info(self) -> None:
        self._emit("session_info", {"name": self.c.fill("Fix {noun} handling in {file}")})

    def context_edit(self) -> None:
        r = self.rng
        big = [x for x in self.ctx if x.kind == "toolResult" and x.tokens > 500]
        if big and r.random() < 0.8:
            t = r.choice(big)
            note = f"[context-pruner: {t.tokens * 4} characters of earlier tool output elided]"
            self._emit(
                "context_edit", {"targetId": t.entry_id, "replacement": {"content": [{"type": "text", "text": note}]}}
            )
            t.tokens = _msg_tokens(len(note))
        else:
            users = [x for x in self.ctx if x.kind == "user"]
            if not users:
                return
            t = r.choice(users)
            self._emit("context_edit", {"targetId": t.entry_id, "replacement": None})
            t.tokens = 0

    def branch(self) -> None:
        """An abandoned attempt off the current leaf, then a branch summary that continues from it."""
        r, c = self.rng, self.c
        fork = self.leaf
        saved_ctx = list(self.ctx)
        self.in_branch = True
        self.user()
        self.assistant([{"type": "text", "text": c.fill(r.choice(ASSISTANT_TEXTS))}], "stop")
        abandoned = self.leaf
        self.ctx = saved_ctx
        self.in_branch = False
        summary = self._summary_text()
        fields = {"fromId": abandoned, "summary": summary, "details": self._file_details(), "fromHook": False}
        eid = self._emit("branch_summary", fields, parent=fork, lo=30, hi=300)
        self.ctx.append(_Ctx(eid, _msg_tokens(len(summary)), "user"))

    def _file_details(self) -> dict[str, list[str]]:
        modified = sorted(self.modified_files)
        return {"readFiles": sorted(self.read_files - self.modified_files), "modifiedFiles": modified}

    def _summary_text(self) -> str:
        r = self.rng
        prompts = list(self.recent_prompts) or ["(no prompt)"]
        done = "\n".join(f"- [x] {p}" for p in prompts[:-2]) or "- (none)"
        doing = "\n".join(f"- [ ] {p}" for p in prompts[-2:])
        return (
            f"## Goal\n{prompts[0]}\n\n## Constraints & Preferences\n- Keep the public API stable\n\n"
            f"## Progress\n### Done\n{done}\n\n### In Progress\n{doing}\n\n### Blocked\n- (none)\n\n"
            f"## Key Decisions\n- **Use integer cents**: avoids float rounding\n\n"
            f"## Next Steps\n1. {r.choice(prompts)}\n\n## Critical Context\n- `{self.c.ident()}` in "
            f"`{self.c.file()}`"
        )

    def compaction(self) -> None:
        """Auto-compaction as Pi does it: summary of everything before a cut ~20k tokens from the end."""
        acc = 0
        cut = len(self.ctx) - 1
        for i in range(len(self.ctx) - 1, -1, -1):
            acc += self.ctx[i].tokens
            if acc >= KEEP_RECENT_TOKENS:
                cut = i
                break
        candidates = [j for j in range(cut, len(self.ctx)) if self.ctx[j].kind in ("user", "assistant")]
        if not candidates:
            return
        first_kept = candidates[0]
        tokens_before = self.ctx_tokens
        summary = self._summary_text()
        sys_msg = {
            "role": "system",
            "content": "",
            "sections": dict(self.sections),
            "toolsAdded": self.tools,
            "timestamp": self.clock_ms,
        }
        out_tokens = _msg_tokens(len(summary))
        usage = {
            "input": tokens_before,
            "output": out_tokens,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": tokens_before + out_tokens,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        }
        fields = {
            "summary": summary,
            "firstKeptEntryId": self.ctx[first_kept].entry_id,
            "tokensBefore": tokens_before,
            "details": self._file_details(),
            "usage": usage,
            "fromHook": False,
            "systemMessage": sys_msg,
        }
        self._emit("compaction", fields, lo=20, hi=90)
        self.compactions += 1
        self.ctx = self.ctx[first_kept:]
        sys_chars = sum(len(v) for v in self.sections.values()) + len(orjson.dumps(self.tools))
        self.base_tokens = _msg_tokens(sys_chars) + out_tokens
        self.cached_tokens = 0
        self.read_files.clear()
        self.modified_files.clear()
        self.final_edit = False

    # ---- driver

    def run(self) -> None:
        r = self.rng
        self.header()
        self.system_prompt()
        self._emit("model_change", {"provider": self.model[0], "modelId": self.model[1]})
        self._emit("thinking_level_change", {"thinkingLevel": self.thinking})
        while True:
            over = self.ctx_tokens > THRESHOLD
            if over and self.written >= self.size and not self.pending_needles and self.compactions:
                break
            if over or self.turns == 4:  # turn 4: a manual /compact early in the session
                self.compaction()
            if self.turns == 2:
                self.session_info()
            final_cycle = self.written >= self.size
            if (
                self.turns == 6
                or (self.turns > 6 and r.random() < 0.005)
                or (final_cycle and not self.final_edit and self.ctx_tokens > THRESHOLD // 2)
            ):
                self.context_edit()
                self.final_edit = final_cycle
            if self.turns == 8:
                self.branch()
            self.turn()
            self.bookkeeping()


def generate(fh: BinaryIO, size: int, seed: int = 1, path: str = "-") -> GenStats:
    """Write one session of at least `size` bytes to `fh`; the same seed gives the same bytes."""
    g = Generator(fh, size, seed)
    g.run()
    return GenStats(
        path=path,
        bytes=g.written,
        entries=g.entries,
        turns=g.turns,
        images=g.images,
        compactions=g.compactions,
        needle_ids=dict(g.needle_ids),
        leaf_id=g.leaf or "",
    )


def generate_file(path: str | Path, size: int, seed: int = 1) -> GenStats:
    """Write to a temporary name and rename, so an interrupted run never leaves a half file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb", buffering=1 << 20) as fh:
        stats = generate(fh, size, seed, str(path))
    tmp.replace(path)
    return stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", required=True, help="target size, e.g. 200KB, 10MB, 500MB (powers of 1024)")
    ap.add_argument("--out", required=True, help="output .jsonl path")
    ap.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ap.add_argument("--quiet", action="store_true", help="no summary line on stderr")
    args = ap.parse_args(argv)
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        ap.error(str(exc))
    t0 = time.perf_counter()
    stats = generate_file(args.out, size, args.seed)
    if not args.quiet:
        print(
            f"wrote {stats.path}: {stats.bytes / 2**20:.1f} MiB, {stats.entries} entries, {stats.turns} "
            f"turns, {stats.images} images, {stats.compactions} compactions, leaf {stats.leaf_id}, "
            f"needles {stats.needle_ids} in {time.perf_counter() - t0:.1f}s",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
