"""What leaving nothing of a deleted session in the search index costs: SQLite's ``secure_delete`` (freed pages
zeroed) on the first build, and the FTS5 merge (``optimize``) after an update that deleted a session.

    python bench/secure_delete.py [--sessions 300] [--size 150MB] [--rounds 3] [--out DIR] > report.md

The tree is bench/search_sessions.py's (generated once into --out, default bench/data/secure-delete-tree). Each
measure runs in this process (a library call), on and off interleaved, the medians reported with the machine's
load. Also checked: after the purge, the deleted session's unique word is nowhere in the database file.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_session import parse_size
from search_sessions import build_tree, log

MARK = "quaggaxv9kt2wplm"  # one word: one term of the index
# FTS5 stores a term after the prefix it shares with the one before it: look for the end of the word only.
TAIL = MARK[-8:].encode()


def _db_files(cache: Path) -> list[Path]:
    return [p for p in cache.rglob("sessions.sqlite3*") if p.is_file()]


def _build(cache: Path, secure: bool) -> float:
    from pi_compact.archive import session_files, store

    shutil.rmtree(cache, ignore_errors=True)
    os.environ["XDG_CACHE_HOME"] = str(cache)
    store.SECURE_DELETE = secure
    started = time.perf_counter()
    with store.open_store() as opened:
        opened.run(lambda: opened.update(session_files().files))
    return time.perf_counter() - started


def _delete_one(cache: Path, built: Path, victim: Path, purge: bool) -> tuple[float, bool]:
    """Seconds of the update after ``victim`` is deleted, from a copy of the built index; whether MARK is left."""
    from pi_compact.archive import indexer, session_files, store

    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(built, cache)
    os.environ["XDG_CACHE_HOME"] = str(cache)
    store.SECURE_DELETE = True
    indexer.PURGE_DELETED = purge
    kept = victim.read_bytes()
    victim.unlink()
    try:
        started = time.perf_counter()
        with store.open_store() as opened:
            opened.run(lambda: opened.update(session_files().files))
        elapsed = time.perf_counter() - started
    finally:
        victim.write_bytes(kept)
    left = any(TAIL in p.read_bytes() for p in _db_files(cache))
    return elapsed, left


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--size", default="150MB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data" / "secure-delete-tree")
    args = parser.parse_args()
    total = build_tree(args.out, args.sessions, parse_size(args.size))
    os.environ.update({"PI_CODING_AGENT_DIR": str(args.out / "agent"), "HOME": str(args.out)})
    victim = sorted((args.out / "agent" / "sessions").rglob("*.jsonl"))[7]
    if MARK.encode() not in victim.read_bytes():
        with open(victim, "ab") as handle:  # a complete line Pi skips (no id): its text is indexed as the file's
            handle.write(b'{"type":"message","id":"feedbeef","parentId":null,"timestamp":"2025-12-01T00:00:00.000Z",')
            handle.write(b'"message":{"role":"user","content":"' + MARK.encode() + b'","timestamp":1}}\n')
    work = Path(tempfile.mkdtemp(prefix="secure-delete-"))
    builds: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for secure in (False, True):
            builds[secure].append(_build(work / "build", secure))
            log(f"  build secure_delete={secure}: {builds[secure][-1]:.1f} s")
    built = work / "built"
    _build(built, True)
    indexed = any(TAIL in p.read_bytes() for p in _db_files(built))
    deletes: dict[bool, list[float]] = {True: [], False: []}
    left: dict[bool, bool] = {}
    for _ in range(args.rounds):
        for purge in (False, True):
            seconds, left[purge] = _delete_one(work / "delete", built, victim, purge)
            deletes[purge].append(seconds)
            log(f"  update after a delete, purge={purge}: {seconds:.2f} s, word left: {left[purge]}")
    size = sum(p.stat().st_size for p in _db_files(built))
    shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    print(f"{args.sessions} sessions, {total / 1e6:.0f} MB; index {size / 1e6:.0f} MB; load {os.getloadavg()[0]:.2f}")
    print()
    print("| measure | off | on | on / off |")
    print("|---|---:|---:|---:|")
    off, on = med(builds[False]), med(builds[True])
    print(f"| first build, secure_delete | {off:.1f} s | {on:.1f} s | {on / off:.2f} |")
    off, on = med(deletes[False]), med(deletes[True])
    print(f"| update after one session deleted, FTS5 optimize | {off:.2f} s | {on:.2f} s | {on / off:.1f} |")
    print()
    print(
        f"the deleted session's unique word in the database file: before the delete {indexed}; after it, without "
        f"the purge {left[False]}, with it {left[True]}"
    )


if __name__ == "__main__":
    main()
