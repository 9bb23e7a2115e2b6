"""Session discovery finds what Pi 1.6 finds (session-manager.js: findMostRecentSession, list, listAll)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pi_compact.pi.sessions import (
    FIRST_MESSAGE_CHARS,
    HEADER_SCAN_LIMIT,
    find_most_recent_session,
    list_sessions,
    read_session_header,
    session_dir_for_cwd,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "proj"
    path.mkdir(parents=True)
    return path


def line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def header(session_id: str, cwd: Path | str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": str(cwd),
        **extra,
    }


def message(entry_id: str, role: str, content: Any, timestamp: str = "2025-01-02T00:00:00.000Z") -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "timestamp": timestamp,
        "message": {"role": role, "content": content},
    }


def write_session(path: Path, data: bytes, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def simple(session_id: str, cwd: Path | str) -> bytes:
    return line(header(session_id, cwd)) + line(message("a1", "user", "hello"))


def test_session_dir_encoding(agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert session_dir_for_cwd("/home/u/my proj") == agent / "sessions" / "--home-u-my proj--"
    assert session_dir_for_cwd("/a:b\\c/d") == agent / "sessions" / "--a-b-c-d--"
    assert session_dir_for_cwd("/x/y/../z/", agent_dir=tmp_path / "o") == tmp_path / "o" / "sessions" / "--x-z--"
    monkeypatch.chdir(tmp_path)
    encoded = str(tmp_path / "rel").lstrip("/").replace("/", "-")
    assert session_dir_for_cwd("rel") == agent / "sessions" / f"--{encoded}--"


def test_most_recent_valid_session_wins(agent: Path, project: Path) -> None:
    sessions = session_dir_for_cwd(project)
    expected = write_session(sessions / "2025-01-01_old.jsonl", simple("old", project), mtime=1000)
    write_session(sessions / "2025-01-02_older.jsonl", simple("older", project), mtime=500)
    write_session(sessions / "not-a-session.jsonl", line(message("x", "user", "hi")), mtime=5000)
    write_session(sessions / "bom.jsonl", b"\xef\xbb\xbf" + simple("bom", project), mtime=4000)
    write_session(sessions / "garbage.jsonl", b"{not json\n\n", mtime=3000)
    write_session(sessions / "empty.jsonl", b"", mtime=2500)
    write_session(sessions / "notes.txt", simple("txt", project), mtime=6000)
    write_session(sessions / "numeric-id.jsonl", line({"type": "session", "id": 7, "cwd": str(project)}), mtime=2000)
    assert find_most_recent_session(project) == expected


def test_blank_malformed_and_null_lines_before_the_header_are_skipped(agent: Path, project: Path) -> None:
    data = b'\n   \n{broken\nnull\nfalse\n0\n""\n' + simple("s", project)
    path = write_session(session_dir_for_cwd(project) / "s.jsonl", data)
    assert read_session_header(path) == header("s", project)
    assert find_most_recent_session(project) == path


def test_truthy_non_header_first_line_is_not_a_session(tmp_path: Path, project: Path) -> None:
    for first in (b"[]\n", b"1\n", b"true\n", b'"x"\n', b"{}\n"):
        path = write_session(tmp_path / "f.jsonl", first + simple("s", project))
        assert read_session_header(path) is None, first


def test_header_without_trailing_newline_and_with_crlf(tmp_path: Path, project: Path) -> None:
    path = write_session(tmp_path / "a.jsonl", json.dumps(header("a", project)).encode())
    assert read_session_header(path) == header("a", project)
    path = write_session(tmp_path / "b.jsonl", json.dumps(header("b", project)).encode() + b"\r\n")
    assert read_session_header(path) == header("b", project)


def test_header_with_invalid_utf8_is_still_a_header(tmp_path: Path, project: Path) -> None:
    raw = json.dumps(header("u", project, title="X")).encode().replace(b'"X"', b'"\xff"')
    path = write_session(tmp_path / "u.jsonl", raw + b"\n")
    found = read_session_header(path)
    assert found is not None
    assert found["id"] == "u"


def test_header_beyond_the_scan_limit_is_not_found(tmp_path: Path, project: Path) -> None:
    big = line(header("big", project, padding="x" * HEADER_SCAN_LIMIT))
    path = write_session(tmp_path / "big.jsonl", big + line(message("a", "user", "hi")))
    assert read_session_header(path) is None
    path = write_session(tmp_path / "late.jsonl", b" " * HEADER_SCAN_LIMIT + b"\n" + simple("late", project))
    assert read_session_header(path) is None
    path = write_session(
        tmp_path / "ok.jsonl", b"\n" * 1000 + b" " * (HEADER_SCAN_LIMIT // 2) + b"\n" + simple("ok", project)
    )
    assert read_session_header(path) is not None


def test_default_directory_is_not_filtered_by_header_cwd(agent: Path, project: Path, tmp_path: Path) -> None:
    # Pi's continueRecent trusts the directory name in the default location.
    sessions = session_dir_for_cwd(project)
    write_session(sessions / "mine.jsonl", simple("mine", project), mtime=1000)
    other = write_session(sessions / "other.jsonl", simple("other", tmp_path / "elsewhere"), mtime=2000)
    assert find_most_recent_session(project) == other


def test_configured_session_dir_is_filtered_by_header_cwd(
    agent: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared-sessions"
    mine = write_session(shared / "mine.jsonl", simple("mine", project), mtime=1000)
    write_session(shared / "other.jsonl", simple("other", tmp_path / "elsewhere"), mtime=2000)
    write_session(shared / "nocwd.jsonl", line({"type": "session", "id": "n"}), mtime=3000)
    assert find_most_recent_session(project, session_dir=shared) == mine
    assert find_most_recent_session(project) is None
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(shared))
    assert find_most_recent_session(project) == mine
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR")
    (agent / "settings.json").write_text(json.dumps({"sessionDir": str(shared)}))
    assert find_most_recent_session(project) == mine


def test_relative_session_dir_setting_resolves_from_cwd(agent: Path, project: Path) -> None:
    (agent / "trust.json").write_text(json.dumps({str(project): True}))  # a project's sessionDir: trusted only
    (project / ".pi").mkdir()
    (project / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": "local-sessions"}))
    mine = write_session(project / "local-sessions" / "s.jsonl", simple("s", project))
    assert find_most_recent_session(project) == mine


def test_no_sessions(agent: Path, project: Path) -> None:
    assert find_most_recent_session(project) is None
    assert list_sessions(project) == []
    assert list_sessions(project, all_=True) == []


def test_listing_fields(agent: Path, project: Path) -> None:
    long_text = "word " * 100
    data = (
        line(header("s1", project, parentSession="/old/session.jsonl"))
        + b"{torn\n"
        + line({"type": "session_info", "id": "i1", "name": "  First name  "})
        + line(message("m1", "assistant", [{"type": "text", "text": "before any user"}], "2025-01-02T00:00:00.000Z"))
        + line(message("m2", "user", [{"type": "image", "data": "x"}], "2025-01-02T00:01:00.000Z"))
        + line(message("m3", "user", [{"type": "text", "text": long_text}, {"type": "text", "text": "tail"}]))
        + line({"type": "custom", "id": "c1", "customType": "x", "data": {}})
        + line(message("m4", "toolResult", [{"type": "text", "text": "out"}], "2025-03-01T00:00:00.000Z"))
        + line(message("m5", "assistant", "done", "2025-01-05T10:00:00.000Z"))
        + line({"type": "session_info", "id": "i2", "name": "Final name"})
    )
    path = write_session(session_dir_for_cwd(project) / "s1.jsonl", data, mtime=1_700_000_000)
    [summary] = list_sessions(project)
    assert summary.path == path
    assert (summary.id, summary.cwd, summary.name) == ("s1", str(project), "Final name")
    assert summary.first_message == (long_text + " tail")[:FIRST_MESSAGE_CHARS]
    assert summary.entry_count == 8
    assert summary.message_count == 5
    assert summary.size == len(data)
    assert summary.modified == datetime(2025, 1, 5, 10, tzinfo=UTC)  # last user/assistant message
    assert summary.mtime == datetime.fromtimestamp(1_700_000_000, tz=UTC)
    assert summary.created == datetime(2025, 1, 1, tzinfo=UTC)
    assert summary.parent_session == "/old/session.jsonl"


def test_listing_name_can_be_cleared_and_defaults(agent: Path, project: Path) -> None:
    data = (
        line(header("s", project))
        + line({"type": "session_info", "id": "i1", "name": "Named"})
        + line({"type": "session_info", "id": "i2", "name": "   "})
    )
    write_session(session_dir_for_cwd(project) / "s.jsonl", data, mtime=1_600_000_000)
    [summary] = list_sessions(project)
    assert summary.name is None
    assert summary.first_message is None
    assert summary.message_count == 0
    assert summary.modified == datetime(2025, 1, 1, tzinfo=UTC)  # header time without messages


def test_listing_uses_numeric_message_timestamps_and_falls_back_to_mtime(agent: Path, project: Path) -> None:
    sessions = session_dir_for_cwd(project)
    numeric = message("m", "user", "hi")
    numeric["message"]["timestamp"] = 1_750_000_000_000
    write_session(sessions / "a.jsonl", line(header("a", project)) + line(numeric))
    no_time = {"type": "session", "id": "b", "cwd": str(project)}
    write_session(sessions / "b.jsonl", line(no_time), mtime=1_500_000_000)
    by_id = {s.id: s for s in list_sessions(project)}
    assert by_id["a"].modified == datetime.fromtimestamp(1_750_000_000, tz=UTC)
    assert by_id["b"].modified == datetime.fromtimestamp(1_500_000_000, tz=UTC)
    assert by_id["b"].created is None


def test_listing_is_sorted_newest_first_and_skips_non_sessions(agent: Path, project: Path) -> None:
    sessions = session_dir_for_cwd(project)
    for index, day in enumerate(["03", "01", "02"]):
        data = line(header(f"s{index}", project)) + line(message("m", "user", "q", f"2025-02-{day}T00:00:00.000Z"))
        write_session(sessions / f"s{index}.jsonl", data)
    write_session(sessions / "bad.jsonl", line(message("m", "user", "q")))
    write_session(sessions / "bom.jsonl", b"\xef\xbb\xbf" + simple("bom", project))
    assert [s.id for s in list_sessions(project)] == ["s0", "s2", "s1"]


def test_listing_all_projects(agent: Path, project: Path, tmp_path: Path) -> None:
    other_cwd = tmp_path / "other"
    write_session(session_dir_for_cwd(project) / "a.jsonl", simple("a", project))
    write_session(session_dir_for_cwd(other_cwd) / "b.jsonl", simple("b", other_cwd))
    (agent / "sessions" / "stray.jsonl").write_bytes(simple("stray", project))
    assert [s.id for s in list_sessions(project)] == ["a"]
    assert sorted(s.id for s in list_sessions(project, all_=True)) == ["a", "b"]


def test_listing_a_configured_directory(agent: Path, project: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    write_session(shared / "a.jsonl", simple("a", project))
    write_session(shared / "b.jsonl", simple("b", tmp_path / "other"))
    assert [s.id for s in list_sessions(project, session_dir=shared)] == ["a"]
    assert sorted(s.id for s in list_sessions(project, all_=True, session_dir=shared)) == ["a", "b"]


def test_listing_defaults_to_the_current_directory(agent: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_session(session_dir_for_cwd(project) / "a.jsonl", simple("a", project))
    monkeypatch.chdir(project)
    assert [s.id for s in list_sessions()] == ["a"]
