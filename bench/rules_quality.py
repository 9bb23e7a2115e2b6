"""Precision and recall of ``picompact rules`` on generated project trees (``rules_trees.py``).

For each seed a tree is generated and ``find_rules`` (the library call behind ``picompact rules``) is run on each of
its projects at ``--min-sessions 2``. A suggestion is labelled with the planted rule most of its statements carry
(by session file and entry id, from ``truth.json``). It is *correct* when that rule is one the project repeats and
its AGENTS.md does not hold, and no earlier suggestion already stood for it; anything else (a look-alike request,
a single or known rule, two rules merged into one under the wrong label, a second suggestion for the same rule)
counts against precision. Recall: the repeated rules suggested / the repeated rules planted.

    python bench/rules_quality.py [--seeds 1-10] [--projects 10] [--sessions 8] [--thresholds 0.5]
                                  [--data-dir bench/data/rules] [--json] [--errors]

Markdown on stdout; ``--errors`` adds every wrong or missed item.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import rules_trees

from pi_compact.ops.instruction_text import MATCH_THRESHOLD
from pi_compact.ops.rules import find_rules


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def score_tree(root: Path, truth: dict[str, Any], threshold: float, known: float | None = None) -> dict[str, Any]:
    agent = root / "agent"
    result = {"suggested": 0, "correct": 0, "expected": 0, "found": 0, "wrong": [], "missed": [], "skipped": 0}
    for cwd, project in truth["projects"].items():
        report = find_rules(cwd, agent_dir=agent, threshold=threshold, known_threshold=known)
        result["skipped"] += len(report.unreadable)
        labels = project["labels"]
        expected = set(project["repeated"])
        credited: set[str] = set()
        for item in report.suggestions:
            votes = Counter(labels.get(f"{m.path}#{m.entry_id}") for m in item.mentions)
            label, _ = max(votes.items(), key=lambda kv: (kv[1], kv[0] is not None, kv[0] or ""))
            result["suggested"] += 1
            if label in expected and label not in credited:
                credited.add(label)
                result["correct"] += 1
            else:
                why = (
                    "duplicate"
                    if label in credited
                    else "single"
                    if label in project["single"]
                    else ("known" if label in project["known"] else "ordinary" if label is None else "?")
                )
                result["wrong"].append(f"{Path(cwd).name}: {why} {label}: {item.text!r} ({dict(votes)})")
        result["expected"] += len(expected)
        result["found"] += len(credited)
        for name in sorted(expected - credited):
            said = sorted({k.split("#")[0] for k, v in labels.items() if v == name})
            result["missed"].append(f"{Path(cwd).name}: {name} (said in {len(said)} sessions)")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-10")
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--thresholds", default=str(MATCH_THRESHOLD))
    parser.add_argument("--known", type=float, default=None, help="the threshold for 'already in AGENTS.md'")
    parser.add_argument("--data-dir", type=Path, default=Path("bench/data/rules"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--errors", action="store_true")
    args = parser.parse_args()
    thresholds = [float(t) for t in args.thresholds.split(",")]
    rows = []
    errors: list[str] = []
    started = time.monotonic()
    trees = []
    for seed in _seeds(args.seeds):
        root = args.data_dir.resolve() / f"seed-{seed}"  # the truth names sessions by absolute path
        trees.append((seed, root, rules_trees.generate(root, seed, args.projects, args.sessions)))
    for threshold in thresholds:
        total = Counter()
        for seed, root, truth in trees:
            r = score_tree(root, truth, threshold, args.known)
            for key in ("suggested", "correct", "expected", "found", "skipped"):
                total[key] += r[key]
            errors += [f"t={threshold} seed {seed} wrong: {w}" for w in r["wrong"]]
            errors += [f"t={threshold} seed {seed} missed: {m}" for m in r["missed"]]
        precision = total["correct"] / total["suggested"] if total["suggested"] else 1.0
        recall = total["found"] / total["expected"] if total["expected"] else 1.0
        rows.append({"threshold": threshold, **total, "precision": precision, "recall": recall})
    elapsed = time.monotonic() - started
    if args.json:
        sys.stdout.write(orjson.dumps({"rows": rows, "errors": errors, "seconds": elapsed}).decode() + "\n")
        return 0
    n_projects = len(trees) * args.projects
    print(f"{len(trees)} trees, {n_projects} projects of {args.sessions} sessions, {elapsed:.1f} s\n")
    print("| threshold | suggested | correct | precision | repeated rules | found | recall |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['threshold']:.2f} | {row['suggested']} | {row['correct']} | {row['precision']:.3f} | "
            f"{row['expected']} | {row['found']} | {row['recall']:.3f} |"
        )
    if args.errors:
        print()
        for line in errors:
            print(f"- {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
