"""`picompact search --regex` with a pattern that holds no word to narrow on, against ripgrep over the same files.

    python bench/search_regex.py [--sessions 300] [--size 150MB] [--rounds 7] [--code DIR]... > report.md

The tree is bench/search_sessions.py's (Pi's layout, generated content), built once into --out. The index is
built first (not timed); then each pattern is searched in --rounds interleaved rounds: `picompact search --regex
PATTERN --json` (a fresh process, start-up included), then `rg -c PATTERN` over the sessions tree (both read from
the page cache; ripgrep scans the raw JSON lines, picompact the entries' text). Each --code DIR (a checkout) is
measured the same way with its own index, in the same rounds; the first is this checkout. The minimum of the
rounds is reported (the machine may be shared: the least disturbed run), with the load average before and after.
Python runs with its bytecode cache (``PYTHONDONTWRITEBYTECODE`` is dropped), as an installed picompact does.
ripgrep must be installed (`apt-get install ripgrep`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gen_session import parse_size
from search_sessions import build_tree

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = [r"[a-z]+[0-9]{7}q", r"\d{3}-\d{4}", r"[A-Z][a-z]+[0-9]+", r"\w+Error\b", r"(?:ab|cd)[0-9]{3}x"]


def run(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{argv}: exit {proc.returncode}: {proc.stderr.decode()[-400:]}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--size", default="150MB")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "bench" / "data" / "regex-tree"))
    ap.add_argument("--code", action="append", default=[], help="another checkout to measure beside this one")
    args = ap.parse_args()
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("ripgrep (rg) is not installed: apt-get install ripgrep")
    out = Path(args.out)
    size = build_tree(out, args.sessions, parse_size(args.size))
    sessions = out / "agent" / "sessions"
    codes = [str(ROOT), *args.code]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        envs = []
        for n, code in enumerate(codes):
            env = dict(os.environ, PYTHONPATH=code, PI_CODING_AGENT_DIR=str(out / "agent"))
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["XDG_CACHE_HOME"] = f"{tmp}/cache{n}"
            run([sys.executable, "-m", "pi_compact", "search", "--stats"], env)  # the index, built once
            envs.append(env)
        times: dict[tuple[str, int], list[float]] = {}
        for _ in range(args.rounds):
            for pattern in PATTERNS:
                for n, env in enumerate(envs):
                    argv = [sys.executable, "-m", "pi_compact", "search", "--regex", pattern, "--json"]
                    times.setdefault((pattern, n), []).append(run(argv, env))
                times.setdefault((pattern, -1), []).append(run([rg, "-c", pattern, str(sessions)], dict(os.environ)))
    load_after = os.getloadavg()[0]
    version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]
    print(f"### `search --regex` without a literal: {args.sessions} sessions, {size / 1e6:.0f} MB\n")
    print(
        f"{os.cpu_count()} cores, load average {load_before:.1f} before the run and {load_after:.1f} after; {version}; "
        f"minimum of {args.rounds} interleaved rounds.\n"
    )
    head = " | ".join(f"picompact ({'this checkout' if n == 0 else Path(c).name})" for n, c in enumerate(codes))
    print(f"| pattern | {head} | rg -c | ratio (this checkout / rg) |")
    print("|---|" + "---|" * len(codes) + "---|---|")
    worst = 0.0
    for pattern in PATTERNS:
        rg_time = min(times[(pattern, -1)])
        ours = [min(times[(pattern, n)]) for n in range(len(codes))]
        ratio = ours[0] / rg_time
        worst = max(worst, ratio)
        cells = " | ".join(f"{t:.2f} s" for t in ours)
        print(f"| `{pattern}` | {cells} | {rg_time:.2f} s | {ratio:.2f} × |")
    print(f"\nWorst ratio: **{worst:.2f} ×**")


if __name__ == "__main__":
    main()
