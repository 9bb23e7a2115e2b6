"""Benchmark `picompact search` on a generated tree of Pi sessions, against ripgrep over the same files.

    python bench/search_sessions.py [--sessions 2000] [--size 1GB] [--repeat 15] [--out DIR] > report.md

The tree (Pi's layout: <agent dir>/sessions/--project--/*.jsonl, 50 projects) is generated once into --out
(default bench/data/search-tree) from bench/gen_session.py's content: each session is a prefix, cut at a line, of a
generated session, sizes spread around the mean the total asks for. One session gets a line with a unique literal.

Measured, in this order, on the same machine in the same run:

1. the first search (the index built from nothing): wall time, session bytes per second, peak memory (RSS);
2. later searches (nothing changed), interleaved with `rg -F` for the same literal over the tree: medians, and
   the ratio picompact / ripgrep; picompact both as a command (a fresh process: start-up included, and
   `picompact --version` timed beside it: the start-up alone, which no search can go below) and as a library
   call (session walk, index check and query, in a warm process);
3. a search after appends to 20 sessions (the new lines only are indexed);
4. the tokenizers: unicode61 and trigram building an FTS5 table from the same documents (100 sessions), and
   unicode61 with SQLite's default pages of 4 KiB against the index's 16 KiB.

The markdown report goes to stdout, progress to stderr. ripgrep must be installed (`apt-get install ripgrep`).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from random import Random

from gen_session import generate, parse_size

ROOT = Path(__file__).resolve().parent.parent
UNIQUE = "ZEBRA-QUOKKA-7731"  # in one session only
COMMON = "timeout"  # in many
LAST_CPU = 0.0


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def build_tree(out: Path, sessions: int, total: int) -> int:
    """Generate the tree unless it is there already (a marker file records its parameters); its size in bytes."""
    marker = out / f".complete-{sessions}-{total}"
    agent = out / "agent" / "sessions"
    if marker.exists():
        return sum(p.stat().st_size for p in agent.rglob("*.jsonl"))
    shutil.rmtree(out, ignore_errors=True)
    rng = Random(7)
    mean = total // sessions
    written = 0
    started = time.perf_counter()
    for n in range(sessions):
        target = max(20_000, int(rng.uniform(0.2, 1.8) * mean))
        buf = io.BytesIO()
        generate(buf, target, seed=1000 + n, path=f"s{n}.jsonl")
        data = buf.getvalue()
        cut = data.rfind(b"\n", 0, target) + 1 or len(data)
        data = data[:cut]
        if n == sessions // 2:
            last = data[: len(data) - 1].rsplit(b"\n", 1)[-1]
            import orjson

            leaf = orjson.loads(last)["id"]
            line = {
                "type": "message",
                "id": "feed0001",
                "parentId": leaf,
                "timestamp": "2025-12-01T00:00:00.000Z",
                "message": {"role": "user", "content": f"the build id is {UNIQUE}, please keep it", "timestamp": 1},
            }
            data += orjson.dumps(line) + b"\n"
        folder = agent / f"--home-dev-src-project{n % 50}--"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"2025-09-01T00-00-00-000Z_{n:05d}.jsonl").write_bytes(data)
        written += len(data)
        if n % 200 == 199:
            log(f"  generated {n + 1} sessions, {written / 1e6:.0f} MB, {time.perf_counter() - started:.0f} s")
    marker.write_text("")
    return written


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int, int]:
    """(wall seconds, exit code, peak RSS in bytes) of one process (its CPU seconds in ``LAST_CPU``)."""
    global LAST_CPU
    started = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    LAST_CPU = usage.ru_utime + usage.ru_stime
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {proc.returncode}: {err[-500:]}")
    return elapsed, proc.returncode, usage.ru_maxrss * 1024


def library_search(literal: str) -> float:
    """One search as a library call in this (warm) process: walk, index check, query."""
    from pi_compact.archive import Filters, Query, search, session_files
    from pi_compact.archive.store import open_store

    started = time.perf_counter()
    found = session_files()
    with open_store() as store:
        scope = store.update(found.files)
        page = search(store, scope, Query.parse(literal, fixed=True), Filters(), limit=20)
    elapsed = time.perf_counter() - started
    assert page.hits, literal
    return elapsed


def tokenizers(tree: Path, count: int) -> list[tuple[str, int, float, float, int]]:
    """(tokenizer, page size, session MB/s, text MB/s, database bytes) building FTS5 from the same documents."""
    import orjson

    from pi_compact.archive.document import document
    from pi_compact.archive.store import PAGE_SIZE
    from pi_compact.session.entries import Entry

    files = sorted(tree.rglob("*.jsonl"))[:count]
    raw = 0
    texts: list[str] = []
    for path in files:
        data = path.read_bytes()
        raw += len(data)
        for i, line in enumerate(data.split(b"\n")[1:]):
            if line:
                texts.append(document(Entry(orjson.loads(line), i + 2, i))[0])
    chars = sum(len(t) for t in texts)
    out = []
    unicode61 = "unicode61 remove_diacritics 2"
    for tokenizer, page in ((unicode61, 4096), (unicode61, PAGE_SIZE), ("trigram", PAGE_SIZE)):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "t.db"
            conn = sqlite3.connect(db)
            conn.execute(f"pragma page_size = {page}")
            conn.execute(f"create virtual table t using fts5(text, tokenize='{tokenizer}')")
            started = time.perf_counter()
            with conn:
                conn.executemany("insert into t values (?)", ((t,) for t in texts))
            elapsed = time.perf_counter() - started
            conn.close()
            out.append((tokenizer, page, raw / elapsed / 1e6, chars / elapsed / 1e6, db.stat().st_size))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--size", default="1GB")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--out", default=str(ROOT / "bench" / "data" / "search-tree"))
    args = ap.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("ripgrep (rg) is not installed: apt-get install ripgrep")
    out = Path(args.out)
    log(f"tree: {args.sessions} sessions, {args.size} in {out}")
    total = build_tree(out, args.sessions, parse_size(args.size))
    tree = out / "agent" / "sessions"
    cache = Path(tempfile.mkdtemp(prefix="picompact-bench-cache-"))
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(out / "agent"), "XDG_CACHE_HOME": str(cache), "HOME": str(out)}
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    os.environ.update({k: env[k] for k in ("PI_CODING_AGENT_DIR", "XDG_CACHE_HOME", "HOME")})
    exe = str(Path(sys.executable).with_name("picompact"))
    subprocess.run(["cat", *map(str, tree.rglob("*.jsonl"))], stdout=subprocess.DEVNULL, check=True)  # page cache

    log("first search (index build)")
    load = os.getloadavg()[0]
    first, code, first_rss = timed([exe, "search", "-F", UNIQUE], env)
    first_cpu = LAST_CPU
    assert code == 0
    db = cache / "picompact" / "sessions.sqlite3"
    db_size = db.stat().st_size + (Path(f"{db}-wal").stat().st_size if Path(f"{db}-wal").exists() else 0)

    log(f"later searches and rg, interleaved ({args.repeat} rounds)")
    rows: dict[str, list[float]] = {"cli": [], "cli-common": [], "lib": [], "rg": [], "rg-common": [], "start": []}
    later_load = os.getloadavg()[0]
    rss: dict[str, int] = {"cli": 0, "rg": 0}
    for _ in range(args.repeat):
        t, _, m = timed([exe, "search", "-F", UNIQUE], env)
        rows["cli"].append(t)
        rss["cli"] = max(rss["cli"], m)
        t, _, m = timed([rg, "-F", "-l", UNIQUE, str(tree)], env)
        rows["rg"].append(t)
        rss["rg"] = max(rss["rg"], m)
        rows["lib"].append(library_search(UNIQUE))
        rows["cli-common"].append(timed([exe, "search", COMMON], env)[0])
        rows["rg-common"].append(timed([rg, "-F", "-l", COMMON, str(tree)], env)[0])
        rows["start"].append(timed([exe, "--version"], env)[0])
    later_load = max(later_load, os.getloadavg()[0])
    med = {k: statistics.median(v) for k, v in rows.items()}

    log("appends to 20 sessions, then a search")
    rng = Random(3)
    files = sorted(tree.rglob("*.jsonl"))
    appended = 0
    for path in rng.sample(files, 20):
        last = path.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        with path.open("ab") as fh:
            fh.write(last + b"\n")
        appended += len(last) + 1
    after_append, _, append_rss = timed([exe, "search", "-F", UNIQUE], env)

    log("tokenizers")
    toks = tokenizers(tree, 100)
    shutil.rmtree(cache, ignore_errors=True)

    mb = total / 1e6
    ms = {k: v * 1e3 for k, v in med.items()}
    table = [
        (
            "first search (index built from nothing)",
            f"{first:.2f} s",
            f"{mb / first:.0f} MB/s, {first_cpu:.1f} CPU s (load average {load:.1f} before it), "
            f"peak RSS {first_rss / 1e6:.0f} MB, index {db_size / 1e6:.0f} MB",
        ),
        (
            f"later search, `-F {UNIQUE}` (one session), command",
            f"{ms['cli']:.0f} ms",
            f"RSS {rss['cli'] / 1e6:.0f} MB; {ms['cli'] - ms['start']:.0f} ms above start-up "
            f"(load average up to {later_load:.1f})",
        ),
        ("start-up alone, `picompact --version`", f"{ms['start']:.0f} ms", "Python, typer, the command table"),
        ("later search, the same, library call", f"{ms['lib']:.1f} ms", "walk + index check + query"),
        (f"`rg -F -l {UNIQUE}` over the tree", f"{ms['rg']:.0f} ms", f"RSS {rss['rg'] / 1e6:.0f} MB"),
        (
            "ratio command / rg, the same literal",
            f"{ms['cli'] / ms['rg']:.2f} ×",
            f"library call: {ms['lib'] / ms['rg']:.2f} ×",
        ),
        (
            f"later search, `{COMMON}` (ranked, many sessions), command",
            f"{ms['cli-common']:.0f} ms",
            f"`rg -F -l {COMMON}`: {ms['rg-common']:.0f} ms ({ms['cli-common'] / ms['rg-common']:.2f} ×)",
        ),
        (
            f"search after appending {appended / 1e3:.0f} KB to 20 sessions",
            f"{after_append * 1e3:.0f} ms",
            f"RSS {append_rss / 1e6:.0f} MB",
        ),
    ]
    print(f"### `picompact search`: {args.sessions} sessions, {mb:,.0f} MB (Pi's layout, 50 projects)\n")
    print(
        f"Same machine, same run; {os.cpu_count()} cores; ripgrep {_rg_version(rg)}; SQLite {sqlite3.sqlite_version}."
    )
    print(f"Medians of {args.repeat} interleaved rounds; the files in the page cache for both.\n")
    print("| what | time | figure |")
    print("|---|---|---|")
    for row in table:
        print("| " + " | ".join(row) + " |")
    print()
    print(
        "| tokenizer (100 sessions, the same documents) | pages | build, session MB/s | build, text MB/s | database |"
    )
    print("|---|---|---|---|---|")
    for name, page, raw_rate, text_rate, size in toks:
        print(f"| `{name}` | {page // 1024} KiB | {raw_rate:.0f} | {text_rate:.0f} | {size / 1e6:.1f} MB |")
    return 0


def _rg_version(rg: str) -> str:
    return subprocess.run([rg, "--version"], capture_output=True, text=True).stdout.split()[1]


if __name__ == "__main__":
    raise SystemExit(main())
