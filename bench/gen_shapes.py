"""Sessions of several shapes, for measuring picompact on more than one kind of file (README.md: "Sessions of every
shape"; ``shapes.py`` runs them).

    python bench/gen_shapes.py --shape NAME --size 100MB --out FILE [--seed 1]
    python bench/gen_shapes.py --list

Every shape is a valid Pi 1.6 v3 session (a header, then entries each naming an earlier one as parent), written
entry by entry to ``FILE.part`` and renamed when complete; the same seed gives the same bytes. The shapes:

- ``generated``: bench/gen_session.py's session (tool output, screenshots, thinking, a compaction whenever the context
  passes Pi's threshold).
- ``small-entries``: many short user and assistant messages (about 300 bytes each), a compaction every 2,000.
- ``huge-results``: few entries, each tool result 4 to 12 MB of log text; a compaction every 6 tool results.
- ``uncompacted``: one long span without any compaction (tool results, replies, thinking): every message is live.
- ``deep-chain``: a compaction every 20 entries, each keeping the last 10 (thousands of compactions).
- ``branches``: a tree, every tenth user message continuing from an entry up to 200 entries back, with a
  ``branch_summary``; compactions now and then on the latest branch.
- ``images``: user messages and tool results with base64 PNG-like image blocks of 50 to 400 KB.
- ``real-repeated``: the messages of a real Pi session (tests/fixtures/pi/pi-before-compaction.jsonl, from the
  pi-mono repository) repeated, ids made fresh and chained, compactions left out: one long uncompacted span of real
  messages.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_session import generate_file, parse_size

ROOT = Path(__file__).resolve().parent.parent
REAL_SESSION = ROOT / "tests" / "fixtures" / "pi" / "pi-before-compaction.jsonl"
TEXT = (
    "the build fails when the parser reads a nested list so we moved the check into the loader and added a test "
    "for the empty file case while the cache keeps its old index until the next run rewrites it"
)
WORDS = TEXT.split()
LOG_LINES = [
    "2026-01-0{d}T10:{m:02d}:{s:02d}Z INFO  worker-{w} processed batch {b} in {t} ms",
    "tests/test_loader.py::test_case_{b} PASSED",
    "src/app/module_{w}.py:{b}: warning: unused variable 'tmp_{t}'",
    "2026-01-0{d}T10:{m:02d}:{s:02d}Z ERROR worker-{w} retry {b} failed: connection reset",
]


class Writer:
    """Entries with fresh 8-hex ids and increasing timestamps, each line written as it is made."""

    def __init__(self, fh: Any, rng: random.Random) -> None:
        self.fh = fh
        self.rng = rng
        self.size = 0
        self.serial = 0
        self.ids: list[str] = []
        self.leaf: str | None = None
        self.ms = 1767225600000

    def header(self) -> None:
        head = {
            "type": "session",
            "version": 3,
            "id": "01990000-0000-7000-8000-000000000001",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/home/dev/src/shapes",
        }
        self._write(head)

    def _write(self, value: dict[str, Any]) -> None:
        line = orjson.dumps(value) + b"\n"
        self.fh.write(line)
        self.size += len(line)

    def entry(self, kind: str, parent: str | None = None, **fields: Any) -> str:
        self.serial += 1
        entry_id = f"{self.serial:08x}"
        self.ms += 1000
        value: dict[str, Any] = {
            "type": kind,
            "id": entry_id,
            "parentId": self.leaf if parent is None else parent,
            "timestamp": f"2026-01-01T00:00:{self.serial % 60:02d}.000Z",
        }
        value.update(fields)
        self._write(value)
        self.ids.append(entry_id)
        self.leaf = entry_id
        return entry_id

    def message(self, message: dict[str, Any], parent: str | None = None) -> str:
        message.setdefault("timestamp", self.ms)
        return self.entry("message", parent, message=message)

    def text(self, n_words: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(n_words))

    def log(self, n_bytes: int) -> str:
        rng, out, size = self.rng, [], 0
        while size < n_bytes:
            line = rng.choice(LOG_LINES).format(
                d=rng.randint(1, 9),
                m=rng.randint(0, 59),
                s=rng.randint(0, 59),
                w=rng.randint(1, 16),
                b=rng.randint(1, 99999),
                t=rng.randint(1, 999),
            )
            out.append(line)
            size += len(line) + 1
        return "\n".join(out)

    def turn(self, result_bytes: int, thinking: bool = True) -> None:
        """A user request, an assistant tool call, its result and a closing reply."""
        self.message({"role": "user", "content": self.text(20)})
        call = f"toolu_{self.serial:08x}"
        blocks: list[dict[str, Any]] = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": self.text(40), "thinkingSignature": "sig" * 20})
        blocks.append({"type": "toolCall", "id": call, "name": "bash", "arguments": {"command": "pytest -q"}})
        self.message(self.assistant(blocks, "toolUse"))
        self.message(
            {
                "role": "toolResult",
                "toolCallId": call,
                "toolName": "bash",
                "content": [{"type": "text", "text": self.log(result_bytes)}],
                "isError": False,
            }
        )
        self.message(self.assistant([{"type": "text", "text": self.text(30)}], "stop"))

    def assistant(self, blocks: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": blocks,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {
                "input": 1000 + self.serial % 5000,
                "output": 200,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 1200 + self.serial % 5000,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": stop,
        }

    def compaction(self, keep: int) -> None:
        first_kept = self.ids[-keep] if keep and len(self.ids) >= keep else self.leaf
        self.entry(
            "compaction",
            summary="## Goal\n" + self.text(60),
            firstKeptEntryId=first_kept,
            tokensBefore=150000 + self.serial % 1000,
        )

    def image(self, n_bytes: int) -> dict[str, Any]:
        raw = self.rng.randbytes(n_bytes * 3 // 4)
        return {"type": "image", "data": base64.b64encode(raw).decode(), "mimeType": "image/png"}


def small_entries(w: Writer, size: int) -> None:
    n = 0
    while w.size < size:
        w.message({"role": "user", "content": w.text(25)})
        w.message(w.assistant([{"type": "text", "text": w.text(25)}], "stop"))
        n += 2
        if n % 2000 == 0:
            w.compaction(40)


def huge_results(w: Writer, size: int) -> None:
    n = 0
    while w.size < size:
        w.turn(w.rng.randint(4, 12) * 1024 * 1024)
        n += 1
        if n % 6 == 0:
            w.compaction(4)


def uncompacted(w: Writer, size: int) -> None:
    while w.size < size:
        w.turn(w.rng.randint(500, 12000))


def deep_chain(w: Writer, size: int) -> None:
    n = 0
    while w.size < size:
        w.turn(w.rng.randint(200, 3000))
        n += 4
        if n % 20 == 0:
            w.compaction(10)


def branches(w: Writer, size: int) -> None:
    n = 0
    while w.size < size:
        n += 1
        if n % 10 == 0 and len(w.ids) > 200:
            back = w.ids[-w.rng.randint(20, 200)]
            w.leaf = back
            w.entry("branch_summary", fromId=back, summary="Abandoned: " + w.text(30))
        w.turn(w.rng.randint(500, 8000))
        if n % 300 == 0:
            w.compaction(20)


def images(w: Writer, size: int) -> None:
    n = 0
    while w.size < size:
        n += 1
        w.message(
            {"role": "user", "content": [{"type": "text", "text": w.text(10)}, w.image(w.rng.randint(50, 400) * 1024)]}
        )
        call = f"toolu_{w.serial:08x}"
        blocks = [{"type": "toolCall", "id": call, "name": "read", "arguments": {"path": f"shot-{n}.png"}}]
        w.message(w.assistant(blocks, "toolUse"))
        content = [{"type": "text", "text": "Read image file [image/png]"}, w.image(w.rng.randint(50, 400) * 1024)]
        w.message({"role": "toolResult", "toolCallId": call, "toolName": "read", "content": content, "isError": False})
        w.message(w.assistant([{"type": "text", "text": w.text(30)}], "stop"))
        if n % 60 == 0:
            w.compaction(8)


def real_repeated(w: Writer, size: int) -> None:
    messages = []
    for line in REAL_SESSION.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        value = orjson.loads(line)
        if value.get("type") == "message" and isinstance(value.get("message"), dict):
            messages.append(value["message"])
    while w.size < size:
        for message in messages:
            w.message(dict(message))
            if w.size >= size:
                break


SHAPES: dict[str, Callable[[Writer, int], None]] = {
    "small-entries": small_entries,
    "huge-results": huge_results,
    "uncompacted": uncompacted,
    "deep-chain": deep_chain,
    "branches": branches,
    "images": images,
    "real-repeated": real_repeated,
}
NAMES = ("generated", *SHAPES)


def generate_shape(shape: str, path: str | Path, size: int, seed: int = 1) -> None:
    """Write the session of ``shape`` to ``path`` (through ``path.part``, renamed when complete)."""
    path = Path(path)
    if shape == "generated":
        generate_file(path, size, seed)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    with open(part, "wb", buffering=1 << 20) as fh:
        w = Writer(fh, random.Random(f"{shape}-{seed}"))
        w.header()
        SHAPES[shape](w, size)
    os.replace(part, path)


def shape_files(names: list[str], size_text: str, data_dir: Path, seed: int = 1) -> Iterator[tuple[str, Path]]:
    """(shape, file) for each name, generating the files that are missing."""
    size = parse_size(size_text)
    data_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = data_dir / f"shape-{name}-{size_text.lower()}-s{seed}.jsonl"
        if not path.exists():
            print(f"generating {path} ...", file=sys.stderr)
            generate_shape(name, path, size, seed)
        yield name, path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=NAMES)
    ap.add_argument("--size", default="100MB")
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--list", action="store_true", help="print the shapes' names")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(NAMES))
        return 0
    if not args.shape or not args.out:
        ap.error("--shape and --out are required")
    generate_shape(args.shape, args.out, parse_size(args.size), args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
