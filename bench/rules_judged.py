"""Precision and recall of ``picompact rules``' reading of user messages on the judged corpus of
``tests/ops/rules_corpus.py``: instructions as people write them (terse, misspelt, imperative, in six languages)
among requests, questions, thanks and pasted documentation or logs.

"before" is the reading ``rules`` had before ``ops/instruction_cues.py``: each sentence of ``split_sentences`` that
the checkpoint's classifier (``checkpoint.verbatim.standing.classify``) calls a rule, constraint, preference or
value and ``instruction_text.is_request`` does not call a request. "after" is ``instruction_cues.instructions``.
A taken sentence is right when it holds one of the message's labelled pieces not yet credited.

    python bench/rules_judged.py [--errors] [--repeat 200]

Markdown on stdout: by part of the corpus, then by language (all parts); then the time per message.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pi_compact.checkpoint.verbatim.standing import classify, split_sentences
from pi_compact.ops.instruction_cues import instructions
from pi_compact.ops.instruction_text import GENERIC, MIXED, instruction_key, is_request
from tests.ops.rules_corpus import DEV, FRESH, HARD, HELD_OUT, Item, score

KINDS = ("rule", "constraint", "preference", "value")


def before(text: str) -> Iterable[str]:
    for sentence in split_sentences(text):
        if classify(sentence) in KINDS and not is_request(sentence) and instruction_key(sentence) - GENERIC - {MIXED}:
            yield sentence


def after(text: str) -> Iterable[str]:
    for sentence, _ in instructions(text):
        yield sentence


def _row(label: str, items: list[Item], ways: list[tuple[str, Callable[[str], Iterable[str]]]]) -> str:
    cells = [label, str(len(items)), str(sum(len(i[2]) for i in items))]
    for _, way in ways:
        r = score(items, way)
        cells.append(f"{r['precision']:.2f} ({r['right']}/{r['taken']})")
        cells.append(f"{r['recall']:.2f} ({r['found']}/{r['expected']})")
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--errors", action="store_true")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    ways = [("before", before), ("after", after)]
    head = "| part | messages | instructions | precision before | recall before | precision after | recall after |"
    print(head)
    print("|---" * 7 + "|")
    parts = [("dev", DEV), ("held out", HELD_OUT), ("hard", HARD), ("fresh", FRESH)]
    for name, items in parts:
        print(_row(name, items, ways))
    everything = [*DEV, *HELD_OUT, *HARD, *FRESH]
    print(_row("**all**", everything, ways))
    print()
    print(head.replace("| part |", "| language |"))
    print("|---" * 7 + "|")
    for lang in ("en", "ko", "ja", "zh", "de", "es"):
        print(_row(lang, [i for i in everything if i[0] == lang], ways))
    print()
    messages = [i[1] for i in everything]
    for name, way in ways:
        start = time.perf_counter()
        for _ in range(args.repeat):
            for text in messages:
                list(way(text))
        per = (time.perf_counter() - start) / (args.repeat * len(messages)) * 1e6
        print(f"- {name}: {per:.1f} µs per message ({len(messages)} messages × {args.repeat})")
    if args.errors:
        for name, items in parts:
            r = score(items, after)
            for line in r["wrong"]:
                print(f"- {name} wrong: {line}")
            for line in r["missed"]:
                print(f"- {name} missed: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
