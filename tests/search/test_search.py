"""list_entries, grep and show_entry: bounds, exact pagination, filters, branches, errors."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.errors import CursorError, NotFoundError, PatternError, SessionError, UsageError
from pi_compact.search import DEFAULT_LIMITS, entry_raw, grep, list_entries, show_entry
from pi_compact.search.grepping import GrepQuery
from pi_compact.search.transcript import build_transcript
from pi_compact.session.load import load_session, load_session_bytes
from pi_compact.session.tree import children, get_branch
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SessionBuilder


def busy_session() -> SessionBuilder:
    """Entries with several matching lines each, some long, in every section."""
    sb = SessionBuilder()
    for i in range(12):
        sb.user(f"turn {i}: error in step {i}\nplain line\nanother error here")
        sb.assistant(
            f"I see error {i}",
            thinking=f"the error might be {i}\nor not an error",
            tool_calls=[(f"c{i}", "bash", {"command": f"make test-{i} 2>&1 | grep error"})],
        )
        output = "\n".join(f"log {j}: {'error' if j % 3 == 0 else 'ok'} " + "x" * (j * 37 % 900) for j in range(25))
        sb.tool_result(f"c{i}", "bash", output)
    return sb


@pytest.fixture(scope="module")
def busy() -> object:
    return build_transcript(load_session_bytes(busy_session().to_bytes()))


def all_pages(fetch, first_cursor=None):
    pages = []
    cursor = first_cursor
    while True:
        page = fetch(cursor)
        pages.append(page)
        cursor = page.next_cursor
        if cursor is None:
            return pages
        assert len(pages) < 10_000


# -- grep ---------------------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    max_count=st.integers(1, 30),
    max_chars=st.integers(1, 4000),
    context=st.integers(0, 3),
    section=st.sampled_from([None, ["toolResult"], ["text", "thinking"]]),
)
def test_v29_grep_pages_cover_every_match_exactly_once(busy, max_count, max_chars, context, section) -> None:
    everything = grep(
        busy, GrepQuery.of("error", sections=section, context=context), max_count=100_000, max_chars=100_000_000
    )
    assert everything.next_cursor is None
    pages = all_pages(
        lambda c: grep(
            busy,
            GrepQuery.of("error", sections=section, context=context),
            max_count=max_count,
            max_chars=max_chars,
            cursor=c,
        )
    )
    got = [(m.entry_id, m.line.number) for p in pages for m in p.matches]
    want = [(m.entry_id, m.line.number) for m in everything.matches]
    assert got == want
    assert len(set(got)) == len(got)
    for page in pages:
        assert 1 <= len(page.matches) <= max_count
        cost = sum(len(x.text) for m in page.matches for x in (*m.before, m.line, *m.after))
        assert len(page.matches) == 1 or cost <= max_chars
        assert (page.stopped_by is None) == (page.next_cursor is None)


def test_grep_on_a_real_session_pages_equal_one_big_page() -> None:
    transcript = build_transcript(load_session(PI_FIXTURES / "gen-medium-101.jsonl"))
    everything = grep(
        transcript, GrepQuery.of("error|fail", ignore_case=True), max_count=100_000, max_chars=100_000_000
    )
    pages = all_pages(lambda c: grep(transcript, GrepQuery.of("error|fail", ignore_case=True), max_count=37, cursor=c))
    assert [(m.entry_id, m.line.number) for p in pages for m in p.matches] == [
        (m.entry_id, m.line.number) for m in everything.matches
    ]
    assert len(pages) > 2


def test_grep_context_lines_are_attributed_and_not_repeated(busy) -> None:
    page = grep(busy, GrepQuery.of("error", context=2, roles=["toolResult"]), max_count=1000, max_chars=10**9)
    shown: dict[str, list[int]] = {}
    for match in page.matches:
        numbers = [c.number for c in match.before] + [match.line.number] + [c.number for c in match.after]
        assert numbers == list(range(numbers[0], numbers[-1] + 1))
        assert all(c.section in ("header", "toolResult") for c in (*match.before, *match.after))
        shown.setdefault(match.entry_id, []).extend(numbers)
    for numbers in shown.values():
        assert len(numbers) == len(set(numbers))
    first = page.matches[0]
    assert [c.section for c in first.before] == ["header", "toolResult"]


def test_grep_filters_by_role_and_section(busy) -> None:
    roles = grep(busy, GrepQuery.of("error", roles=["user"]), max_count=1000)
    assert roles.matches and {m.role for m in roles.matches} == {"user"}
    thinking = grep(busy, GrepQuery.of("error", sections=["thinking"]), max_count=1000)
    assert thinking.matches and {m.line.section for m in thinking.matches} == {"thinking"}
    with pytest.raises(UsageError, match="unknown section"):
        grep(busy, GrepQuery.of("error", sections=["bogus"]))
    with pytest.raises(UsageError, match="unknown role"):
        grep(busy, GrepQuery.of("error", roles=["robot"]))


def test_long_lines_show_a_window_around_the_match() -> None:
    sb = SessionBuilder()
    huge = "q" * 1_000_000 + " THE-NEEDLE " + "r" * 500_000
    entry = sb.tool_result("c", "read", "short\n" + huge)
    page = grep(load_session_bytes(sb.to_bytes()), "THE-NEEDLE")
    (match,) = page.matches
    line = match.line
    assert match.entry_id == entry and line.length == len(huge) and line.truncated
    assert len(line.text) == DEFAULT_LIMITS.line_chars
    assert line.offset <= 1_000_001 < line.offset + len(line.text)
    start, end = line.submatches[0]
    assert line.text[start:end] == "THE-NEEDLE"
    assert huge[line.offset : line.offset + len(line.text)] == line.text


def test_catastrophic_pattern_times_out_with_a_clear_error() -> None:
    sb = SessionBuilder()
    sb.user("a" * 40 + "!")
    limits = replace(DEFAULT_LIMITS, regex_timeout=0.05)
    with pytest.raises(PatternError, match=r"took more than 0\.05s"):
        grep(load_session_bytes(sb.to_bytes()), "(a|a)+$", limits=limits)


def test_invalid_regex_names_the_position(busy) -> None:
    with pytest.raises(PatternError, match=r"at position 6: missing \)"):
        grep(busy, "error(")
    assert grep(busy, GrepQuery.of("error(", fixed=True)).matches == ()


def test_grep_cursor_is_refused_for_another_query_or_a_changed_file(tmp_path: Path) -> None:
    path = busy_session().write(tmp_path / "s.jsonl")
    transcript = build_transcript(load_session(path))
    page = grep(transcript, "error", max_count=2)
    assert page.next_cursor
    with pytest.raises(CursorError, match="different"):
        grep(transcript, "ERROR", max_count=2, cursor=page.next_cursor)
    with pytest.raises(CursorError, match=r"continues a `grep` command, not `list`"):
        list_entries(transcript, cursor=page.next_cursor)
    with pytest.raises(CursorError, match="malformed"):
        grep(transcript, "error", cursor="not a cursor!")
    with pytest.raises(CursorError, match="malformed"):
        grep(transcript, "error", cursor=page.next_cursor[:-6])
    # Same query on the unchanged file: fine, and deterministic.
    again = build_transcript(load_session(path))
    assert grep(again, "error", max_count=2).next_cursor == page.next_cursor
    assert grep(again, "error", max_count=2, cursor=page.next_cursor).matches
    # Pi appends an entry: the cursor no longer applies.
    with path.open("ab") as f:
        f.write(b'{"type":"label","id":"feedface","parentId":null,"timestamp":"2026-01-02T00:00:00Z","label":"x"}\n')
    changed = build_transcript(load_session(path))
    with pytest.raises(CursorError, match="session changed"):
        grep(changed, "error", max_count=2, cursor=page.next_cursor)


def test_grep_all_branches_labels_entries_with_their_branch() -> None:
    session = load_session(PI_FIXTURES / "gen-branchy-101.jsonl")
    current = build_transcript(session)
    everywhere = build_transcript(session, all_branches=True)
    off = next(e for e in everywhere.entries if not everywhere.on_branch(e) and e.role == "user")
    probe = off.message["content"]
    probe = probe if isinstance(probe, str) else probe[0]["text"]
    probe = probe.split("\n")[0][:40]
    on_branch_hits = {m.entry_id for m in grep(current, GrepQuery.of(probe, fixed=True), max_count=1000).matches}
    assert off.id not in on_branch_hits
    hits = [
        m for m in grep(everywhere, GrepQuery.of(probe, fixed=True), max_count=1000).matches if m.entry_id == off.id
    ]
    assert hits and not hits[0].on_branch
    leaf = hits[0].branch
    assert leaf is not None and leaf != current.leaf.id
    assert not children(session).get(leaf)  # a real leaf ...
    assert off.id in {e.id for e in get_branch(session, leaf).entries}  # ... whose branch holds the entry
    on = grep(everywhere, GrepQuery.of(r"^ENTRY", sections=["header"]), max_count=100_000).matches
    assert {m.branch for m in on if m.on_branch} == {current.leaf.id}
    assert len(on) == len(session.by_id)


# -- list ---------------------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.integers(1, 12), roles=st.sampled_from([None, ["user"], ["assistant,toolResult"], ["message"]]))
def test_list_pages_cover_every_entry_exactly_once(busy, limit, roles) -> None:
    pages = all_pages(lambda c: list_entries(busy, roles=roles, limit=limit, cursor=c))
    got = [e.id for p in pages for e in p.entries]
    wanted = [
        e.id
        for e in busy.entries
        if roles is None or e.type in ",".join(roles).split(",") or e.role in ",".join(roles).split(",")
    ]
    assert got == wanted
    assert all(p.total == len(wanted) for p in pages)
    assert all(len(p.entries) <= limit for p in pages)


def test_list_entry_fields(busy) -> None:
    page = list_entries(busy, limit=3)
    first = page.entries[0]
    assert first.role == "user" and first.type == "message"
    assert first.preview == "turn 0: error in step 0"
    assert first.size == busy.entries[0].length and first.line == 2
    assert first.on_branch and first.branch == busy.leaf.id
    assert page.entries[1].preview == "I see error 0"
    assert page.entries[2].preview.startswith("bash ok: log 0: error")
    medium = list_entries(load_session(PI_FIXTURES / "gen-medium-101.jsonl"))
    assert len(medium.entries) == DEFAULT_LIMITS.list_limit and medium.next_cursor


def test_list_since_filters_by_entry_time(busy) -> None:
    times = sorted(e.timestamp for e in busy.entries)
    middle = times[len(times) // 2]
    page = list_entries(busy, since=middle, limit=1000)
    assert page.entries and all(e.timestamp >= middle for e in page.entries)
    assert page.total == sum(1 for t in times if t >= middle)
    with pytest.raises(UsageError, match="--since"):
        list_entries(busy, since="last tuesday")


def test_list_since_an_age_pages_with_its_cursor(busy) -> None:
    from datetime import UTC, datetime

    first = list_entries(busy, since="30d", limit=5, now=datetime(2026, 1, 5, tzinfo=UTC))
    assert len(first.entries) == 5 and first.next_cursor
    later = datetime(2026, 1, 5, 0, 0, 7, tzinfo=UTC)  # the clock moved on between pages
    second = list_entries(busy, since="30d", limit=5, cursor=first.next_cursor, now=later)
    assert second.entries[0].id == busy.entries[5].id
    assert list_entries(busy, since="1h", now=datetime(2026, 1, 5, tzinfo=UTC)).entries == ()


# -- show ---------------------------------------------------------------------------------------------------------


def huge_entry_session() -> tuple[SessionBuilder, str]:
    sb = SessionBuilder()
    sb.user("hello")
    lines = [("w" * (i * 211 % 5000)) + f" #{i}" for i in range(300)]
    lines[150] = "L" * 70_000  # longer than a page
    entry = sb.tool_result("c", "read", "\n".join(lines))
    return sb, entry


@settings(max_examples=25, deadline=None)
@given(max_chars=st.integers(3000, 30_000))
def test_show_pages_reassemble_the_entry_exactly(max_chars) -> None:
    sb, entry_id = huge_entry_session()
    transcript = build_transcript(load_session_bytes(sb.to_bytes()))
    rendered = transcript.render(transcript.find(entry_id))
    pages = all_pages(lambda c: show_entry(transcript, entry_id, cursor=c, max_chars=max_chars))
    rebuilt: dict[int, str] = {}
    for number, page in enumerate(pages, 1):
        assert page.page == number and page.pages == len(pages)
        assert sum(len(x.text) + 1 for x in page.lines) <= max_chars + 1 or len(page.lines) == 1
        for line in page.lines:
            assert len(rebuilt.get(line.number, "")) == line.offset
            rebuilt[line.number] = rebuilt.get(line.number, "") + line.text
            assert line.section == rendered.sections[line.number - 1]
    assert [rebuilt[i + 1] for i in range(len(rendered.lines))] == list(rendered.lines)
    # --page N gives the same pages as following cursors.
    for number in {1, len(pages), (len(pages) + 1) // 2}:
        assert show_entry(transcript, entry_id, page=number, max_chars=max_chars) == pages[number - 1]


def test_show_default_page_is_bounded() -> None:
    sb, entry_id = huge_entry_session()
    page = show_entry(load_session_bytes(sb.to_bytes()), entry_id)
    assert page.pages > 1 and page.next_cursor
    assert sum(len(x.text) + 1 for x in page.lines) <= DEFAULT_LIMITS.show_chars + 1
    with pytest.raises(UsageError, match="has"):
        show_entry(load_session_bytes(sb.to_bytes()), entry_id, page=page.pages + 1)


def test_show_unknown_id_suggests_the_nearest() -> None:
    transcript = build_transcript(load_session(PI_FIXTURES / "gen-small-101.jsonl"))
    ids = [e.id for e in transcript.entries]
    real = next(i for i in ids if sum(1 for j in ids if j[:4] == i[:4]) == 1)
    typo = real[:-1] + ("0" if real[-1] != "0" else "1")
    with pytest.raises(NotFoundError, match=f"no entry with id '{typo}' \\(did you mean {real}"):
        show_entry(transcript, typo)
    assert show_entry(transcript, real[:5]).entry.id == real  # a unique prefix is enough
    with pytest.raises(NotFoundError):
        show_entry(transcript, "zz")


def test_show_off_branch_entry_needs_all_branches() -> None:
    session = load_session(PI_FIXTURES / "gen-branchy-101.jsonl")
    current = build_transcript(session)
    off = next(e for e in session.entries if not current.on_branch(e))
    with pytest.raises(NotFoundError, match="not on the current branch"):
        show_entry(current, off.id)
    page = show_entry(build_transcript(session, all_branches=True), off.id)
    assert not page.entry.on_branch and page.lines[0].text.startswith(f"ENTRY {off.id} ")


def test_entry_raw_is_the_exact_line(tmp_path: Path) -> None:
    sb = SessionBuilder()
    entry_id = sb.user("line sep \u2028 and para \u2029 and emoji 🎉")
    path = sb.write(tmp_path / "s.jsonl")
    raw = entry_raw(load_session(path), entry_id)
    assert raw + b"\n" in path.read_bytes()
    assert "\u2028".encode() in raw
    with pytest.raises(SessionError, match="raw line"):
        entry_raw(load_session_bytes(path.read_bytes()), entry_id)  # no file behind it


def test_entry_raw_of_a_v1_session_has_no_id() -> None:
    session = load_session(PI_FIXTURES / "pi-large-session.jsonl")
    entry = session.entries[5]
    raw = entry_raw(session, entry.id)
    assert b'"id"' not in raw[:60] and raw.startswith(b'{"type":')
    with open(PI_FIXTURES / "pi-large-session.jsonl", "rb") as f:
        assert f.read().split(b"\n")[entry.line - 1] == raw
