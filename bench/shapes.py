"""picompact against a bare parse and Pi 1.6 on sessions of every shape (bench/gen_shapes.py), side by side.

    python bench/shapes.py [--size 100MB] [--shapes all|NAME,...] [--repeat 5] [--picompact CMD]

For each shape the rows run interleaved (one run of each per round, ``--repeat`` rounds, the best time kept, the
highest peak RSS): the bare orjson parse, ``check --json`` and ``grep ENOENT --json`` cold (``PICOMPACT_NO_CACHE=1``),
Pi 1.6's own check (``pi_check.mjs``) and ripgrep. A markdown table (worst shape first, by the check's ratio to the
parse) goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_shapes import NAMES, shape_files
from run import CONTEXT_WINDOW, ISSUE_LITERAL, PARSE_SCRIPT, PI_CHECK, Result, Runner, fmt_s, pi_peer, picompact_cmd

ROOT = Path(__file__).resolve().parent.parent


def ratio(a: Result, b: Result) -> float | None:
    if a.seconds is None or b.seconds is None or not b.seconds:
        return None
    return a.seconds / b.seconds


def fmt_r(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="100MB")
    ap.add_argument("--shapes", default="all")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "data" / "shapes")
    ap.add_argument("--picompact", help="command to run picompact (default: the script beside this Python)")
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args(argv)
    names = list(NAMES) if args.shapes == "all" else [s.strip() for s in args.shapes.split(",") if s.strip()]
    pc = picompact_cmd(args.picompact)
    pi = pi_peer()
    rg = shutil.which("rg")
    rows: list[tuple[str, Path, dict[str, Result]]] = []
    with tempfile.TemporaryDirectory(prefix="picompact-shapes-") as home:
        env = {**os.environ, "HOME": home, "PI_CODING_AGENT_DIR": str(Path(home) / "agent"), "NO_COLOR": "1"}
        env.update(XDG_CACHE_HOME=str(Path(home) / "cache"), PICOMPACT_NO_CACHE="1")
        runner = Runner(args.repeat, args.timeout, env)
        load_before = os.getloadavg()[0]
        for name, path in shape_files(names, args.size, args.data_dir, args.seed):
            f = str(path)
            cmds = {
                "parse": [sys.executable, "-c", PARSE_SCRIPT, f],
                "check": [*pc, "check", f, "--json", "--context-window", CONTEXT_WINDOW],
                "grep": [*pc, "grep", ISSUE_LITERAL, f, "--json"],
            }
            if pi:
                cmds["pi"] = [pi[0], str(PI_CHECK), pi[1], f]
            if rg:
                cmds["rg"] = [rg, ISSUE_LITERAL, f]
            measured = dict(zip(cmds, runner.measure_interleaved(list(cmds.values())), strict=True))
            rows.append((name, path, measured))
            print(f"{name:>14}  " + "  ".join(f"{k} {v.cell()}" for k, v in measured.items()), file=sys.stderr)
        load_after = os.getloadavg()[0]

    def worst(row: tuple[str, Path, dict[str, Result]]) -> float:
        return ratio(row[2]["check"], row[2]["parse"]) or 0.0

    rows.sort(key=worst, reverse=True)
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after; best of {args.repeat}, interleaved; "
        "page cache warm (the file was just written or read; dropping it needs root)\n"
    )
    print(
        "| shape | file | bare parse | `check --json` cold | / parse | / Pi | Pi 1.6 | `grep` cold | / parse | rg "
        "| peak RSS check, grep (file + MiB) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, path, m in rows:
        mib = path.stat().st_size / 1048576
        empty = Result()
        pi_r, rg_r = m.get("pi", empty), m.get("rg", empty)
        rss = "/".join(
            "n/a" if m[k].rss_mib is None else f"{m[k].rss_mib:.0f} ({m[k].rss_mib - mib:+.0f})"
            for k in ("check", "grep")
        )
        print(
            f"| {name} | {mib:.0f} MiB | {fmt_s(m['parse'].seconds)} | {m['check'].cell().split(' ·')[0]} "
            f"| {fmt_r(ratio(m['check'], m['parse']))} | {fmt_r(ratio(m['check'], pi_r))} | {fmt_s(pi_r.seconds)} "
            f"| {m['grep'].cell().split(' ·')[0]} | {fmt_r(ratio(m['grep'], m['parse']))} | {fmt_s(rg_r.seconds)} "
            f"| {rss} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
