"""The library as a user holds it: the README's example runs as written, and `SessionFile` agrees with the
functions (and so the commands) it wraps."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import pi_compact
from pi_compact import CheckOptions, GrepQuery, open_session
from pi_compact.errors import PiCompactError
from tests.helpers.cli import run

ROOT = Path(__file__).parents[2]


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Library\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL)[1]  # type: ignore[index]


def test_the_readme_library_example_runs_as_written(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    before = (tmp_path / "examples" / "demo-session.jsonl").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", _readme_example()], cwd=tmp_path, capture_output=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode()
    lines = proc.stdout.decode().split("\n")
    tokens, should = lines[0].split()
    assert int(tokens) > 0 and should == "True"
    assert (tmp_path / "examples" / "demo-session.jsonl").read_bytes() == before  # a dry run writes nothing


def test_the_object_agrees_with_the_commands(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copy(ROOT / "examples" / "demo-session.jsonl", path)
    with open_session(path, context_window=32_000) as session:
        check = session.check()
        assert check.to_json() == pi_compact.check_session(path, CheckOptions(context_window=32_000)).to_json()
        out = run("grep", "-i", "off by one", path, "--json").stdout_bytes.split(b"\n")
        cli = [r for r in (orjson.loads(line) for line in out if line) if r["type"] == "match"]
        page = session.grep(GrepQuery.of("off by one", ignore_case=True))
        assert [m.entry_id for m in page.matches] == [r["data"]["entry_id"] for r in cli] != []
        assert session.entries().to_json()["entries"] == run("list", path, "--json").json["entries"]
        written = session.compact("verbatim")
        assert written.status == "written"
        # the file changed: the object reads it again, and Pi's cut moved past the checkpoint
        assert session.check().plan.context.tokens < check.plan.context.tokens
        assert session.coverage().compaction.id == written.entries[0]["id"]


def test_it_reloads_when_another_program_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copy(ROOT / "examples" / "demo-session.jsonl", path)
    session = open_session(path, context_window=32_000)
    before = len(session.session.entries)
    assert run("compact", path, "--context-window", "32000").code == 0
    os.utime(path, ns=(1, 1))  # even with the time put back, the size tells
    assert len(session.session.entries) == before + 2


def test_bad_settings_and_bad_files_raise_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(PiCompactError, match="unknown setting windw"):
        open_session(tmp_path / "s.jsonl", windw=1)
    with pytest.raises(PiCompactError):
        open_session(tmp_path / "missing.jsonl").check()


def test_every_type_a_public_signature_uses_is_exported() -> None:
    for name in (
        "SessionFile",
        "open_session",
        "CheckOptions",
        "CompactOptions",
        "CheckResult",
        "LookupOptions",
        "CheckpointRequest",
        "build_compaction",
    ):
        assert name in pi_compact.__all__ and getattr(pi_compact, name) is not None


def test_search_sessions_is_the_search_command(tmp_path: Path) -> None:
    from pi_compact import search_sessions
    from tests.helpers.sessions import simple_session

    tree = tmp_path / "tree"
    tree.mkdir()
    for n in range(3):
        simple_session(turns=4 + n, size=100).write(tree / f"s{n}.jsonl")
    cli = run("search", "turn", "--dir", tree, "--json").json
    page = search_sessions("turn", dirs=[tree], limit=20)
    assert [(h.session, h.entry_id) for h in page.hits] == [(r["session"], r["entry_id"]) for r in cli["results"]]
    assert page.hits and search_sessions("turn", dirs=[tree], index=False).hits == page.hits
