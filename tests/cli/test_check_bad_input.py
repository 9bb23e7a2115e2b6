"""Bad input through the real CLI: a clear one-line message naming file and line, the right exit code,
no traceback, and the file's bytes unchanged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder, simple_session


def assert_clean_error(result, path: Path | None = None, line: int | None = None) -> None:
    assert result.code == 2, (result.code, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("picompact: error: ")
    assert result.stderr.count("\n") == 1, result.stderr
    if path is not None:
        assert str(path) in result.stderr
    if line is not None:
        assert f"{path}:{line}:" in result.stderr


def check(path: Path, *extra: str):
    return run("check", path, "--context-window", "200000", *extra)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    result = check(path)
    assert_clean_error(result, path)
    assert "no such file" in result.stderr


def test_directory(tmp_path: Path) -> None:
    result = check(tmp_path)
    assert_clean_error(result, tmp_path)
    assert "directory" in result.stderr


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = simple_session().write(tmp_path / "s.jsonl")
    path.chmod(0)
    if os.geteuid() != 0:
        result = check(path)
        assert_clean_error(result, path)
        assert "permission denied" in result.stderr
        return
    # root reads anything, so the operating system cannot refuse here: make open() refuse instead (the CLI runs
    # in this process).
    import pi_compact.session.load as load

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(load, "open", refuse, raising=False)
    result = check(path)
    assert_clean_error(result, path)
    assert f"picompact: error: {path}: permission denied" in result.stderr


@pytest.mark.parametrize(
    ("content", "needle", "line"),
    [
        (b"", "empty file", None),
        (b"hello world\nthis is not json\n", "not a Pi session", None),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "UTF-8", None),
        (b'{"type":"message","id":"a"}\n', "not a Pi session", 1),
        (b'\n\n{"type":"session","version":3}\n', "not a Pi session", 3),
    ],
    ids=["empty", "not-json", "binary", "no-header", "header-without-id"],
)
def test_not_a_session(tmp_path: Path, content: bytes, needle: str, line: int | None) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    result = check(path)
    assert_clean_error(result, path, line)
    assert needle in result.stderr
    assert path.read_bytes() == content


def test_invalid_utf8_in_a_later_line_is_read_as_pi_reads_it(tmp_path: Path) -> None:
    data = simple_session(turns=1).to_bytes() + b'{"type":"label","id":"x1","parentId":null,"label":"\xff\xfe"}\n'
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    result = check(path)
    assert result.code == 0, result.stderr
    line = data.count(b"\n")
    assert f"picompact: warning: {path}:{line}: line is not valid UTF-8" in result.stderr
    assert "Traceback" not in result.stderr
    assert path.read_bytes() == data


def test_bom_is_refused_as_pi_refuses_it(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + simple_session(turns=1).to_bytes()
    path = tmp_path / "bom.jsonl"
    path.write_bytes(data)
    result = check(path)
    assert_clean_error(result, path, 1)
    assert "byte-order mark" in result.stderr and "Pi 1.6 refuses" in result.stderr
    assert path.read_bytes() == data


def test_parent_cycle(tmp_path: Path) -> None:
    sb = SessionBuilder()
    a = sb.user("one")
    sb.assistant("two")
    sb.entries[0]["parentId"] = sb.leaf  # a → b → a
    path = sb.write(tmp_path / "cycle.jsonl")
    before = path.read_bytes()
    result = check(path)
    assert_clean_error(result, path)
    assert "cycle" in result.stderr
    assert a in result.stderr or sb.leaf in result.stderr
    assert path.read_bytes() == before


def test_unknown_leaf_suggests_ids(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    old = sb.entries[3]["id"]
    sb.entries[3]["id"] = "5f3c9e21"
    sb.entries[4]["parentId"] = "5f3c9e21"
    path = sb.write(tmp_path / "s.jsonl")
    assert old != "5f3c9e21"
    result = check(path, "--leaf", "5f3c9f21")
    assert_clean_error(result, path)
    assert "no entry with id '5f3c9f21'" in result.stderr
    assert "did you mean 5f3c9e21" in result.stderr  # the nearest id comes first


@pytest.mark.parametrize(
    "flags",
    [
        ["--reserve-tokens", "-5"],
        ["--keep-recent-tokens", "-1"],
        ["--context-window", "-100"],
        ["--context-window", "0"],
        ["--keep-recent-tokens", "999999999999"],
        ["--tokenizer", "gpt2"],
    ],
)
def test_negative_or_absurd_settings(tmp_path: Path, flags: list[str]) -> None:
    path = simple_session().write(tmp_path / "s.jsonl")
    result = run("check", path, *flags)
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert flags[0] in result.stderr


def test_invalid_settings_file_names_file_and_key(tmp_path: Path, isolated_home: Path) -> None:
    agent = isolated_home / ".pi" / "agent"
    agent.mkdir(parents=True)
    (agent / "settings.json").write_text('{"compaction": {"reserveTokens": -3}}')
    path = simple_session().write(tmp_path / "s.jsonl")
    result = check(path)
    assert result.code == 2
    assert "settings.json" in result.stderr and "reserveTokens" in result.stderr


def test_unresolvable_context_window(tmp_path: Path) -> None:
    sb = SessionBuilder()
    sb.user("hi")
    sb.assistant("hello", model=("acme", "mystery-model-9"), usage=10)
    path = sb.write(tmp_path / "s.jsonl")
    result = run("check", path)
    assert_clean_error(result)
    assert "acme/mystery-model-9" in result.stderr and "--context-window" in result.stderr


def test_json_errors_are_json_on_stdout(tmp_path: Path) -> None:
    path = tmp_path / "missing.jsonl"
    result = run("check", path, "--json")
    assert result.code == 2
    assert result.json["error"]["exit_code"] == 2
    assert "no such file" in result.json["error"]["message"]


# ---------------------------------------------------------------------------------------------------------------
# Recoverable problems: reported on stderr and in --json diagnostics, handled as Pi handles them.


def diagnostics(result) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for d in result.json["diagnostics"]:
        out.setdefault(d["code"], []).append(d)
    return out


def test_truncated_last_line(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    good = sb.to_bytes()
    data = good + b'{"type":"message","id":"deadbeef","parentId":"' + sb.leaf.encode() + b'","message":{"role":"us'
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    result = check(path, "--json")
    assert result.code in (0, 1)
    diag = diagnostics(result)["truncated-last-line"][0]
    assert diag["line"] == good.count(b"\n") + 1
    assert f"{path}:{diag['line']}:" in result.stderr
    assert result.json["leaf_id"] == sb.leaf  # the torn entry is ignored, as Pi ignores it
    assert path.read_bytes() == data


def test_malformed_middle_line_orphans_its_children(tmp_path: Path) -> None:
    sb = simple_session(turns=3)
    lines = sb.lines()
    broken = 5  # 1-based line number of the entry we corrupt
    lines[broken - 1] = lines[broken - 1][:20]
    data = b"".join(line + b"\n" for line in lines)
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    result = check(path, "--json")
    diag = diagnostics(result)
    assert diag["malformed-line"][0]["line"] == broken
    orphan = diag["orphaned-branch"][0]
    assert orphan["line"] == broken + 1
    # Pi loses the earlier half: the branch starts at the orphan
    assert result.json["branch_length"] == len(lines) - broken
    assert "earlier entries are not on it" in orphan["message"]
    assert f"{path}:{broken}:" in result.stderr
    assert path.read_bytes() == data


def test_null_line_is_skipped(tmp_path: Path) -> None:
    sb = simple_session(turns=1)
    lines = sb.lines()
    data = b"\n".join([*lines[:2], b"null", *lines[2:]]) + b"\n"
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    result = check(path, "--json")
    assert diagnostics(result)["null-line"][0]["line"] == 3
    assert result.json["branch_length"] == len(lines) - 1


def test_duplicate_ids_later_wins(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    dup = dict(sb.entries[2])
    sb.entries.append({**dup, "parentId": sb.entries[1]["id"], "message": {"role": "user", "content": "again"}})
    path = sb.write(tmp_path / "s.jsonl")
    result = check(path, "--json")
    diag = diagnostics(result)["duplicate-id"][0]
    assert dup["id"] in diag["message"]
    assert diag["line"] == len(sb.entries) + 1
    assert result.json["branch_length"] == 3  # the later entry (a child of entry 1) is the leaf


def test_parent_pointing_nowhere(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    sb.entries[4]["parentId"] = "ffffffff"
    path = sb.write(tmp_path / "s.jsonl")
    result = check(path, "--json")
    orphan = diagnostics(result)["orphaned-branch"][0]
    assert "ffffffff" in orphan["message"]
    assert result.json["branch_length"] == len(sb.entries) - 4


def test_crlf_and_blank_lines_load(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    data = b"\r\n\r\n".join(sb.lines()) + b"\r\n"
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    result = check(path, "--json")
    assert result.code in (0, 1), result.stderr
    assert result.json["branch_length"] == len(sb.entries)


def test_fifty_megabyte_single_line(tmp_path: Path) -> None:
    sb = simple_session(turns=1)
    sb.user("z" * (50 * 1024 * 1024))
    sb.assistant("ok", usage=5)
    path = sb.write(tmp_path / "big.jsonl")
    result = check(path, "--json")
    assert result.code in (0, 1), result.stderr
    assert "big-line" in diagnostics(result)
    assert result.json["branch_length"] == len(sb.entries)


def test_unknown_entry_types_and_fields_are_kept(tmp_path: Path) -> None:
    sb = simple_session(turns=1)
    sb.add({"type": "future_thing", "payload": {"x": 1}})
    sb.entries[1]["someNewField"] = [1, 2]
    path = sb.write(tmp_path / "s.jsonl")
    result = check(path, "--json")
    assert result.code in (0, 1)
    assert result.json["leaf_id"] == sb.leaf  # the leaf is the last entry, whatever its type
    assert result.json["diagnostics"] == []


def test_v1_file_loads_with_stable_ids(tmp_path: Path) -> None:
    header = {"type": "session", "id": "old-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/r"}
    lines = [orjson.dumps(header)]
    for i in range(3):
        lines.append(
            orjson.dumps(
                {
                    "type": "message",
                    "timestamp": "2025-01-01T00:00:01.000Z",
                    "message": {"role": "user", "content": f"q{i}", "timestamp": 1},
                }
            )
        )
    path = tmp_path / "v1.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    first = run("check", path, "--context-window", "1000", "--json").json
    second = run("check", path, "--context-window", "1000", "--json").json
    assert first["branch_length"] == 3
    assert first["leaf_id"] == second["leaf_id"]
    assert first["session"]["version"] == 1


def test_check_does_not_write(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    data = sb.to_bytes().rstrip(b"\n")  # Pi would add the final newline on open; picompact check must not
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    mtime = path.stat().st_mtime_ns
    result = check(path)
    assert result.code in (0, 1)
    assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime


@pytest.mark.process
def test_module_entry_point_works(tmp_path: Path) -> None:
    path = simple_session().write(tmp_path / "s.jsonl")
    proc = subprocess.run(
        [sys.executable, "-m", "pi_compact", "check", str(path), "--context-window", "200000"],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"context tokens" in proc.stdout


def test_leaf_selects_another_branch(tmp_path: Path) -> None:
    sb = simple_session(turns=3)
    fork_point = sb.entries[4]["id"]
    side = sb.add(
        {"type": "message", "message": {"role": "user", "content": "a side question", "timestamp": 1}},
        parent=fork_point,
    )
    sb.add(
        {"type": "message", "message": {"role": "user", "content": "main again", "timestamp": 1}},
        parent=sb.entries[-2]["id"],
    )
    path = sb.write(tmp_path / "s.jsonl")
    main = check(path, "--json").json
    other = check(path, "--leaf", side, "--json").json
    assert main["leaf_id"] == sb.leaf
    assert other["leaf_id"] == side
    assert other["branch_length"] == 6  # entries 0..4 of the trunk, then the side question
    assert main["branch_length"] == len(sb.entries) - 1  # everything but the side entry
