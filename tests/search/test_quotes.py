"""The quote and citation rules: what counts as a quote, what counts as found, which ids are citations."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_compact.search.quotes import MIN_QUOTE_CHARS, find_citations, find_quotes, normalize, verify_quotes
from pi_compact.search.transcript import Transcript, build_transcript
from pi_compact.session.load import load_session
from tests.helpers.lookup_agent import BUILD_ERROR, History, build_history


@pytest.fixture
def story(tmp_path: Path) -> tuple[History, Transcript]:
    history = build_history(tmp_path / "s.jsonl")
    return history, build_transcript(load_session(history.path))


def verdicts(transcript: Transcript, answer: str) -> list[tuple[str, str, bool]]:
    return [(q.kind, q.text, q.verified) for q in verify_quotes(transcript, answer)]


def test_each_kind_of_quote_is_found(story: tuple[History, Transcript]) -> None:
    _, transcript = story
    answer = (
        'It said "Found 1 error." and `npm run build` ran first.\n\n'
        "> The build failed: Session has\n> no token property.\n\n"
        "```\n" + BUILD_ERROR + "\n```\n"
    )
    assert verdicts(transcript, answer) == [
        ("double_quote", "Found 1 error.", True),
        ("code", "npm run build", True),
        ("block_quote", "The build failed: Session has\nno token property.", True),
        ("code_block", BUILD_ERROR, True),
    ]


def test_quotes_not_in_the_history_are_unverified(story: tuple[History, Transcript]) -> None:
    _, transcript = story
    answer = (
        "“The build succeeded on retry” was never said; nor was `npm run deploy --prod`.\n\n"
        "```\nFound 1 error.\nFound 2 errors.\n```"
    )
    quotes = verify_quotes(transcript, answer)
    assert [(q.kind, q.verified) for q in quotes] == [("double_quote", False), ("code", False), ("code_block", False)]
    assert quotes[2].missing == ("Found 2 errors.",)  # the block's other line is there


def test_short_spans_are_not_quotations() -> None:
    short = "x" * (MIN_QUOTE_CHARS - 1)
    assert find_quotes(f'Run `npm test` or "{short}", see `{short}`.') == []
    assert len(find_quotes(f'"{short}y"')) == 1


def test_whitespace_typographic_quotes_and_elisions(story: tuple[History, Transcript]) -> None:
    _, transcript = story
    assert verdicts(transcript, 'It printed "Property   ’token’\n does not exist".') == [
        ("double_quote", "Property   ’token’\n does not exist", True)
    ]
    assert verdicts(transcript, 'Output: "running 3 suites ... 3 passing".')[0][2] is True
    # Elided parts must appear in order, within one entry.
    assert verdicts(transcript, 'Output: "3 passing … running 3 suites".')[0][2] is False
    assert verdicts(transcript, 'Mixed: "running 3 suites … Found 1 error.".')[0][2] is False
    # Case is kept.
    assert verdicts(transcript, 'It said "found 1 ERROR."')[0][2] is False


def test_tool_prefixes_in_a_quoted_block_are_ignored(story: tuple[History, Transcript]) -> None:
    history, transcript = story
    out = history.ids["build_output"]
    lines = [
        f"{out}:toolResult:4: {BUILD_ERROR}",
        f"{out}-toolResult-5- Found 1 error.",
        "--",
        "4:toolResult: Found 1 error.",
    ]
    answer = "```\n" + "\n".join(lines) + "\n```"
    assert verdicts(transcript, answer)[0][2] is True


def test_delimiters_inside_code_do_not_start_quotes(story: tuple[History, Transcript]) -> None:
    _, transcript = story
    answer = '```\necho "this is not in the history at all"\n```\n`grep "also not in history here"`'
    kinds = [q.kind for q in find_quotes(answer)]
    assert kinds == ["code_block", "code"]
    assert verdicts(transcript, 'Says "run `npm test` too." here')[0][0] == "double_quote"


def test_a_double_quote_with_backticks_also_matches_without_them(story: tuple[History, Transcript]) -> None:
    _, transcript = story
    assert verdicts(transcript, 'The call was "`npm run build`" first.') == [
        ("double_quote", "`npm run build`", True),
        ("code", "npm run build", True),
    ]


def test_a_quote_cannot_span_paragraphs() -> None:
    assert find_quotes('He said "open\n\nand later" more') == []


def test_normalize() -> None:
    assert normalize("  a\n\tb  “c” ’d’ ") == "a b \"c\" 'd'"


def test_citations(story: tuple[History, Transcript]) -> None:
    history, transcript = story
    ids = history.ids
    answer = (
        f"See ENTRY {ids['build_output']} and entries {ids['diagnosis']}, {ids['ask_tests']} and deadbeef42. "
        f"Also [ENTRY `{ids['last']}`] and the bare id {ids['warning0']}. The ENTRY header format and "
        "entry 3 are not citations."
    )
    cited = [(c.id, c.entry_id, c.exists, c.explicit) for c in find_citations(transcript, answer)]
    assert cited == [
        (ids["build_output"], ids["build_output"], True, True),
        (ids["diagnosis"], ids["diagnosis"], True, True),
        (ids["ask_tests"], ids["ask_tests"], True, True),
        ("deadbeef42", None, False, True),
        (ids["last"], ids["last"], True, True),
        (ids["warning0"], ids["warning0"], True, False),
    ]


def test_an_id_off_the_branch_is_not_a_citation_of_it(tmp_path: Path) -> None:
    from tests.helpers.sessions import SessionBuilder

    sb = SessionBuilder()
    root = sb.user("start")
    abandoned = sb.assistant("abandoned idea")
    sb.user("other way", parent=root)
    sb.assistant("kept")
    transcript = build_transcript(load_session(sb.write(tmp_path / "b.jsonl")))
    [citation] = find_citations(transcript, f"It was in ENTRY {abandoned}.")
    assert citation.id == abandoned and not citation.exists
