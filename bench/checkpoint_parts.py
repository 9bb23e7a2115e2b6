"""The parts of a verbatim checkpoint around what it keeps: the fixed overhead, the file lists, the standing block.

    python bench/checkpoint_parts.py [--json]          # the pi_compact on PYTHONPATH (run it for two trees)

- **Overhead**: a span of one turn ("hi" / "hello", and "Read the README." with one read call); the summary and
  the re-orientation message, minus that turn's own text (its messages and its call's signature line), in Pi's
  tokens (ceil(UTF-16 length / 4)) and in cl100k's, with a 100-character session path.
- **File lists**: a session with 6 compacted reads after a compaction (not picompact's) whose lists named 90
  line ranges of three files and 40 other files; the lines and tokens of the file-list section, of the whole
  checkpoint, and of the span it replaces.
- **Standing block**: the time to build the block from one pasted message of N rule-like lines (best of 3), and
  its lines.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from pi_compact.checkpoint import VerbatimOptions, build_verbatim_checkpoint
from pi_compact.js import js_len
from pi_compact.pi.plan import plan_compaction
from pi_compact.pi.tokens import count_cl100k
from pi_compact.session import get_branch, load_session

CWD = "/home/dev/repo"
SESSION_PATH = "/home/dev/.pi/agent/sessions/--home-dev-repo--/2026-01-01T00-00-00-000Z_0199aaaa-bbbb-cccc.jsonl"
SESSION_PATH += "x" * (100 - len(SESSION_PATH))


class Builder:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = [
            {"type": "session", "version": 3, "id": "0199-parts", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": CWD}
        ]
        self.parent: str | None = None
        self.calls = 0

    def add(self, entry: dict[str, Any]) -> str:
        eid = f"{len(self.rows):08x}"
        stamp = f"2026-01-01T00:{len(self.rows) // 60 % 60:02d}:{len(self.rows) % 60:02d}.000Z"
        self.rows.append({"id": eid, "parentId": self.parent, "timestamp": stamp, **entry})
        self.parent = eid
        return eid

    def message(self, message: dict[str, Any]) -> str:
        return self.add({"type": "message", "message": message})

    def user(self, text: str) -> str:
        return self.message({"role": "user", "content": text})

    def assistant(self, text: str) -> str:
        return self.message({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"})

    def tool(self, name: str, arguments: dict[str, Any], output: str) -> None:
        self.calls += 1
        call = {"type": "toolCall", "id": f"call_{self.calls}", "name": name, "arguments": arguments}
        self.message({"role": "assistant", "content": [call], "stopReason": "toolUse"})
        self.message(
            {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": name,
                "content": [{"type": "text", "text": output}],
                "isError": False,
            }
        )

    def write(self, path: Path) -> Path:
        path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in self.rows))
        return path


def checkpoint(builder: Builder, tmp: Path, lookup: bool = False) -> Any:
    path = builder.write(tmp / f"s{len(builder.rows)}.jsonl")
    plan = plan_compaction(get_branch(load_session(path)), 1)
    return plan, build_verbatim_checkpoint(plan, VerbatimOptions(SESSION_PATH, None, lookup_available=lookup))


def pi_tokens(text: str) -> int:
    return math.ceil(js_len(text) / 4)


def cl100k(text: str) -> int:
    return count_cl100k({"role": "user", "content": text})


def overhead(tmp: Path) -> dict[str, Any]:
    out = {}
    for name, own in (
        ("hi/hello", "hi" + "hello"),
        ("one read", "Read the README.▸ read(path=README.md) → okRead it."),
    ):
        for lookup in (False, True):
            b = Builder()
            if name == "hi/hello":
                b.user("hi")
                b.assistant("hello")
            else:
                b.user("Read the README.")
                b.tool("read", {"path": f"{CWD}/README.md"}, "weatherly: forecasts.\n" * 100)
                b.assistant("Read it.")
            b.user("next")
            _, cp = checkpoint(b, tmp, lookup)
            both = cp.summary + cp.reminder
            out[f"{name}{', lookup' if lookup else ''}"] = {
                "pi": math.ceil((js_len(both) - js_len(own)) / 4),
                "cl100k": cl100k(cp.summary) + cl100k(cp.reminder) - cl100k(own),
            }
    return out


def file_lists(tmp: Path) -> dict[str, Any]:
    b = Builder()
    ranged = [
        f"{CWD}/src/{name}.tsx:{10 * n + 1}-{10 * n + 9}" for name in ("Dashboard", "Chart", "Grid") for n in range(30)
    ]
    others = [f"{CWD}/lib/mod_{n:02d}.py" for n in range(40)]
    b.user("Refactor the dashboard.")
    b.assistant("Starting.")
    kept = b.user("Go on.")
    b.add(
        {
            "type": "compaction",
            "summary": "Earlier work on the dashboard.",
            "firstKeptEntryId": kept,
            "tokensBefore": 1000,
            "details": {"readFiles": ranged + others, "modifiedFiles": [f"{CWD}/src/App.tsx"]},
        }
    )
    for n in range(6):
        b.tool("read", {"path": f"{CWD}/src/Dashboard.tsx", "offset": 1 + 100 * n, "limit": 100}, "line\n" * 100)
    b.assistant("Read the dashboard again.")
    b.user("next")
    plan, cp = checkpoint(b, tmp)
    start = cp.summary.index("## Files in the compacted history")
    section = cp.summary[start : cp.summary.index("\n---\n", start)]
    span = sum(pi_tokens(orjson.dumps(m).decode()) for pe in plan.summarized_entries() for m in pe.messages)
    return {
        "listed paths": len(cp.details["readFiles"]) + len(cp.details["modifiedFiles"]),
        "section lines": section.count("\n") + 1,
        "section tokens (pi)": pi_tokens(section),
        "section tokens (cl100k)": cl100k(section),
        "checkpoint tokens (pi)": cp.tokens,
        "span tokens (pi, messages as JSON)": span,
    }


def standing(sizes: tuple[int, ...] = (1000, 2000, 4000)) -> dict[str, Any]:
    from pi_compact.checkpoint.verbatim.standing import render_standing, standing_instructions

    out = {}
    for n in sizes:
        lines = [f"- Never call legacy_api_{i} from module_{i % 97}, it must stay under {i} ms." for i in range(n)]
        text = "Here is the list:\n" + "\n".join(lines)
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            block = render_standing(standing_instructions([("u1", "Build it."), ("u2", text)]))
            best = min(best, time.perf_counter() - t0)
        out[f"{n} lines ({len(text) // 1000} KB)"] = {"seconds": round(best, 3), "block lines": block.count("\n- ")}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import pi_compact

    with tempfile.TemporaryDirectory(prefix="picompact-parts-") as tmp:
        report = {
            "tree": str(Path(pi_compact.__file__).parent.parent),
            "overhead": overhead(Path(tmp)),
            "file_lists": file_lists(Path(tmp)),
            "standing": standing(),
        }
    if args.json:
        sys.stdout.write(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"tree: {report['tree']}")
    for part in ("overhead", "file_lists", "standing"):
        print(f"{part}:")
        for key, value in report[part].items():
            print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
