"""Load warnings on stderr: one line each naming FILE:LINE, in line order, and a count after the first 20."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


def test_many_bad_lines_give_twenty_warnings_and_a_count(tmp_path: Path) -> None:
    good = simple_session(turns=1).to_bytes().split(b"\n")
    bad = [b"{broken %d" % i for i in range(5000)] + [b"[1]", b"7"]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([good[0], *bad, *good[1:]]))
    result = run("list", path)
    assert result.code == 0
    warnings = [line for line in result.stderr.splitlines() if line.startswith("picompact: warning:")]
    assert len(warnings) == 21
    numbers = [int(m.group(1)) for w in warnings[:20] if (m := re.search(rf"{re.escape(str(path))}:(\d+):", w))]
    assert numbers == list(range(2, 22))  # line order, each naming its line
    assert "4,982 more problems not shown" in warnings[-1]
    assert "malformed-line x4,980" in warnings[-1] and "non-object-line x2" in warnings[-1]


def test_warnings_come_in_line_order(tmp_path: Path) -> None:
    lines = simple_session(turns=2).to_bytes().split(b"\n")
    lines.insert(3, b"null")
    lines.insert(2, b"{nope")
    lines.append(b'{"type":"label","id":"dup","parentId":null}')
    lines.append(b'{"type":"label","id":"dup","parentId":null}')
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines))
    result = run("list", path)
    numbers = [int(n) for n in re.findall(rf"{re.escape(str(path))}:(\d+):", result.stderr)]
    assert numbers == sorted(numbers) and len(numbers) >= 3
