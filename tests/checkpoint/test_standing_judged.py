"""V31: the standing-instructions block judged against a hand-made set: what a reader can act on must be there
(recall), and nothing else: no fragment that leans on a sentence left out, no line repeating another (precision).

Each case is a session's compacted user messages and the instructions a careful reader would list, each named by a
phrase its line must hold. A line of the block is right when it holds the phrase of an instruction not matched
yet; a line that holds none (a fragment, a request) or only phrases already matched (a repeat, a template not
merged) is wrong. ``python -m tests.checkpoint.test_standing_judged`` prints the figures (with the ``pi_compact``
on ``PYTHONPATH``: the same set measures another tree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.verbatim.standing import render_standing, standing_instructions


@dataclass(frozen=True)
class Case:
    name: str
    messages: tuple[str, ...]
    expected: tuple[str, ...]  # one phrase per instruction a reader can act on


CASES = (
    Case(
        "rules, constraints, preferences",
        (
            "Build a CSV export for the weather stations.",
            "Never modify data/ledger.db, that's the production ledger.",
            "It must stay compatible with Python 3.9, the build hosts still run it.",
            "Please don't touch deploy/prod.env, it holds the live credentials.",
            "Always run scripts/verify.sh before you call anything done.",
            "I prefer small commits, one change each.",
            "Keep docstrings in the numpydoc style please.",
        ),
        (
            "Build a CSV export",
            "Never modify data/ledger.db",
            "compatible with Python 3.9",
            "deploy/prod.env",
            "scripts/verify.sh",
            "small commits",
            "numpydoc",
        ),
    ),
    Case(
        "fragments with their antecedent",
        (
            "Fix the importer.",
            "The nightly migration already ran on staging. Do not redo it.",
            "The station list in config/stations.yaml keeps growing. Keep them sorted alphabetically.",
            "We deploy from the release branch. Never push to it directly.",
            "The export lives in src/export/csv.py. Don't change it without asking me first.",
        ),
        (
            "Fix the importer",
            "migration already ran on staging. Do not redo it",
            "stations.yaml keeps growing. Keep them sorted",
            "release branch. Never push to it",
            "src/export/csv.py. Don't change it",
        ),
    ),
    Case(
        "fragments alone",
        (
            "Look at the flaky test in tests/test_sync.py.",
            "do not redo it.",
            "Both are needed to reproduce it.",
            "Keep them sorted alphabetically.",
            "Don't change it without asking me first.",
            "Never push to it directly.",
            "That must not happen again.",
            "OK, good. Do not redo it.",
            "From now on, do it that way.",
            "I pasted two logs above. Both are needed to reproduce it.",
        ),
        ("flaky test",),
    ),
    Case(
        "one template, nineteen messages",
        (
            "Migrate the components to the v2 schema one by one.",
            *(f"Do not adopt the v2 schema for component-{n:03d}; it is frozen." for n in range(1, 20)),
            "Never use Redux in the dashboard.",
            "Never use MobX in the dashboard.",
            "Never use Zustand in the dashboard.",
        ),
        ("Migrate the components", "adopt the v2 schema for component-", "in the dashboard"),
    ),
    Case(
        "values and corrections",
        (
            "Speed up the forecast API.",
            "The dev server listens on port 4100.",
            "For reference, the upstream timeout is 2500 ms.",
            "no, make it 4317",
            "The forecast bucket got renamed to wx-forecast-data.",
        ),
        # the bare correction corrects the message right before it: the timeout, not the port
        (
            "Speed up the forecast API",
            "port 4100",
            '4317 (supersedes [u2] "For reference, the upstream timeout is 2500',
            "wx-forecast-data",
        ),
    ),
    Case(
        "requests and remarks",
        (
            "Add a --verbose flag to the CLI.",
            "Now add tests for the refund edge cases (zero, negative, very large values).",
            "Can you check why it fails?",
            "Thanks, that works.",
            "Same for the other one.",
            "Error: ENOENT: no such file or directory, open '/repo/package.json'",
            "Run the full test suite and fix whatever is red.",
            "Rules: never commit generated files. Never edit vendor/ by hand. Always sign commits.",
        ),
        ("--verbose flag", "never commit generated files", "Never edit vendor/", "Always sign commits"),
    ),
)


# Written after the cases above and measured once before the code saw it (precision 5/6, recall 5/9), then the
# misses fixed: a pronoun the rule acts on ("never restart it"), a short antecedent ("We tag releases by hand."),
# "make sure it doesn't …", a one-digit value.
CASES += (
    Case(
        "second set",
        (
            "Port the scheduler to asyncio.",
            "The staging cluster is shared with the data team. Never restart it during office hours.",
            "Leave it as is.",
            "We tag releases by hand. Don't automate that.",
            "Never log request bodies, they contain customer emails.",
            "These are flaky on CI. Skip them for now.",
            "Always use UTC timestamps in the logs.",
            "Don't bother with that.",
            "I'd rather you use pathlib than os.path.",
            "The retry limit should be 5.",
            "Make sure it doesn't break the old clients.",
            "Do not upgrade numpy; the models were trained with 1.24.",
        ),
        (
            "Port the scheduler",
            "shared with the data team. Never restart it during office hours",
            "We tag releases by hand. Don't automate that",
            "request bodies",
            "UTC timestamps",
            "pathlib",
            "retry limit should be 5",
            "break the old clients",
            "numpy",
        ),
    ),
)


@dataclass(frozen=True)
class Score:
    right: int  # lines that hold an instruction not matched before
    lines: int
    found: int  # instructions some line holds
    expected: int

    @property
    def precision(self) -> float:
        return self.right / self.lines if self.lines else 1.0

    @property
    def recall(self) -> float:
        return self.found / self.expected if self.expected else 1.0


def block_lines(block: str) -> list[str]:
    return [line for line in block.split("\n") if line.startswith("- [")]


def score_case(case: Case, render: Callable[[Sequence[tuple[str, str]]], str]) -> Score:
    messages = [(f"u{n}", text) for n, text in enumerate(case.messages)]
    lines = block_lines(render(messages))
    matched: set[str] = set()
    right = 0
    for line in lines:
        new = [phrase for phrase in case.expected if phrase in line and phrase not in matched]
        if new:
            right += 1
            matched.update(new)
    return Score(right, len(lines), len(matched), len(case.expected))


def default_render(messages: Sequence[tuple[str, str]]) -> str:
    return render_standing(standing_instructions(messages))


def total(render: Callable[[Sequence[tuple[str, str]]], str] = default_render) -> Score:
    scores = [score_case(case, render) for case in CASES]
    return Score(
        sum(s.right for s in scores),
        sum(s.lines for s in scores),
        sum(s.found for s in scores),
        sum(s.expected for s in scores),
    )


def test_v31_every_instruction_of_the_judged_set_is_found() -> None:
    for case in CASES:
        score = score_case(case, default_render)
        assert score.found == score.expected, (
            case.name,
            default_render([(f"u{n}", t) for n, t in enumerate(case.messages)]),
        )


def test_v31_no_fragment_repeat_or_request_in_the_block() -> None:
    for case in CASES:
        score = score_case(case, default_render)
        assert score.right == score.lines, (
            case.name,
            default_render([(f"u{n}", t) for n, t in enumerate(case.messages)]),
        )


def test_v31_a_template_is_one_line_listing_its_variants() -> None:
    case = CASES[3]
    block = default_render([(f"u{n}", t) for n, t in enumerate(case.messages)])
    assert "- [u1..u19] Do not adopt the v2 schema for component-{001..019} (19 messages)" in block
    assert "- [u20, u21, u22] Never use {Redux, MobX, Zustand} in the dashboard. (3 messages)" in block


def test_v31_the_judged_figures() -> None:
    score = total()
    assert (score.precision, score.recall) == (1.0, 1.0)


if __name__ == "__main__":
    s = total()
    print(f"lines {s.lines}, right {s.right}: precision {s.precision:.0%}")
    print(f"instructions {s.expected}, found {s.found}: recall {s.recall:.0%}")
    for case in CASES:
        c = score_case(case, default_render)
        print(f"  {case.name}: {c.right}/{c.lines} lines right, {c.found}/{c.expected} found")
