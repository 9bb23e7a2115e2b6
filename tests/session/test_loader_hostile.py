"""The loader on hostile input: what Pi reads, picompact reads; what it cannot, it says, naming file and line.

Pi's answers come from the oracle (Pi 1.6's own session manager); those tests skip cleanly without it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_compact.errors import NotFoundError, PiCompactError, SessionError
from pi_compact.js import js_to_number
from pi_compact.session import get_branch, load_session
from pi_compact.session.jsonline import (
    COUNT_BELOW,
    DEEP_MARKER,
    MAX_DEPTH,
    cut_depth,
    nests_deeper,
    parse_iterative,
    parse_line,
)
from pi_compact.session.write import migrated_lines
from tests.helpers.sessions import SessionBuilder, simple_session
from tests.oracle import NOT_INSTALLED, ask_oracle, oracle_for_comparison, oracle_installed

needs_oracle = pytest.mark.skipif(not oracle_installed(), reason=NOT_INSTALLED)


def pi_analyze(path: Path) -> dict[str, Any]:
    proc = ask_oracle("analyze", path, "--brief")
    assert proc.returncode == 0, proc.stdout[-2000:]
    return orjson.loads(proc.stdout)


def tree_session(version: Any) -> SessionBuilder:
    """Two branches from one root: flattening would put both on one branch."""
    sb = SessionBuilder()
    if version is ...:
        del sb.header["version"]
    else:
        sb.header["version"] = version
    root = sb.user("root question")
    sb.assistant("first answer")
    sb.user("abandoned branch")
    sb.assistant("abandoned answer")
    sb.user("second try", parent=root)
    sb.assistant("second answer")
    return sb


# --------------------------------------------------------------------------- header version, as JavaScript compares


@pytest.mark.parametrize("version", ["3", " 3", [3], "4", 3.5, "Infinity"])
def test_string_version_three_is_not_migrated(tmp_path: Path, version: Any) -> None:
    path = tree_session(version).write(tmp_path / "s.jsonl")
    session = load_session(path)
    assert not session.needs_migration
    branch = get_branch(session).entries
    assert len(branch) == 3 and b"abandoned" not in orjson.dumps([e.raw for e in branch])
    assert any(d.code == "version-not-number" and d.line == 1 for d in session.diagnostics) == (
        not isinstance(version, (int, float))
    )


def test_v1_header_over_entries_with_ids_is_flagged_and_never_rewritten(tmp_path: Path) -> None:
    path = tree_session(1).write(tmp_path / "s.jsonl")
    session = load_session(path)
    warning = next(d for d in session.diagnostics if d.code == "v1-with-ids")
    assert warning.level == "warning" and "flatten" in warning.message
    # The branch is the one Pi shows after its migration: every entry, in file order.
    assert len(get_branch(session).entries) == 6
    with pytest.raises(SessionError, match="flatten the tree"):
        migrated_lines(session)


@needs_oracle
@pytest.mark.parametrize("version", ["3", "2", "1", "abc", True, [3], "", ...])
def test_version_comparison_agrees_with_pi(tmp_path: Path, version: Any) -> None:
    path = tree_session(version).write(tmp_path / "s.jsonl")
    before = path.read_bytes()
    session = load_session(path)
    pi = pi_analyze(path)
    branch = get_branch(session)
    assert len(branch.entries) == pi["branchLength"]
    if not session.synthetic_ids:  # Pi makes random ids for a v1 file
        assert branch.leaf is not None and branch.leaf.id == pi["leaf"]["id"]
    # Pi rewrites a file it migrates; picompact's read never writes.
    assert path.read_bytes() == before
    migrated = session.needs_migration
    assert migrated == (pi["load"]["piRewroteFile"] and js_to_number(version if version is not ... else 1) < 3)


# --------------------------------------------------------------------------- invalid UTF-8, as Pi decodes it


def test_invalid_utf8_is_read_with_replacement_and_warned(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    data = sb.to_bytes().replace(b"Turn 1: please", b"Turn 1: \xff\xc3(please", 1)
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    session = load_session(path)
    line = next(i for i, raw in enumerate(data.split(b"\n"), 1) if b"\xff" in raw)
    warning = next(d for d in session.diagnostics if d.code == "invalid-utf8")
    assert warning.line == line and "U+FFFD" in warning.message
    entry = next(e for e in session.entries if e.line == line)
    assert entry.raw["message"]["content"].startswith("Turn 1: \ufffd\ufffd(please")
    assert path.read_bytes() == data


@needs_oracle
def test_invalid_utf8_branch_agrees_with_pi(tmp_path: Path) -> None:
    data = simple_session(turns=2).to_bytes().replace(b"Reading mod1", b"Reading \xe2\x28\xa1mod1", 1)
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    session = load_session(path)
    pi = pi_analyze(path)
    assert len(get_branch(session).entries) == pi["branchLength"]
    assert get_branch(session).leaf.id == pi["leaf"]["id"]  # type: ignore[union-attr]


def test_migration_refuses_a_line_read_with_replacement(tmp_path: Path) -> None:
    sb = simple_session(turns=1)
    sb.header["version"] = 2
    path = tmp_path / "s.jsonl"
    path.write_bytes(sb.to_bytes().replace(b"Turn 0", b"Turn \xff", 1))
    session = load_session(path)
    assert session.needs_migration
    with pytest.raises(SessionError, match="not valid UTF-8") as info:
        migrated_lines(session)
    assert info.value.line == next(d.line for d in session.diagnostics if d.code == "invalid-utf8")


# --------------------------------------------------------------------------- nesting deeper than orjson follows


def deep_value(depth: int) -> bytes:
    return b"[" * depth + b"1" + b"]" * depth


@pytest.mark.parametrize("depth", [1, 5, 1025, 100_000])
def test_iterative_parser_reads_any_depth(depth: int) -> None:
    value = parse_iterative(deep_value(depth).decode())
    for _ in range(depth):
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert value == 1


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, -3e2, true, false, null, "x\\u00e9\\ud800"], "b": {}, "c": []}',
        '"plain"',
        "  [ ]  ",
        '{"dup": 1, "dup": 2}',
        "123456789012345678901234567890",
    ],
)
def test_iterative_parser_agrees_with_json(text: str) -> None:
    assert parse_iterative(text) == json.loads(text)


@pytest.mark.parametrize("text", ["[1,]", '{"a":1,}', "1 2", "NaN", "[", '{"a"}', "tru", '"\x01"', "01"])
def test_iterative_parser_refuses_what_json_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_iterative(text)


def test_deep_line_is_loaded_with_the_deep_part_marked(tmp_path: Path) -> None:
    sb = simple_session(turns=1)
    leaf = sb.leaf
    lines = sb.to_bytes()
    deep = (
        b'{"type":"custom","id":"deep0001","parentId":"'
        + leaf.encode()  # type: ignore[union-attr]
        + b'","customType":"x","data":'
        + deep_value(100_000)
        + b"}\n"
    )
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines + deep)
    session = load_session(path)
    line = lines.count(b"\n") + 1
    warning = next(d for d in session.diagnostics if d.code == "deep-nesting")
    assert warning.line == line
    branch = get_branch(session)
    assert branch.leaf is not None and branch.leaf.id == "deep0001"
    value = branch.leaf.raw["data"]
    depth = 1
    while isinstance(value, list):
        value = value[0]
        depth += 1
    assert value == DEEP_MARKER and depth == MAX_DEPTH  # containers, the entry object included


def test_parse_line_marks_orjson_depth_values_too() -> None:
    parsed = parse_line(b'{"a":' + deep_value(600) + b"}")
    assert parsed.depth_cut


def _exact_depth(value: Any) -> int:
    """Levels of dicts and lists, ``value`` itself at level 1 (0 for a scalar)."""
    if isinstance(value, dict):
        return 1 + max(map(_exact_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_exact_depth, value), default=0)
    return 0


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 600])
@pytest.mark.parametrize("padding", [0, COUNT_BELOW * 2])
def test_deep_lines_long_and_short_are_cut_alike(tmp_path: Path, depth: int, padding: int) -> None:
    """Long lines are bounded by walking the parsed value, short ones by counting brackets: the same lines are cut."""
    sb = simple_session(turns=1)
    nested = b"[" * (depth - 1) + b'["' + b"x" * padding + b'"]' + b"]" * (depth - 1)
    line = b'{"type":"custom","id":"deep0002","parentId":"' + sb.leaf.encode() + b'","data":' + nested + b"}\n"  # type: ignore[union-attr]
    path = tmp_path / "s.jsonl"
    path.write_bytes(sb.to_bytes() + line)
    session = load_session(path)
    cut = [d.line for d in session.diagnostics if d.code == "deep-nesting"]
    expected = cut_depth(orjson.loads(line))
    assert bool(cut) == expected[1] == (depth + 1 > MAX_DEPTH)  # the entry object is one more level
    assert session.entries[-1].raw == expected[0]


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, MAX_DEPTH + 2])
def test_the_shortest_deep_lines_are_cut(tmp_path: Path, levels: int) -> None:
    """A line of nothing but brackets, as short as a value of that many levels can be (a value that is not an object,
    which Pi takes as an entry): its depth is looked at, and the levels past ``MAX_DEPTH`` are cut."""
    sb = simple_session(turns=1)
    line = b"[" * levels + b"]" * levels  # the last line, without a newline: not one byte to spare
    path = tmp_path / "s.jsonl"
    path.write_bytes(sb.to_bytes() + line)
    session = load_session(path)
    cut = [d.line for d in session.diagnostics if d.code == "deep-nesting"]
    was_cut = cut_depth(orjson.loads(line))[1]
    assert was_cut == (levels > MAX_DEPTH + 1)  # the innermost list is empty: only a 202nd level is cut
    assert cut == ([sb.to_bytes().count(b"\n") + 1] if was_cut else [])


def test_brackets_inside_long_strings_are_not_nesting(tmp_path: Path) -> None:
    sb = simple_session(turns=1)
    sb.user("[{" * COUNT_BELOW)  # thousands of brackets, all inside one string
    path = tmp_path / "s.jsonl"
    path.write_bytes(sb.to_bytes())
    session = load_session(path)
    assert not [d for d in session.diagnostics if d.code == "deep-nesting"]
    assert session.entries[-1].message["content"] == "[{" * COUNT_BELOW  # type: ignore[index]


nested_json = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=2), children, max_size=3),
    max_leaves=40,
)


@given(nested_json, st.integers(min_value=1, max_value=8))
def test_nests_deeper_agrees_with_the_exact_depth(value: Any, limit: int) -> None:
    assert nests_deeper(value, limit) == (_exact_depth(value) > limit)


# --------------------------------------------------------------------------- things that are not regular files


def test_fifo_is_refused_before_opening(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SessionError, match="not a regular file") as info:
        load_session(fifo)  # would block forever if it opened the FIFO
    assert info.value.path == str(fifo)


def test_symlink_loop_and_long_name_name_the_file(tmp_path: Path) -> None:
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    with pytest.raises(PiCompactError) as info:
        load_session(loop)
    assert info.value.path == str(loop) and "symbolic links" in info.value.message
    long = tmp_path / ("x" * 300 + ".jsonl")
    with pytest.raises(PiCompactError) as info:
        load_session(long)
    assert info.value.path == str(long) and "too long" in info.value.message


def test_dangling_symlink_is_not_found(tmp_path: Path) -> None:
    link = tmp_path / "s.jsonl"
    link.symlink_to(tmp_path / "gone.jsonl")
    with pytest.raises(NotFoundError):
        load_session(link)


def test_grep_finds_replacement_characters_the_raw_bytes_lack(tmp_path: Path) -> None:
    from pi_compact.search.grepping import GrepQuery, grep
    from pi_compact.search.transcript import build_transcript

    data = simple_session(turns=2).to_bytes().replace(b"Reading mod1", b"Reading \xff mod1", 1)
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    transcript = build_transcript(load_session(path))
    for pattern, fixed in (("\ufffd mod1", True), ("Reading \ufffd", False)):
        page = grep(transcript, GrepQuery.of(pattern, fixed=fixed))
        assert [m.line.text for m in page.matches] == ["Reading \ufffd mod1"]


# --------------------------------------------------------------------------- a compaction keeping from elsewhere


def pi_context(path: Path) -> dict[str, Any]:
    proc = ask_oracle("context", path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    return orjson.loads(proc.stdout)


@pytest.mark.parametrize("first_kept", ["elsewhere", None, "side"])
def test_first_kept_entry_off_the_branch_is_warned(tmp_path: Path, first_kept: str | None) -> None:
    sb = simple_session(turns=2)
    fork = sb.entries[3]["id"]
    main = sb.leaf
    if first_kept == "side":
        first_kept = sb.add({"type": "message", "message": {"role": "user", "content": "side"}}, parent=fork)
    sb.add({"type": "compaction", "summary": "S", "firstKeptEntryId": first_kept, "tokensBefore": 10}, parent=main)
    sb.user("after")
    path = sb.write(tmp_path / "s.jsonl")
    session = load_session(path)
    branch = get_branch(session)
    warning = next(d for d in branch.diagnostics if d.code == "first-kept-not-on-branch")
    assert warning.line == len(sb.entries)  # the compaction's line (header is line 1)
    assert "drops all" in warning.message
    if oracle_for_comparison():
        from pi_compact.search.context import build_context_view

        view = build_context_view(session)
        assert sum(1 for m in view.messages if m.position >= 0) == pi_context(path)["count"] == 2


def test_compaction_keeping_from_itself_or_the_branch_is_not_warned(tmp_path: Path) -> None:
    sb = simple_session(turns=2)
    kept = sb.entries[-2]["id"]
    sb.add({"type": "compaction", "summary": "S", "firstKeptEntryId": kept, "tokensBefore": 10})
    sb.add({"type": "compaction", "id": "self0001", "summary": "S", "firstKeptEntryId": "self0001", "tokensBefore": 1})
    branch = get_branch(load_session(sb.write(tmp_path / "s.jsonl")))
    assert not [d for d in branch.diagnostics if d.code == "first-kept-not-on-branch"]


@pytest.mark.parametrize("last", [b"[1,2]", b"42", b'"text"', b'{"type":"message","parentId":null,"message":{}}'])
def test_a_last_entry_without_id_is_warned_as_pi_finds_no_leaf(tmp_path: Path, last: bytes) -> None:
    path = tmp_path / "s.jsonl"
    data = simple_session(turns=1).to_bytes() + last + b"\n"
    path.write_bytes(data)
    session = load_session(path)
    warning = next(d for d in session.diagnostics if d.code == "leaf-without-id")
    assert warning.line == data.count(b"\n") and "no leaf" in warning.message
    if oracle_for_comparison():
        pi = pi_analyze(path)
        assert pi["leaf"] is None and pi["branchLength"] == 0


@pytest.mark.parametrize("where", ["middle", "last"])
def test_a_second_session_header_is_left_out_of_the_tree_as_pi_does(tmp_path: Path, where: str) -> None:
    lines = simple_session(turns=2).to_bytes().split(b"\n")[:-1]
    extra = b'{"type":"session","version":3,"id":"other","parentId":"' + orjson.loads(lines[-1])["id"].encode() + b'"}'
    at = 4 if where == "middle" else len(lines)
    lines.insert(at, extra)
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    session = load_session(path)
    assert all(e.type != "session" for e in session.entries) and "other" not in session.by_id
    warning = next(d for d in session.diagnostics if d.code == "extra-header")
    assert warning.line == at + 1
    if oracle_for_comparison():
        pi = pi_analyze(path)
        branch = get_branch(session)
        assert len(branch.entries) == pi["branchLength"] and len(session.entries) == pi["entryCount"]
        assert branch.leaf is not None and branch.leaf.id == pi["leaf"]["id"]
