"""How well `picompact search` ranks, on the judged corpus of tests/archive/judged_corpus.py, and whether a word
search in any script finds what `-F` finds.

    python bench/search_quality.py [--noise 40] > report.md

The corpus (stories in English, Korean, Japanese and Chinese with the entries that answer each query decided when
it is built, among sessions of everyday work that repeat the same words) is written to a temporary directory and
searched with the library (``archive.search``, default options, a temporary index). Reported: for each query the
rank of the first right answer; the share of queries answered first and in the top 5, by kind; and for words of
the scripts without spaces (and Korean), the entries a word search finds against those `-F` finds.

Run with another checkout's code first on PYTHONPATH to measure it on the same corpus (the corpus module is loaded
from this checkout by path).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH: the code measured is the one it names


def load_corpus() -> object:
    spec = importlib.util.spec_from_file_location("judged_corpus", ROOT / "tests" / "archive" / "judged_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["judged_corpus"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def ids(store: object, scope: object, query: object, filters: object) -> list[tuple[str, str]]:
    from pi_compact.archive import search

    out: list[tuple[str, str]] = []
    cursor = None
    while True:
        page = search(store, scope, query, filters, limit=1000, cursor=cursor)  # type: ignore[arg-type]
        out += [(h.session, h.entry_id or "") for h in page.hits]
        cursor = page.next_cursor
        if cursor is None:
            return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--noise", type=int, default=40)
    args = parser.parse_args()
    corpus = load_corpus()
    from pi_compact.archive import Filters, Query, session_files, temporary_store
    from pi_compact.errors import PiCompactError

    with tempfile.TemporaryDirectory() as tmp:
        judged = corpus.build(Path(tmp), noise=args.noise)  # type: ignore[attr-defined]
        found = session_files([tmp], include_default=False)
        with temporary_store() as store:
            scope = store.update(found.files)
            ranks: list[tuple[object, int | None]] = []
            for item in judged:
                try:
                    got = ids(store, scope, Query.parse(item.query), Filters())
                except PiCompactError:
                    got = []
                rank = next((n for n, hit in enumerate(got, 1) if hit in item.answers), None)
                ranks.append((item, rank))
            coverage = []
            for word in corpus.CJK_WORDS:  # type: ignore[attr-defined]
                words = set(ids(store, scope, Query.parse(word), Filters()))
                fixed = set(ids(store, scope, Query.parse(word, fixed=True), Filters()))
                coverage.append((word, len(words & fixed), len(fixed), len(words - fixed)))
    total = len(ranks)
    first = sum(1 for _, r in ranks if r == 1)
    top5 = sum(1 for _, r in ranks if r is not None and r <= 5)
    print(f"### Judged ranking: {total} queries, {len(found.files)} sessions\n")
    print(f"- right answer first: **{first} of {total} ({first / total:.0%})**")
    print(f"- right answer in the top 5: **{top5} of {total} ({top5 / total:.0%})**\n")
    kinds: dict[str, list[int | None]] = defaultdict(list)
    for item, rank in ranks:
        kinds[item.kind].append(rank)  # type: ignore[attr-defined]
    print("| kind | queries | first | top 5 |\n|---|---|---|---|")
    for kind, rs in kinds.items():
        print(f"| {kind} | {len(rs)} | {sum(r == 1 for r in rs)} | {sum(r is not None and r <= 5 for r in rs)} |")
    print("\n| query | kind | rank of the first right answer |\n|---|---|---|")
    for item, rank in ranks:
        print(f"| `{item.query}` | {item.kind} | {rank if rank is not None else 'not found'} |")  # type: ignore[attr-defined]
    print("\n| word | found by the word search, of those -F finds | found by the word only |\n|---|---|---|")
    for word, both, fixed, extra in coverage:
        print(f"| {word} | {both} of {fixed} | {extra} |")


if __name__ == "__main__":
    main()
