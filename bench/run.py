"""Benchmark picompact on generated sessions: wall time (best of N) and peak memory per command.

    python bench/run.py [--sizes 10MB,100MB] [--repeat 3] [--only check,grep] > results.md

Missing session files are generated first (bench/gen_session.py, same seed every time). Progress and a plain
table go to stderr; the markdown report for bench/RESULTS.md goes to stdout. A command that exits with 2 or
more (for instance a command that does not exist yet) shows as "n/a (exit N)"; exit 1 is a normal answer
(check: compaction needed; grep: no match). Peak memory comes from GNU `/usr/bin/time` when present, else
from getrusage(RUSAGE_CHILDREN) in a fresh wrapper process per run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from gen_session import COMMON_REGEX, RARE_LITERALS, generate_file, parse_size

ROOT = Path(__file__).resolve().parent.parent
SMALL_SESSION = ROOT / "tests" / "fixtures" / "pi" / "gen-small-101.jsonl"
NEEDLE = RARE_LITERALS["tool_output"]
GROUPS = ("parse", "check", "pi", "compact", "grep", "stream", "append", "warm", "list", "show", "startup")
WARM = "(warm: the file's index kept)"
COLD = "(cold: no index)"
CONTEXT_WINDOW = "200000"
ISSUE_LITERAL = "ENOENT"  # absent from generated sessions: the whole file is searched
NONLITERAL = r"[a-z]+\d{7}q"  # a pattern with no literal to prefilter on (no match either)
FIRST_LINE_PAGES = ("-m 100000", "-m 100000 --max-chars 1000000000")
HUGE_PAGE = "-m 10000000 --max-chars 1000000000"
APPENDED_LINES = 10
PI_CHECK = Path(__file__).resolve().parent / "pi_check.mjs"

PARSE_SCRIPT = (
    "import sys, orjson\n"
    "data = open(sys.argv[1], 'rb').read()\n"
    "for line in data.split(b'\\n'):\n"
    "    if line:\n"
    "        orjson.loads(line)\n"
)
# Fallback when GNU time is missing: run the command, report its wall time and its peak RSS (KiB).
RUSAGE_WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "try:\n"
    "    rc = subprocess.call(sys.argv[2:])\n"
    "except OSError as exc:\n"
    "    print(f'cannot run {sys.argv[2]}: {exc}', file=sys.stderr)\n"
    "    sys.exit(127)\n"
    "rc = 128 - rc if rc < 0 else rc\n"
    "dt = time.perf_counter() - t\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "cpu = usage.ru_utime + usage.ru_stime\n"
    "open(sys.argv[1], 'w').write(f'{dt} {usage.ru_maxrss} {cpu}')\n"
    "sys.exit(rc)\n"
)


@dataclass
class Result:
    """Best time and peak memory of one command over its runs, or why it could not run."""

    seconds: float | None = None
    rss_mib: float | None = None
    cpu: float | None = None  # user + system CPU seconds, the best run (less disturbed by other processes)
    exit_code: int | None = None
    error: str = ""
    runs: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.seconds is not None

    def add(self, run: Result) -> None:
        """Take one more measured run of the same command: its time, the best CPU, the highest memory."""
        self.runs.append(run.seconds or 0.0)
        if run.cpu is not None:
            self.cpu = min(self.cpu if self.cpu is not None else run.cpu, run.cpu)
        self.exit_code = run.exit_code
        self.rss_mib = max(self.rss_mib or 0.0, run.rss_mib or 0.0)

    def cell(self) -> str:
        if not self.ok:
            return f"n/a (exit {self.exit_code})" if self.exit_code is not None else f"n/a ({self.error})"
        cpu = f" (cpu {fmt_s(self.cpu)})" if self.cpu is not None else ""
        rss = f" · {self.rss_mib:.0f} MiB" if self.rss_mib is not None else ""
        return f"{fmt_s(self.seconds)}{cpu}{rss}"


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


class Runner:
    """Runs one command several times with stdout drained into a pipe (never /dev/null: some tools stop
    early when they see it) and measures it with GNU time or the rusage wrapper."""

    def __init__(self, repeat: int, timeout: float, env: dict[str, str]) -> None:
        self.repeat = repeat
        self.timeout = timeout
        self.env = env
        gnu = shutil.which("time", path="/usr/bin")
        self.gnu_time = gnu if gnu and self._is_gnu(gnu) else None

    @staticmethod
    def _is_gnu(path: str) -> bool:
        try:
            out = subprocess.run([path, "-f", "%M", "true"], capture_output=True, text=True, timeout=10)
        except OSError:
            return False
        return out.returncode == 0 and out.stderr.strip().isdigit()

    def measure(self, cmd: list[str], repeat: int | None = None, timeout: float | None = None) -> Result:
        res = Result()
        for _ in range(repeat or self.repeat):
            seconds, kib, cpu, code, err = self._once(cmd, timeout or self.timeout)
            if code is None or code >= 2 or code < 0:
                return Result(exit_code=code, error=err)
            res.runs.append(seconds)
            if cpu is not None:
                res.cpu = min(res.cpu if res.cpu is not None else cpu, cpu)
            res.exit_code = code
            if kib is not None:
                res.rss_mib = max(res.rss_mib or 0.0, kib / 1024)
        res.seconds = min(res.runs)
        return res

    def measure_interleaved(self, cmds: list[list[str]]) -> list[Result]:
        """Each command once per round, ``repeat`` rounds: a burst of load on a shared machine then slows every
        command alike instead of one row. A command that fails is left out of the later rounds."""
        results = [Result() for _ in cmds]
        failed: list[Result | None] = [None] * len(cmds)
        for _ in range(self.repeat):
            for i, cmd in enumerate(cmds):
                if failed[i] is not None:
                    continue
                once = self.measure(cmd, repeat=1)
                if not once.ok:
                    failed[i] = once
                    continue
                results[i].add(once)
        for i, res in enumerate(results):
            res.seconds = min(res.runs) if res.runs and failed[i] is None else None
        return [failed[i] or res for i, res in enumerate(results)]

    def first_line(self, cmd: list[str]) -> Result:
        """Seconds until the command's first line of output (the best of ``repeat`` runs); the command is stopped
        there. Peak memory is not measured (the command does not finish)."""
        res = Result()
        for _ in range(self.repeat):
            t0 = time.perf_counter()
            try:
                proc = subprocess.Popen(
                    cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env, start_new_session=True
                )
            except OSError as exc:
                return Result(error=str(exc))
            assert proc.stdout is not None
            timer = threading.Timer(self.timeout, os.killpg, (proc.pid, signal.SIGKILL))
            timer.start()
            try:
                line = proc.stdout.readline()
                seconds = time.perf_counter() - t0
            finally:
                timer.cancel()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                proc.stdout.close()
            if not line:
                return Result(exit_code=proc.returncode, error="no output")
            res.runs.append(seconds)
        res.seconds = min(res.runs)
        res.exit_code = 0
        return res

    def _once(self, cmd: list[str], timeout: float) -> tuple[float, float | None, float | None, int | None, str]:
        with tempfile.NamedTemporaryFile("r", suffix=".rss") as stat, tempfile.TemporaryFile() as errf:
            if self.gnu_time:
                argv = [self.gnu_time, "-f", "%M %U %S", "-o", stat.name, *cmd]
            else:
                argv = [sys.executable, "-c", RUSAGE_WRAPPER, stat.name, *cmd]
            t0 = time.perf_counter()
            try:
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errf, env=self.env, start_new_session=True)
            except OSError as exc:
                return 0.0, None, None, None, str(exc)
            drain = threading.Thread(target=_discard, args=(proc.stdout,), daemon=True)
            drain.start()
            # A blocking wait returns the moment the command ends; wait(timeout=...) polls with sleeps of up to
            # 50 ms, which rounded every time up to the next poll. The timeout is a timer that kills the group.
            expired = threading.Event()

            def kill() -> None:
                expired.set()
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the measured command too, not only its wrapper

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                code = proc.wait()
            except KeyboardInterrupt:
                os.killpg(proc.pid, signal.SIGKILL)
                raise
            finally:
                timer.cancel()
            wall = time.perf_counter() - t0
            if expired.is_set():
                drain.join()
                return 0.0, None, None, None, f"timeout after {timeout:.0f}s"
            drain.join()
            errf.seek(0)
            err = _error_line(errf.read().decode(errors="replace"))
            text = Path(stat.name).read_text().split()
        kib: float | None = None
        cpu: float | None = None
        try:
            if self.gnu_time and len(text) >= 3:
                kib, cpu = float(text[-3]), float(text[-2]) + float(text[-1])
            elif not self.gnu_time and len(text) == 3:
                wall, kib, cpu = float(text[0]), float(text[1]), float(text[2])
        except ValueError:
            pass
        return wall, kib, cpu, code, err[:200]


def _error_line(stderr: str) -> str:
    """The most telling line of a failed command's stderr (typer draws boxes around its errors)."""
    lines = [ln.strip(" │╭╮╰╯─\t") for ln in stderr.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith(("Command exited", "Command terminated"))]
    return next((ln for ln in lines if "rror" in ln), lines[-1] if lines else "")


def _discard(stream: object) -> None:
    read = stream.read  # type: ignore[attr-defined]
    while read(1 << 20):
        pass


def picompact_cmd(spec: str | None) -> list[str]:
    """The installed console script beside this Python, else `python -m pi_compact`."""
    if spec:
        return shlex.split(spec)
    script = Path(sys.executable).parent / "picompact"
    return [str(script)] if script.exists() else [sys.executable, "-m", "pi_compact"]


def middle_entry_id(path: Path) -> str:
    """The id of the first message entry that starts after the middle byte of the file."""
    with open(path, "rb") as fh:
        fh.seek(path.stat().st_size // 2)
        fh.readline()
        for line in fh:
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(entry, dict) and entry.get("type") == "message" and isinstance(entry.get("id"), str):
                return entry["id"]
    raise SystemExit(f"no message entry after the middle of {path}")


def pi_peer() -> tuple[str, str] | None:
    """(node, Pi 1.6 package dir) of the tests' Pi install (``make pi``: tools/pi/node_modules)."""
    home = Path(__file__).resolve().parent.parent / "tools" / "pi" / "node_modules"
    node = home / ".bin" / "node"
    pkg = home / "@earendil-works" / "pi-coding-agent"
    if node.exists() and (pkg / "package.json").exists() and PI_CHECK.exists():
        return str(node), str(pkg)
    return None


def append_turns(path: Path, count: int, serial: int) -> None:
    """Append ``count`` user messages that continue the file's leaf, as Pi appends them."""
    with open(path, "rb") as fh:
        fh.seek(max(path.stat().st_size - (1 << 20), 0))
        last = [ln for ln in fh.read().split(b"\n") if ln.strip()][-1]
    parent = orjson.loads(last)["id"]
    with open(path, "ab") as fh:
        for i in range(count):
            entry_id = f"{0xB0000000 + serial * 1000 + i:08x}"
            message = {"role": "user", "content": f"appended turn {serial}.{i}", "timestamp": 1767225600000 + i}
            entry = {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": message,
            }
            fh.write(orjson.dumps(entry) + b"\n")
            parent = entry_id


def measure_append(
    runner: Runner, pc: list[str], path: Path, work: Path, grep: bool = False, check_args: tuple[str, ...] = ()
) -> Result:
    """``check`` (with ``check_args``; or ``grep ENOENT --json``) on a copy of the file after each of ``repeat``
    appends of a few lines, each following a run on the file as it was (so an index of the earlier state could
    exist): the best time and the peak memory."""
    copy = work / path.name
    shutil.copyfile(path, copy)
    cmd = [*pc, "check", str(copy), *check_args, "--context-window", CONTEXT_WINDOW]
    if grep:
        cmd = [*pc, "grep", ISSUE_LITERAL, str(copy), "--json"]
    res = Result()
    for serial in range(runner.repeat):
        warm = runner.measure(cmd, repeat=1)
        if not warm.ok:
            return warm
        append_turns(copy, APPENDED_LINES, serial)
        after = runner.measure(cmd, repeat=1)
        if not after.ok:
            return after
        res.add(after)
    res.seconds = min(res.runs)
    copy.unlink()
    return res


def measure_first_run(runner: Runner, pc: list[str], path: Path, cache: Path) -> Result:
    """``check`` with its cache on and empty: a cold run that also writes the index of the file."""
    cmd = [*pc, "check", str(path), "--context-window", CONTEXT_WINDOW]
    res = Result()
    for _ in range(runner.repeat):
        shutil.rmtree(cache, ignore_errors=True)
        once = runner.measure(cmd, repeat=1)
        if not once.ok:
            return once
        res.add(once)
    res.seconds = min(res.runs)
    shutil.rmtree(cache, ignore_errors=True)
    return res


def measure_warm(runner: Runner, cmd: list[str], first_line: bool = False) -> Result:
    """``cmd`` with the cache on, after one run that wrote the index of the file (not counted)."""
    primer = runner.measure(cmd, repeat=1)
    if not primer.ok:
        return primer
    return runner.first_line(cmd) if first_line else runner.measure(cmd)


def session_file(data_dir: Path, label: str, seed: int, generate: bool) -> Path:
    path = data_dir / f"session-{label.lower()}.jsonl"
    if not path.exists():
        if not generate:
            raise SystemExit(f"missing {path}; run: python bench/gen_session.py --size {label} --out {path}")
        print(f"generating {path} ...", file=sys.stderr)
        generate_file(path, parse_size(label), seed)
    return path


def file_benchmarks(
    pc: list[str], path: Path, groups: set[str], rg: str | None, pi: tuple[str, str] | None
) -> list[tuple[str, list[str]]]:
    """(row label, argv) for every benchmark that runs on one session file, in table order."""
    f = str(path)
    py = sys.executable
    rows: list[tuple[str, list[str]]] = []
    if "parse" in groups:
        rows.append(("bare orjson parse", [py, "-c", PARSE_SCRIPT, f]))
    if "check" in groups or "pi" in groups or "append" in groups:
        rows.append((f"check {COLD}", [*pc, "check", f, "--context-window", CONTEXT_WINDOW]))
    if "pi" in groups and pi:
        rows.append(("Pi 1.6 check (node: open, branch, prepareCompaction)", [pi[0], str(PI_CHECK), pi[1], f]))
    if "check" in groups or "compact" in groups or "list" in groups or "show" in groups:
        rows.append((f"check --json {COLD}", [*pc, "check", f, "--context-window", CONTEXT_WINDOW, "--json"]))
    if "compact" in groups:
        rows.append(
            (
                f"compact --mode verbatim --dry-run {COLD}",
                [*pc, "compact", f, "--mode", "verbatim", "--dry-run", "--context-window", CONTEXT_WINDOW],
            )
        )
    if "grep" in groups:
        rows.append((f"grep {ISSUE_LITERAL} --json {COLD}", [*pc, "grep", ISSUE_LITERAL, f, "--json"]))
        if rg:
            rows.append((f"rg {ISSUE_LITERAL} (raw JSONL)", [rg, ISSUE_LITERAL, f]))
        rows.append((f"grep '{NONLITERAL}' {COLD}", [*pc, "grep", NONLITERAL, f]))
        if rg:
            rows.append((f"rg '{NONLITERAL}' (raw JSONL)", [rg, NONLITERAL, f]))
        rows.append((f"grep -F {NEEDLE} {COLD}", [*pc, "grep", NEEDLE, f, "-F"]))
        if rg:
            rows.append((f"rg -F {NEEDLE} (raw JSONL)", [rg, "-F", NEEDLE, f]))
        rows.append((f"grep '{COMMON_REGEX}' {COLD}", [*pc, "grep", COMMON_REGEX, f]))
        if rg:
            rows.append((f"rg '{COMMON_REGEX}' (raw JSONL)", [rg, COMMON_REGEX, f]))
    if "list" in groups:
        rows.append((f"list {COLD}", [*pc, "list", f]))
    if "show" in groups:
        rows.append((f"show (id from the middle) {COLD}", [*pc, "show", f, middle_entry_id(path)]))
    return rows


def ratio_row(name: str, a: Result | None, b: Result | None, limit: float) -> tuple[str, str, str]:
    """The wall-time ratio (the goal's measure) and, where both have one, the CPU-time ratio beside it."""
    if not a or not b or not a.ok or not b.ok or not b.seconds:
        return name, "n/a", "n/a"
    r = a.seconds / b.seconds  # type: ignore[operator]
    cpu = f"; cpu {a.cpu / b.cpu:.2f}x" if a.cpu is not None and b.cpu else ""
    return name, f"{r:.2f}x ({fmt_s(a.seconds)} vs {fmt_s(b.seconds)}){cpu}", "ok" if r <= limit else "over"


def limit_row(name: str, res: Result | None, limit: float) -> tuple[str, str, str]:
    if not res or not res.ok:
        return name, "n/a", "n/a"
    return name, fmt_s(res.seconds), "ok" if (res.seconds or 0.0) <= limit else "over"


def targets(
    sizes: list[str], paths: dict[str, Path], results: dict[str, dict[str, Result]], startup: dict[str, Result]
) -> list[tuple[str, str, str]]:
    """The goals, each as a ratio to its peer (or a bound) and a verdict. A cold row is the first run on a file
    (no index: every file the first time, every file in CI, every file after a rewrite); a warm row reuses the
    index an earlier run left."""
    rows: list[tuple[str, str, str]] = []
    for label in sizes:
        r = results[label]
        check = r.get(f"check {COLD}")
        check_json = r.get(f"check --json {COLD}")
        bare = r.get("bare orjson parse")
        pi_name = next((name for name in r if name.startswith("Pi 1.6 check")), None)
        pi = r.get(pi_name) if pi_name else None
        if pi_name:
            rows.append(ratio_row(f"{label}: check --json {COLD} <= 0.4x Pi 1.6's own code", check_json, pi, 0.4))
            rows.append(ratio_row(f"{label}: check {COLD} <= 0.4x Pi 1.6's own code", check, pi, 0.4))
        if bare:
            rows.append(ratio_row(f"{label}: check --json {COLD} <= 1.25x bare parse", check_json, bare, 1.25))
            rows.append(ratio_row(f"{label}: check {COLD} <= 1.25x bare parse", check, bare, 1.25))
            grep_cold = r.get(f"grep {ISSUE_LITERAL} --json {COLD}")
            rows.append(
                ratio_row(f"{label}: grep {ISSUE_LITERAL} --json {COLD} <= 1.5x bare parse", grep_cold, bare, 1.5)
            )
        rg_literal = r.get(f"rg {ISSUE_LITERAL} (raw JSONL)")
        name = f"grep {ISSUE_LITERAL} --json {WARM}"
        if name in r:
            rows.append(ratio_row(f"{label}: {name} <= 5x ripgrep", r.get(name), rg_literal, 5.0))
        for cold_name, raw in ((f"grep '{NONLITERAL}' {COLD}", f"rg '{NONLITERAL}' (raw JSONL)"),):
            for name in (cold_name, cold_name.replace(COLD, WARM)):
                if name in r:
                    rows.append(ratio_row(f"{label}: {name} <= 10x ripgrep", r.get(name), r.get(raw), 10.0))
        for page in FIRST_LINE_PAGES:
            for name in (f"first line of grep . {page} {COLD}", f"first line of grep . {page} {WARM}"):
                if name in r:
                    rows.append(limit_row(f"{label}: {name} <= 0.5 s", r.get(name), 0.5))
        file_mib = paths[label].stat().st_size / 2**20
        limit = file_mib + 60
        measured = [
            (res.rss_mib, name)
            for name, res in r.items()
            if res.ok and res.rss_mib is not None and name.startswith(("check", "grep"))
        ]
        if measured:
            peak, name = max(measured)
            rows.append(
                (
                    f"{label}: peak memory of check and grep <= file + 60 MiB ({limit:.0f} MiB)",
                    f"{peak:.0f} MiB ({name})",
                    "ok" if peak <= limit else "over",
                )
            )
        first = "check, first run (writes the index)"
        if first in r:
            rows.append(ratio_row(f"{label}: {first} <= 1.1x a cold check", r.get(first), check, 1.1))
        appended = f"check after {APPENDED_LINES} appended lines"
        if appended in r and startup:
            tiny = startup.get("picompact check (small session)")
            rows.append(ratio_row(f"{label}: {appended} <= 1.5x check on a small session", r.get(appended), tiny, 1.5))
        compact = f"compact --mode verbatim --dry-run {COLD}"
        if compact in r:
            rows.append(ratio_row(f"{label}: compact --dry-run <= 2x check --json", r.get(compact), check_json, 2.0))
        for name in (f"list {COLD}", f"show (id from the middle) {COLD}"):
            if name in r:
                rows.append(ratio_row(f"{label}: {name} <= check", r.get(name), check, 1.0))
    if startup:
        rows.append(
            ratio_row(
                "startup: check on a small session <= 1.25x `python -c 'import typer, rich'`",
                startup.get("picompact check (small session)"),
                startup.get("python -c 'import typer, rich'"),
                1.25,
            )
        )
    return rows


def cpu_name() -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    cpu = cpu_name()
    mem = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kib / 2**20:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{cpu}, {os.cpu_count()} cores{mem}; {platform.system()} {platform.release()}"


def versions(pc: list[str], rg: str | None, env: dict[str, str]) -> str:
    parts = [f"Python {platform.python_version()}", f"orjson {orjson.__version__}"]
    for name, argv in (("picompact", [*pc, "--version"]), ("ripgrep", [rg, "--version"] if rg else None)):
        if argv is None:
            parts.append(f"{name} not installed")
            continue
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
            first = (out.stdout or out.stderr).strip().splitlines()
            parts.append(first[0] if out.returncode == 0 and first else f"{name} (version unknown)")
        except OSError:
            parts.append(f"{name} not runnable")
    return ", ".join(parts)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def plain_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(header, *rows, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths))] + [fmt.format(*r) for r in rows])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10MB,100MB", help="comma-separated sizes (default %(default)s)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per command; the best time counts (default 3)")
    ap.add_argument("--only", default=",".join(GROUPS), help=f"comma-separated subset of {','.join(GROUPS)}")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "data")
    ap.add_argument("--seed", type=int, default=1, help="seed for files that must be generated (default 1)")
    ap.add_argument("--no-generate", action="store_true", help="fail instead of generating missing files")
    ap.add_argument("--picompact", help="command to run picompact (default: the script beside this Python)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds before one run is killed")
    args = ap.parse_args(argv)

    groups = {g.strip() for g in args.only.split(",") if g.strip()}
    unknown = groups - set(GROUPS)
    if unknown:
        ap.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}; choose from {', '.join(GROUPS)}")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    sizes = [s.strip().upper() for s in args.sizes.split(",") if s.strip()]
    for s in sizes:
        try:
            parse_size(s)
        except ValueError as exc:
            ap.error(str(exc))

    pc = picompact_cmd(args.picompact)
    rg = shutil.which("rg") if "grep" in groups else None
    if "grep" in groups and not rg:
        print("ripgrep not found (apt-get install -y ripgrep); its rows are left out", file=sys.stderr)
    pi = pi_peer() if "pi" in groups else None
    if "pi" in groups and not pi:
        print("Pi 1.6 (the oracle install) not found; its rows are left out", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="picompact-bench-") as home:
        # A clean home: no user settings or models file changes the answers being timed.
        env = {**os.environ, "HOME": home, "PI_CODING_AGENT_DIR": str(Path(home) / "agent"), "NO_COLOR": "1"}
        # Every row is a cold run (check's index of the file off) except the two that measure the index.
        cache = Path(home) / "cache"
        env.update(XDG_CACHE_HOME=str(cache), PICOMPACT_NO_CACHE="1")
        runner = Runner(args.repeat, args.timeout, env)
        cached = Runner(args.repeat, args.timeout, {k: v for k, v in env.items() if k != "PICOMPACT_NO_CACHE"})
        if not runner.gnu_time:
            print("GNU /usr/bin/time not found: measuring memory with getrusage", file=sys.stderr)

        load_before = os.getloadavg()[0]
        paths = {label: session_file(args.data_dir, label, args.seed, not args.no_generate) for label in sizes}
        results: dict[str, dict[str, Result]] = {}
        row_names: list[str] = []

        def record(label: str, name: str, res: Result) -> None:
            results[label][name] = res
            if name not in row_names:
                row_names.append(name)
            note = f"  [{res.error}]" if not res.ok and res.error else ""
            print(f"{label:>6}  {name:<40} {res.cell()}{note}", file=sys.stderr)

        for label in sizes:
            results[label] = {}
            f = str(paths[label])
            benchmarks = file_benchmarks(pc, paths[label], groups, rg, pi)
            measured = runner.measure_interleaved([cmd for _, cmd in benchmarks])
            for (name, _), res in zip(benchmarks, measured, strict=True):
                record(label, name, res)
            if "stream" in groups:
                for page in FIRST_LINE_PAGES:
                    cmd = [*pc, "grep", ".", f, *page.split()]
                    record(label, f"first line of grep . {page} {COLD}", runner.first_line(cmd))
                # One run: it prints the whole transcript (about the file's size) and takes a while.
                huge = [*pc, "grep", ".", f, *HUGE_PAGE.split()]
                record(label, f"grep . {HUGE_PAGE} {COLD}", runner.measure(huge, 1))
            if "append" in groups:
                record(label, "check, first run (writes the index)", measure_first_run(cached, pc, paths[label], cache))
                with tempfile.TemporaryDirectory(prefix="picompact-append-", dir=args.data_dir) as work:
                    res = measure_append(cached, pc, paths[label], Path(work))
                record(label, f"check after {APPENDED_LINES} appended lines", res)
                if "grep" in groups:
                    with tempfile.TemporaryDirectory(prefix="picompact-append-", dir=args.data_dir) as work:
                        res = measure_append(cached, pc, paths[label], Path(work), grep=True)
                    record(label, f"grep {ISSUE_LITERAL} --json after {APPENDED_LINES} appended lines", res)
            if "warm" in groups:
                # The same commands as the cold rows, run again on an unchanged file: they resume from its index.
                shutil.rmtree(cache, ignore_errors=True)
                check_cmd = [*pc, "check", f, "--context-window", CONTEXT_WINDOW]
                record(label, f"check {WARM}", measure_warm(cached, check_cmd))
                record(label, f"check --json {WARM}", measure_warm(cached, [*check_cmd, "--json"]))
                for name, args_ in (
                    (f"grep {ISSUE_LITERAL} --json", [ISSUE_LITERAL, f, "--json"]),
                    (f"grep '{NONLITERAL}'", [NONLITERAL, f]),
                ):
                    record(label, f"{name} {WARM}", measure_warm(cached, [*pc, "grep", *args_]))
                page = FIRST_LINE_PAGES[0]
                cmd = [*pc, "grep", ".", f, *page.split()]
                record(label, f"first line of grep . {page} {WARM}", measure_warm(cached, cmd, first_line=True))
                shutil.rmtree(cache, ignore_errors=True)

        startup: dict[str, Result] = {}
        if "startup" in groups:
            for name, cmd in (
                ("python -c pass", [sys.executable, "-c", "pass"]),
                ("python -c 'import typer, rich'", [sys.executable, "-c", "import typer, rich"]),
                ("picompact check (small session)", [*pc, "check", str(SMALL_SESSION)]),
            ):
                startup[name] = runner.measure(cmd)
                print(f"{'small':>6}  {name:<40} {startup[name].cell()}", file=sys.stderr)
        ver = versions(pc, shutil.which("rg"), env)
        load_after = os.getloadavg()[0]
        busy = max(load_before, load_after) > 0.5 * (os.cpu_count() or 1)
        load = f"load average {load_before:.2f} before, {load_after:.2f} after" + (
            ": other processes were running, timings are inflated" if busy else ""
        )

    header = ["benchmark"] + [f"{label} ({paths[label].stat().st_size / 2**20:.1f} MiB)" for label in sizes]
    rows = [
        [name] + [results[label][name].cell() if name in results[label] else "-" for label in sizes]
        for name in row_names
    ]
    target_rows = [list(t) for t in targets(sizes, paths, results, startup)]
    startup_rows = [[name, res.cell()] for name, res in startup.items()]

    print("\n" + plain_table(header, rows), file=sys.stderr)
    if startup_rows:
        print("\n" + plain_table(["startup", "time · peak RSS"], startup_rows), file=sys.stderr)
    print("\n" + plain_table(["target", "measured", "verdict"], target_rows), file=sys.stderr)

    only = "" if groups == set(GROUPS) else f" --only {','.join(g for g in GROUPS if g in groups)}"
    out = [
        "## Machine",
        "",
        f"- {machine()}",
        f"- {ver}",
        f"- {load}",
        f"- `python bench/run.py --sizes {','.join(sizes)} --repeat {args.repeat}{only}` on "
        f"{time.strftime('%Y-%m-%d')}; memory via {'GNU time' if runner.gnu_time else 'getrusage'}",
        "",
        f"## Time (best of {args.repeat}) · peak RSS",
        "",
        markdown_table(header, rows) if rows else "(no per-file benchmarks selected)",
    ]
    if startup_rows:
        out += ["", "## Startup", "", markdown_table(["command", "time · peak RSS"], startup_rows)]
    out += ["", "## Targets", "", markdown_table(["target", "measured", "verdict"], target_rows), ""]
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
