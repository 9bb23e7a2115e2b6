"""A line longer than the bound (``source.MAX_LINE_BYTES``, 1 GiB; small here) is refused as soon as that much of it
is read, never read whole into memory: a huge file without a newline costs the bound, not its size."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pi_compact.errors import SessionError
from pi_compact.session import source
from pi_compact.session.load import load_session
from pi_compact.session.source import read_lines
from tests.helpers.cli import run

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}\n'
BOUND = 1000


class Counting(io.RawIOBase):
    """``size`` bytes of "x" and no newline, counting what was read."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.read_bytes = 0

    def readinto(self, buf: bytearray) -> int:  # type: ignore[override]
        n = min(len(buf), self.left)
        buf[:n] = b"x" * n
        self.left -= n
        self.read_bytes += n
        return n


def test_a_line_over_the_bound_is_refused_after_reading_the_bound_only() -> None:
    stream = Counting(100 * 1024 * 1024)
    with pytest.raises(SessionError) as raised:
        for _ in read_lines(stream, chunk=256, max_line=BOUND):
            pass
    assert raised.value.code == "line-too-long" and raised.value.line == 1
    assert stream.read_bytes <= BOUND + 256


@pytest.mark.parametrize("newline", [True, False])
def test_lines_up_to_the_bound_are_read_and_longer_ones_refused(newline: bool) -> None:
    end = b"\n" if newline else b""
    exact = b"y" * (BOUND - len(end)) + end
    assert list(read_lines(io.BytesIO(HEADER + exact), chunk=64, max_line=BOUND)) == [HEADER, exact]
    with pytest.raises(SessionError) as raised:
        list(read_lines(io.BytesIO(HEADER + b"y" + exact), chunk=64, max_line=BOUND))
    assert raised.value.line == 2


@pytest.fixture
def huge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(source, "MAX_LINE_BYTES", BOUND)
    path = tmp_path / "huge.jsonl"
    path.write_bytes(HEADER + b'{"type":"custom","id":"a1","parentId":null}\n' + b"z" * (20 * BOUND))
    return path


def test_load_check_and_lint_refuse_a_line_over_the_bound(huge: Path) -> None:
    with pytest.raises(SessionError) as raised:
        load_session(huge)
    assert (raised.value.path, raised.value.line, raised.value.code) == (str(huge), 3, "line-too-long")
    check = run("check", huge, "--context-window", "200000")
    assert check.code == 2 and f"picompact: error: {huge}:3: line is longer than 1,000 bytes" in check.stderr
    lint = run("lint", huge, "--json")
    assert lint.code == 2
    (report,) = lint.json["files"]
    assert not report["readable"] and report["findings"][0]["code"] == "line-too-long"


def test_the_line_number_counts_the_indexed_prefix(huge: Path) -> None:
    data = huge.read_bytes()
    huge.write_bytes(data[: -20 * BOUND])
    load_session(huge, cache=True)  # an index of the first two lines
    with open(huge, "ab") as f:
        f.write(b'{"type":"custom","id":"a2","parentId":"a1"}\n' + b"z" * (2 * BOUND))
    for cache in (True, False):
        with pytest.raises(SessionError) as raised:
            load_session(huge, cache=cache)
        assert raised.value.line == 4
