"""The facts of an output are found by searches over its text, not a test of each line: they must be the facts a
plain reading of each line gives. Each search is compared with that reading on generated outputs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_compact.checkpoint.verbatim.facts import _TEST_LINE, TEST_TAIL_LINES, outcome_lines

_LINE = st.sampled_from(
    [
        "FAILED tests/t.py::test_x - AssertionError",
        "  FAIL src/a.test.ts",
        "ERROR tests/t.py::test_y",
        "tests/t.py::test_z FAILED",
        "tests/t.py::test_w ... ERROR",
        "test_a (pkg.mod.Case) ... FAIL",
        "--- FAIL: TestRound (0.00s)",
        "not ok 3 - rounds",
        "✗ rounds to two places",
        " × broken",
        "==== 1 failed, 120 passed in 3.21s ====",
        "12 passing",
        "2026-01-08T10:49:37Z ERROR worker-1 retry 56544 failed: connection reset",
        "tests/test_loader.py::test_case_22669 PASSED",
        "FAILED",
        "FAIL\t",
        "",
        "   ",
        "\u2028 FAIL x",
        "FAIL " + "y" * 394,  # 399 characters: matched
        "FAIL " + "y" * 395,  # 400: too long
    ]
) | st.text(
    alphabet=st.sampled_from(["F", "A", "I", "L", "E", "R", "O", " ", "\t", ":", "x", "1", "✗", "é"]), max_size=30
)


def _reference(text: str) -> list[str]:
    lines = text.split("\n")[-TEST_TAIL_LINES:]
    return [line.strip() for line in lines if len(line) < 400 and _TEST_LINE.match(line)]


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(_LINE, max_size=40), filler=st.integers(0, 450), trailing=st.booleans())
def test_outcome_lines_are_the_tail_lines_a_runners_outcome_matches(
    lines: list[str], filler: int, trailing: bool
) -> None:
    # ``filler`` lines before them move the 400-line window over some of the generated ones.
    text = "\n".join(["FAIL old"] * filler + lines) + ("\n" if trailing else "")
    assert outcome_lines(text) == _reference(text)
