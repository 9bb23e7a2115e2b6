"""picompact against a bare parse and Pi 1.6 on sessions of every shape (bench/gen_shapes.py), side by side.

    python bench/shapes.py [--size 100MB] [--shapes all|NAME,...] [--repeat 5] [--picompact CMD] [--no-append]
        [--baseline CMD] [--by wall|cpu]

For each shape the rows run interleaved (one run of each per round, ``--repeat`` rounds, the best time kept, the
highest peak RSS): the bare orjson parse, ``check --json`` and ``grep ENOENT --json`` cold (``PICOMPACT_NO_CACHE=1``),
Pi 1.6's own check (``pi_check.mjs``), ripgrep, and ``check --json`` on a tiny session (tests/fixtures/pi/
gen-small-101.jsonl, the start-up). Then, unless ``--no-append``, the re-check after appends with the cache on: on
a copy of the file, ``--repeat`` times a run on the file as it is (which keeps its index) and the timed
``check --json`` after 10 more lines. With ``--baseline CMD`` (another picompact, say an earlier checkout, run
from its own tree, or the current directory shadows it: ``"env -C /tmp/old PYTHONPATH=/tmp/old python -m
pi_compact"``) its cold ``check --json`` runs interleaved with the others, and a second table gives before -> after
per shape (its re-check after appends too, against this run's tiny check). A markdown table (worst shape first,
by the check's ratio to the parse) goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_shapes import NAMES, shape_files
from run import (
    CONTEXT_WINDOW,
    ISSUE_LITERAL,
    PARSE_SCRIPT,
    PI_CHECK,
    SMALL_SESSION,
    Result,
    Runner,
    fmt_s,
    measure_append,
    pi_peer,
    picompact_cmd,
)

ROOT = Path(__file__).resolve().parent.parent


BY_CPU = False  # ratios of CPU seconds (user + system, the best run) rather than wall time: ``--by cpu``


def ratio(a: Result, b: Result) -> float | None:
    x, y = (a.cpu, b.cpu) if BY_CPU else (a.seconds, b.seconds)
    if x is None or y is None or not y:
        return None
    return x / y


def fmt_r(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def shape_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options every harness over the shapes takes: which shapes, how big, how many rounds, which picompact."""
    ap.add_argument("--size", default="100MB")
    ap.add_argument("--shapes", default="all")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "data" / "shapes")
    ap.add_argument("--picompact", help="command to run picompact (default: the script beside this Python)")
    ap.add_argument("--timeout", type=float, default=600)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = shape_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    ap.add_argument(
        "--by", choices=("wall", "cpu"), default="wall", help="ratios of wall time (default) or of CPU time (load)"
    )
    ap.add_argument("--no-append", action="store_true", help="leave out the re-check after appends")
    ap.add_argument("--baseline", help="another picompact command whose cold check runs beside (before -> after)")
    args = ap.parse_args(argv)
    global BY_CPU
    BY_CPU = args.by == "cpu"
    names = list(NAMES) if args.shapes == "all" else [s.strip() for s in args.shapes.split(",") if s.strip()]
    pc = picompact_cmd(args.picompact)
    base = shlex.split(args.baseline) if args.baseline else None
    pi = pi_peer()
    rg = shutil.which("rg")
    rows: list[tuple[str, Path, dict[str, Result]]] = []
    with tempfile.TemporaryDirectory(prefix="picompact-shapes-") as home:
        env = {**os.environ, "HOME": home, "PI_CODING_AGENT_DIR": str(Path(home) / "agent"), "NO_COLOR": "1"}
        env.update(XDG_CACHE_HOME=str(Path(home) / "cache"), PICOMPACT_NO_CACHE="1")
        runner = Runner(args.repeat, args.timeout, env)
        cached_env = {k: v for k, v in env.items() if k != "PICOMPACT_NO_CACHE"}
        cached = Runner(args.repeat, args.timeout, cached_env)
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
            cmds["tiny"] = [*pc, "check", str(SMALL_SESSION), "--json", "--context-window", CONTEXT_WINDOW]
            if base:
                cmds["base"] = [*base, "check", f, "--json", "--context-window", CONTEXT_WINDOW]
            measured = dict(zip(cmds, runner.measure_interleaved(list(cmds.values())), strict=True))
            if not args.no_append:
                for key, cmd in (("recheck", pc), ("base_recheck", base)):
                    if cmd:
                        with tempfile.TemporaryDirectory(prefix="picompact-append-", dir=args.data_dir) as work:
                            measured[key] = measure_append(cached, cmd, path, Path(work), check_args=("--json",))
                        shutil.rmtree(Path(home) / "cache", ignore_errors=True)
            rows.append((name, path, measured))
            print(f"{name:>14}  " + "  ".join(f"{k} {v.cell()}" for k, v in measured.items()), file=sys.stderr)
        load_after = os.getloadavg()[0]

    def worst(row: tuple[str, Path, dict[str, Result]]) -> float:
        return ratio(row[2]["check"], row[2]["parse"]) or 0.0

    rows.sort(key=worst, reverse=True)
    print(
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {load_before:.1f} before, {load_after:.1f} after; best of {args.repeat}, interleaved; "
        f"ratios of {'CPU' if BY_CPU else 'wall'} time; "
        "page cache warm (the file was just written or read; dropping it needs root); bytecode cache "
        f"{'off (PYTHONDONTWRITEBYTECODE)' if os.environ.get('PYTHONDONTWRITEBYTECODE') else 'on'}\n"
    )
    print(
        "| shape | file | bare parse | `check --json` cold | / parse | / Pi | Pi 1.6 | `grep` cold | / parse | rg "
        "| peak RSS check, grep (file + MiB) | tiny check | re-check after appends | / tiny |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
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
            f"| {rss} | {fmt_s(m['tiny'].seconds)} | {fmt_s(m.get('recheck', empty).seconds)} "
            f"| {fmt_r(ratio(m.get('recheck', empty), m['tiny']))} |"
        )
    if base:
        print("\nBefore (``--baseline``) -> after, the same runs:\n")
        print("| shape | `check --json` cold | / parse | / Pi | peak RSS check (file + MiB) | re-check / tiny |")
        print("|---|---|---|---|---|---|")
        for name, path, m in rows:
            mib = path.stat().st_size / 1048576
            b, c, pi_r = m["base"], m["check"], m.get("pi", Result())

            def rss(r: Result, mib: float = mib) -> str:
                return "n/a" if r.rss_mib is None else f"{r.rss_mib - mib:+.0f}"

            print(
                f"| {name} | {fmt_s(b.seconds)} -> {fmt_s(c.seconds)} "
                f"| {fmt_r(ratio(b, m['parse']))} -> {fmt_r(ratio(c, m['parse']))} "
                f"| {fmt_r(ratio(b, pi_r))} -> {fmt_r(ratio(c, pi_r))} | {rss(b)} -> {rss(c)} "
                f"| {fmt_r(ratio(m.get('base_recheck', Result()), m['tiny']))} "
                f"-> {fmt_r(ratio(m.get('recheck', Result()), m['tiny']))} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
