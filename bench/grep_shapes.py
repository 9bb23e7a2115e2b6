"""`picompact grep` on sessions of every shape (bench/gen_shapes.py), beside a bare parse and ripgrep.

    python bench/grep_shapes.py [--size 100MB] [--shapes all|NAME,...] [--repeat 5] [--picompact CMD] > report.md

For each shape, in rounds (one run of each command per round, ``--repeat`` rounds, the best time kept, the highest
peak RSS): the bare orjson parse of the file; ``grep ENOENT FILE --json`` cold (``PICOMPACT_NO_CACHE=1``: no index
read or written) and warm (the file's index kept from a run before the rounds); ``grep ENOENT --json`` and
``check`` on a tiny session (start-up: what a grep costs before it reads a file); ``rg ENOENT FILE``. ENOENT is
absent from the generated sessions (the whole file is searched) and present in the real messages repeated. The
goals the table states: cold grep <= 1.5x the parse; warm grep above start-up <= 3x ripgrep; grep's start-up <=
1.25x check's. A markdown table goes to stdout (worst shape first, by cold grep / parse), progress to stderr. Python
runs with its bytecode cache (``PYTHONDONTWRITEBYTECODE`` dropped), as an installed picompact does.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_shapes import NAMES, shape_files
from run import ISSUE_LITERAL, PARSE_SCRIPT, SMALL_SESSION, Result, Runner, fmt_s, picompact_cmd
from shapes import shape_arguments

ROOT = Path(__file__).resolve().parent.parent


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or not b else f"{a / b:.2f}x"


def _cell(res: Result) -> str:
    if not res.ok:
        return res.cell()
    cpu = f" (cpu {fmt_s(res.cpu)})" if res.cpu is not None else ""
    return f"{fmt_s(res.seconds)}{cpu}"


def main(argv: list[str] | None = None) -> int:
    ap = shape_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    args = ap.parse_args(argv)
    names = list(NAMES) if args.shapes == "all" else [s.strip() for s in args.shapes.split(",") if s.strip()]
    pc = picompact_cmd(args.picompact)
    rg = shutil.which("rg")
    if rg is None:
        raise SystemExit("ripgrep (rg) is not installed: apt-get install ripgrep")
    rows: list[tuple[str, dict[str, Result]]] = []
    with tempfile.TemporaryDirectory(prefix="picompact-grep-shapes-") as home:
        env = {**os.environ, "HOME": home, "PI_CODING_AGENT_DIR": str(Path(home) / "agent"), "NO_COLOR": "1"}
        env["XDG_CACHE_HOME"] = str(Path(home) / "cache")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.pop("PICOMPACT_NO_CACHE", None)
        runner = Runner(args.repeat, args.timeout, env)
        cold = ["env", "PICOMPACT_NO_CACHE=1"]
        warm = ["env", "PICOMPACT_NO_CACHE="]  # the same exec in front, the cache on
        load_before = os.getloadavg()[0]
        for name, path in shape_files(names, args.size, args.data_dir, args.seed):
            f = str(path)
            grep = [*pc, "grep", ISSUE_LITERAL, f, "--json"]
            subprocess.run([*warm, *grep], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            cmds = {
                "parse": [sys.executable, "-c", PARSE_SCRIPT, f],
                "cold": [*cold, *grep],
                "warm": [*warm, *grep],
                "tiny": [*cold, *pc, "grep", ISSUE_LITERAL, str(SMALL_SESSION), "--json"],
                "check": [*cold, *pc, "check", str(SMALL_SESSION)],
                "rg": [rg, ISSUE_LITERAL, f],
            }
            measured = dict(zip(cmds, runner.measure_interleaved(list(cmds.values())), strict=True))
            rows.append((name, measured))
            print(f"{name:>14}  " + "  ".join(f"{k} {v.cell()}" for k, v in measured.items()), file=sys.stderr)
        load_after = os.getloadavg()[0]

    def cold_ratio(row: tuple[str, dict[str, Result]]) -> float:
        m = row[1]
        return (m["cold"].seconds or 0.0) / (m["parse"].seconds or 1.0)

    rows.sort(key=cold_ratio, reverse=True)
    # Start-up: the best of every round of every shape (a busy machine inflates some rounds' tiny runs; the least
    # disturbed one is what a grep costs before it reads a file).
    tiny_best = min((m["tiny"].seconds for _, m in rows if m["tiny"].seconds is not None), default=None)
    check_best = min((m["check"].seconds for _, m in rows if m["check"].seconds is not None), default=None)
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after; best of {args.repeat}, interleaved; "
        f"sessions of {args.size}, `grep {ISSUE_LITERAL} --json`.\n"
    )
    print(
        "| shape | bare parse | grep cold | cold / parse (<= 1.5x) | grep warm | warm above start-up | rg "
        "| above start-up / rg (<= 3x) | peak RSS, cold |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, m in rows:
        parse, cold_r, warm_r, rg_r = (m[k] for k in ("parse", "cold", "warm", "rg"))
        above = warm_r.seconds - tiny_best if warm_r.seconds is not None and tiny_best is not None else None
        rss = f"{cold_r.rss_mib:.0f} MiB" if cold_r.rss_mib is not None else "n/a"
        print(
            f"| {name} | {_cell(parse)} | {_cell(cold_r)} | {_ratio(cold_r.seconds, parse.seconds)} "
            f"| {_cell(warm_r)} | {fmt_s(above) if above is not None else 'n/a'} | {_cell(rg_r)} "
            f"| {_ratio(above, rg_r.seconds)} | {rss} |"
        )
    print(
        f"\nStart-up (best of all rounds): grep {ISSUE_LITERAL} --json on a tiny session {fmt_s(tiny_best)}, check "
        f"{fmt_s(check_best)}: {_ratio(tiny_best, check_best)} (<= 1.25x)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
