"""Precision and recall of the redactor on its corpus by shape (``tests/redact/corpus/``), and its throughput on
mixed session text.

    python bench/redact_corpus.py [--errors] [--mb 10] [--repeat 3]

Markdown on stdout: a row per shape (secrets, found, findings, false positives, precision, recall), then the
characters per second ``Redactor.redact`` masks over ``--mb`` MB of generated session text (prose, code, logs, JSON,
tool output, with a secret every few kilobytes); ``--errors`` lists every miss and false positive.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pi_compact.redact import Redactor, find_secrets  # noqa: E402
from tests.redact.corpus_kit import load_corpus, score  # noqa: E402

_PIECES = (
    "The tests pass now; next I will look at the parser and the token budget for the summary.\n",
    "def load(path: str, token: str | None = None) -> dict:\n    with open(path) as f:\n        return json.load(f)\n",
    '{"id": "550e8400-e29b-41d4-a716-446655440000", "type": "message", "usage": {"input_tokens": 1200}}\n',
    "src/app/models.py:42:    password = models.CharField(max_length=128)\n",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: A <a@example.com>\n\n    Fix the login flow\n",
    "2026-01-01 12:00:00 INFO GET /api/v1/users?page=2 200 12ms\n",
    "\x1b[32mPASSED\x1b[0m tests/test_auth.py::test_token_refresh\n",
    "added 812 packages, and audited 813 packages in 9s\n",
    "integrity sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==\n",
    "    max_tokens = 4096\n    temperature = 0.2\n",
)
_SECRETS = (
    "DB_PASSWORD=hunter2\n",
    "export GITHUB_TOKEN=ghp_R2d4F6h8J0k2L4z6X8c0V2b4N6m8Q0w2E4r6\n",
    "DATABASE_URL=postgres://app:Pg-Pa55w0rd@db.internal:5432/app\n",
    "Authorization: Bearer tok_9Hq2Wm4Xn6Kp8Rt0Yv2Zc4Lf6Jd8Ga\n",
)


def mixed_text(size: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    while total < size:
        piece = rng.choice(_SECRETS) if rng.random() < 0.01 else rng.choice(_PIECES)
        parts.append(piece)
        total += len(piece)
    return "".join(parts)[:size]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--errors", action="store_true")
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    tallies = score(load_corpus(), lambda text: [(f.kind, f.start, f.end) for f in find_secrets(text)])
    print("| shape | secrets | found | findings | false positives | precision | recall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for shape, t in sorted(tallies.items(), key=lambda item: (item[0] == "all", item[0])):
        print(f"| {shape} | {t.secrets} | {t.found} | {t.findings} | {t.false} | {t.precision:.3f} | {t.recall:.3f} |")
    if args.errors:
        for line in tallies["all"].misses + tallies["all"].false_positives:
            print("-", line)
    if args.mb > 0:
        text = mixed_text(int(args.mb * 1_000_000))
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            Redactor().redact(text)
            best = min(best, time.perf_counter() - start)
        rate = len(text) / best / 1e6
        print(f"\nredact {len(text) / 1e6:.1f} MB of mixed session text: {best:.2f} s, {rate:.1f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
