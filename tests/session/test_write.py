"""The session writer: locked, checked appends; atomic rewrites with a backup; copies. Nothing is ever lost."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import orjson
import pytest

from pi_compact.errors import ConcurrentWriteError, ExitCode, ExternalError, SessionError, UsageError
from pi_compact.session import load_session
from pi_compact.session.atomic import backup_path
from pi_compact.session.lock import LockTimeoutError, SessionChangedError
from pi_compact.session.write import append_entries, migrated_lines, rewrite_session, write_copy
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import simple_session

NEW = [
    '{"type":"label","id":"feed0001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","targetId":"x","label":"a"}\n',
    '{"type":"label","id":"feed0002","parentId":"feed0001","timestamp":"2026-01-01T00:00:00.000Z","targetId":"x"}\n',
]


def _session_file(tmp_path: Path, name: str = "s.jsonl") -> Path:
    return simple_session(turns=3).write(tmp_path / name)


def _ids(path: Path) -> list[str]:
    return [e.id for e in load_session(path).entries]


def test_append_adds_exactly_the_lines_after_the_untouched_original(tmp_path):
    path = _session_file(tmp_path)
    before = path.read_bytes()
    result = append_entries(path, load_session(path), NEW)
    after = path.read_bytes()
    assert after == before + "".join(NEW).encode()
    assert result.bytes_written == len("".join(NEW).encode())
    assert not result.added_newline
    assert _ids(path)[-2:] == ["feed0001", "feed0002"]


def test_an_append_by_someone_else_since_reading_is_detected_and_nothing_is_written(tmp_path):
    path = _session_file(tmp_path)
    session = load_session(path)
    with open(path, "ab") as f:  # Pi appends a line meanwhile
        f.write(b'{"type":"label","id":"0ther001","parentId":null,"timestamp":"t","targetId":"x","label":"p"}\n')
    changed = path.read_bytes()
    with pytest.raises(SessionChangedError) as info:
        append_entries(path, session, NEW)
    assert info.value.exit_code == ExitCode.EXTERNAL
    assert path.read_bytes() == changed


def test_same_size_but_different_last_bytes_is_detected(tmp_path):
    path = _session_file(tmp_path)
    session = load_session(path)
    data = bytearray(path.read_bytes())
    data[-3] = ord("Z") if data[-3] != ord("Z") else ord("Y")
    path.write_bytes(bytes(data))
    with pytest.raises(SessionChangedError):
        append_entries(path, session, NEW)
    assert path.read_bytes() == bytes(data)


def test_a_file_renamed_over_while_waiting_for_the_lock_is_detected(tmp_path, monkeypatch):
    """Another picompact migrating the file renames a new one over it: our open file is no longer the session."""
    import pi_compact.session.lock as lock

    path = _session_file(tmp_path)
    session = load_session(path)
    original = path.read_bytes()
    other = tmp_path / "other.jsonl"
    other.write_bytes(original)
    real_flock = fcntl.flock
    calls = []

    def flock_after_rename(fd, op):
        if not calls:
            os.replace(other, path)  # happens while we "wait" for the lock on the old file
        calls.append(op)
        return real_flock(fd, op)

    monkeypatch.setattr(lock.fcntl, "flock", flock_after_rename)
    with pytest.raises(SessionChangedError, match="replaced"):
        append_entries(path, session, NEW)
    assert path.read_bytes() == original


def test_lock_held_by_another_writer_times_out_with_exit_3_and_nothing_written(tmp_path):
    path = _session_file(tmp_path)
    session = load_session(path)
    before = path.read_bytes()
    holder = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(LockTimeoutError) as info:
            append_entries(path, session, NEW, lock_timeout=0.05)
        assert isinstance(info.value, ConcurrentWriteError)
        assert info.value.exit_code == ExitCode.EXTERNAL
    finally:
        os.close(holder)
    assert path.read_bytes() == before
    append_entries(path, session, NEW)  # the lock is free again
    assert path.read_bytes() == before + "".join(NEW).encode()


def test_missing_final_newline_is_added_in_the_same_write(tmp_path):
    path = _session_file(tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    session = load_session(path)
    assert not session.ends_with_newline and not session.torn_last_line
    last_before = session.leaf.id
    result = append_entries(path, session, NEW)
    assert result.added_newline
    ids = _ids(path)
    assert ids[-3:] == [last_before, "feed0001", "feed0002"]
    assert not load_session(path).diagnostics


def test_a_torn_last_line_is_refused_without_repair(tmp_path):
    path = _session_file(tmp_path)
    torn = path.read_bytes() + b'{"type":"message","id":"t0rn0001","parentId":"a00'
    path.write_bytes(torn)
    session = load_session(path)
    assert session.torn_last_line
    with pytest.raises(SessionError) as info:
        append_entries(path, session, NEW)
    assert info.value.exit_code == ExitCode.USAGE
    assert "--repair" in str(info.value)
    assert path.read_bytes() == torn


def test_repair_keeps_the_torn_bytes_as_a_skipped_line_and_never_glues_to_them(tmp_path):
    path = _session_file(tmp_path)
    original = path.read_bytes()
    torn_bytes = b'{"type":"message","id":"t0rn0001","parentId":"a00'
    path.write_bytes(original + torn_bytes)
    session = load_session(path)
    result = append_entries(path, session, NEW, repair=True)
    assert result.repaired_torn_line
    data = path.read_bytes()
    assert data == original + torn_bytes + b"\n" + "".join(NEW).encode()
    reloaded = load_session(path)
    assert [e.id for e in reloaded.entries][-2:] == ["feed0001", "feed0002"]
    assert "t0rn0001" not in reloaded.by_id
    assert [d.code for d in reloaded.diagnostics] == ["malformed-line"]  # skipped, as Pi skips it


def test_never_writes_when_the_header_became_invalid(tmp_path):
    path = _session_file(tmp_path)
    session = load_session(path)
    data = path.read_bytes()
    first, rest = data.split(b"\n", 1)
    bad = first.replace(b'"type":"session"', b'"type":"sessiox"')
    assert len(bad) == len(first)
    path.write_bytes(bad + b"\n" + rest)  # same size, same tail: only the header check can see it
    with pytest.raises(SessionChangedError, match="header"):
        append_entries(path, session, NEW)
    assert path.read_bytes() == bad + b"\n" + rest


def test_lines_must_be_complete(tmp_path):
    path = _session_file(tmp_path)
    with pytest.raises(ValueError):
        append_entries(path, load_session(path), ['{"a":1}'])
    with pytest.raises(ValueError):
        append_entries(path, load_session(path), ['{"a":1}\n{"b":2}\n'])


def test_appending_keeps_the_file_mode(tmp_path):
    path = _session_file(tmp_path)
    path.chmod(0o600)
    append_entries(path, load_session(path), NEW)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# ---------------------------------------------------------------------------------------------------------------
# Rewrite (v1/v2 migration)


@pytest.mark.parametrize("fixture", ["gen-v2-legacy-101.jsonl", "pi-large-session.jsonl"])
def test_rewrite_migrates_to_v3_keeps_a_backup_and_the_permissions(tmp_path, fixture):
    path = tmp_path / fixture
    original = (PI_FIXTURES / fixture).read_bytes()
    path.write_bytes(original)
    path.chmod(0o640)
    session = load_session(path)
    assert session.needs_migration
    result = rewrite_session(path, migrated_lines(session) + NEW, expected=session)
    assert result.backup == tmp_path / (fixture + ".bak")
    assert result.backup.read_bytes() == original
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    migrated = load_session(path)
    assert migrated.original_version == 3 and migrated.header["version"] == 3
    assert [e.raw for e in migrated.entries][: len(session.entries)] == [e.raw for e in session.entries]
    assert [e.id for e in migrated.entries][-2:] == ["feed0001", "feed0002"]
    assert not list(tmp_path.glob("*.picompact-tmp"))


def test_rewrite_without_backup_and_backups_never_overwrite_each_other(tmp_path):
    path = tmp_path / "v2.jsonl"
    original = (PI_FIXTURES / "gen-v2-legacy-101.jsonl").read_bytes()
    path.write_bytes(original)
    result = rewrite_session(path, migrated_lines(load_session(path)), backup=False)
    assert result.backup is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v2.jsonl"]

    path.write_bytes(original)
    first = rewrite_session(path, migrated_lines(load_session(path))).backup
    path.write_bytes(original)
    second = rewrite_session(path, migrated_lines(load_session(path))).backup
    assert first == backup_path(path).with_name("v2.jsonl.bak")
    assert second == tmp_path / "v2.jsonl.bak.2"
    assert first.read_bytes() == original and second.read_bytes() == original


def test_rewrite_refuses_a_file_changed_since_reading(tmp_path):
    path = tmp_path / "v2.jsonl"
    path.write_bytes((PI_FIXTURES / "gen-v2-legacy-101.jsonl").read_bytes())
    session = load_session(path)
    with open(path, "ab") as f:
        f.write(b'{"type":"label","id":"0ther001","parentId":null,"timestamp":"t","targetId":"x","label":"p"}\n')
    changed = path.read_bytes()
    with pytest.raises(SessionChangedError):
        rewrite_session(path, migrated_lines(session) + NEW, expected=session)
    assert path.read_bytes() == changed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v2.jsonl"]


def test_migrated_header_says_version_3_and_keeps_its_other_fields_in_order():
    session = load_session(PI_FIXTURES / "pi-large-session.jsonl")  # v1: no version field
    header = orjson.loads(migrated_lines(session)[0])
    assert header["version"] == 3
    assert list(header)[:-1] == list(session.header)[: len(header) - 1]


# ---------------------------------------------------------------------------------------------------------------
# Copies


def test_write_copy_leaves_the_session_untouched(tmp_path):
    path = _session_file(tmp_path)
    path.chmod(0o600)
    before = path.read_bytes()
    dest = tmp_path / "out" / "copy.jsonl"
    dest.parent.mkdir()
    write_copy(dest, load_session(path), NEW)
    assert path.read_bytes() == before
    assert dest.read_bytes() == before + "".join(NEW).encode()
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600


def test_write_copy_to_a_stream_and_refusing_the_session_itself(tmp_path):
    import io

    path = _session_file(tmp_path)
    before = path.read_bytes()
    buffer = io.BytesIO()
    write_copy("-", load_session(path), NEW, stream=buffer)
    assert buffer.getvalue() == before + "".join(NEW).encode()
    with pytest.raises(UsageError, match="session itself"):
        write_copy(path, load_session(path), NEW)
    assert path.read_bytes() == before


def test_write_copy_of_a_v1_file_is_migrated(tmp_path):
    source = tmp_path / "v1.jsonl"
    source.write_bytes((PI_FIXTURES / "pi-large-session.jsonl").read_bytes())
    dest = tmp_path / "copy.jsonl"
    session = load_session(source)
    write_copy(dest, session, NEW)
    copy = load_session(dest)
    assert copy.original_version == 3
    assert [e.id for e in copy.entries] == [e.id for e in session.entries] + ["feed0001", "feed0002"]


def test_rewrite_through_a_symlink_keeps_the_link(tmp_path):
    real = tmp_path / "real" / "v2.jsonl"
    real.parent.mkdir()
    original = (PI_FIXTURES / "gen-v2-legacy-101.jsonl").read_bytes()
    real.write_bytes(original)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    session = load_session(link)
    result = rewrite_session(link, migrated_lines(session) + NEW, expected=session)
    assert link.is_symlink()
    assert load_session(real).entries[-1].id == "feed0002"
    assert result.backup == real.with_name("v2.jsonl.bak")
    assert result.backup.read_bytes() == original


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (PermissionError(13, "Permission denied"), SessionError),
        (OSError(28, "No space left on device"), ExternalError),
    ],
)
def test_a_copy_that_cannot_be_written_is_a_typed_error_and_leaves_nothing(tmp_path, monkeypatch, error, kind):
    import pi_compact.session.write as write

    path = _session_file(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())

    def failing_fchmod(fd, mode):
        raise error

    monkeypatch.setattr(write.os, "fchmod", failing_fchmod)
    with pytest.raises(kind) as info:
        write_copy(tmp_path / "copy.jsonl", load_session(path), NEW)
    assert str(error.strerror).lower() in str(info.value).lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temp file left behind
