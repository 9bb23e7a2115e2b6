"""``picompact rules`` on instructions as people write them, and ``--write``'s care: the judged corpus of
``rules_corpus.py`` (precision and recall at least 0.8 on each part), the instructions real users repeat across
sessions found from sessions, the evidence shown before each question, ``--dry-run``'s diff, and the lines refused,
deleted from the block or already in the file in other words not suggested again."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from pi_compact.cli import Environment, main
from pi_compact.ops.instruction_cues import instructions
from pi_compact.ops.rules import find_rules
from pi_compact.ops.rules_block import BLOCK_BEGIN, BLOCK_END
from pi_compact.ops.rules_memory import decisions_path
from tests.helpers.cli import run
from tests.ops.rules_corpus import DEV, FRESH, HARD, HELD_OUT, Item, score
from tests.ops.test_rules import write_session


@pytest.fixture
def project(tmp_path: Path, agent: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


def _taken(text: str) -> list[str]:
    return [sentence for sentence, _ in instructions(text)]


@pytest.mark.parametrize(("name", "items"), [("dev", DEV), ("held out", HELD_OUT), ("hard", HARD), ("fresh", FRESH)])
def test_the_judged_corpus_is_read_with_precision_and_recall_of_at_least_0_8(name: str, items: list[Item]) -> None:
    result = score(items, _taken)
    assert result["precision"] >= 0.8, (name, result["wrong"])
    assert result["recall"] >= 0.8, (name, result["missed"])


def test_every_language_of_the_corpus_is_read() -> None:
    for lang in ("en", "ko", "ja", "zh", "de", "es"):
        items = [item for item in (*DEV, *HELD_OUT, *HARD, *FRESH) if item[0] == lang]
        result = score(items, _taken)
        assert result["recall"] >= 0.8 and result["precision"] >= 0.8, (lang, result["wrong"], result["missed"])


def test_pasted_documentation_and_logs_are_not_the_users_instructions() -> None:
    doc = (
        "here's the doc, do what it says:\n\n## Hooks\n\nExtensions must export a default function. "
        "Never call `ctx.ui` from a background task.\n\nAlso: never push to main."
    )
    assert _taken(doc) == []  # everything after the introducer is the paste, the user's last line with it
    assert _taken("> Always run `npm install` first.\n\nno deprecation alias!") == ["no deprecation alias!"]
    log = 'Traceback (most recent call last):\n  File "x.py", line 3\nValueError: must not be empty'
    assert _taken(log) == []


# The three instructions real users repeat across sessions (each in its own words every time), among ordinary
# requests; and one of them a question once, which is not a statement of it.
SESSIONS = [
    [
        "fix the flaky test in tests/test_io.py",
        "pls run make check before u commit",
        "fyi you're running in pi, not claude code",
        "먼저 서브에이전트한테 리뷰 받아",
    ],
    [
        "add a --json flag to the export command",
        "Run the project's check command (make check) before committing.",
        "You are in the Pi harness btw, not Claude Code.",
        "커밋하기 전에 서브에이전트로 먼저 리뷰해",
    ],
    [
        "why does the build fail?",
        "did you run make check?",
        "always run make check before you commit anything",
        "looks good, thanks",
    ],
]


def _sessions(project: Path) -> None:
    for number, messages in enumerate(SESSIONS, 1):
        write_session(project, number, messages)


def test_the_instructions_users_repeat_across_sessions_are_found(project: Path) -> None:
    _sessions(project)
    report = find_rules(project)
    by_text = {s.text: s for s in report.suggestions}
    assert len(report.suggestions) == 3, list(by_text)
    check = report.suggestions[0]  # said in three sessions: first
    harness = next(s for s in report.suggestions if "harness" in s.text.lower() or "pi," in s.text.lower())
    review = next(s for s in report.suggestions if "서브에이전트" in s.text)
    assert "make check" in check.text and check.sessions == 3
    assert {m.text for m in check.mentions} >= {"pls run make check before u commit"}
    assert "did you run make check?" not in {m.text for m in check.mentions}
    assert "pi" in harness.text.lower() and harness.sessions == 2
    assert review.sessions == 2


def test_dry_run_prints_the_diff_and_writes_nothing(project: Path) -> None:
    _sessions(project)
    agents = project / "AGENTS.md"
    agents.write_text("# Project\n")
    result = run("rules", "--cwd", project, "--write", "--dry-run")
    assert result.code == 0, result.stderr
    assert f"--- {agents}\n+++ {agents}\n" in result.stdout
    assert f"+{BLOCK_BEGIN}\n" in result.stdout and "+- " in result.stdout and f"+{BLOCK_END}" in result.stdout
    assert agents.read_text() == "# Project\n" and sorted(p.name for p in project.iterdir()) == ["AGENTS.md"]
    assert not os.path.exists(decisions_path())  # nothing asked, nothing remembered
    as_json = run("rules", "--cwd", project, "--dry-run", "--json")
    assert as_json.code == 0 and as_json.json["diff"].startswith(f"--- {agents}\n") and as_json.json["written"] is None


def test_dry_run_of_a_link_is_refused_like_write(project: Path, tmp_path: Path) -> None:
    _sessions(project)
    outside = tmp_path / "elsewhere.md"
    outside.write_text("x\n")
    (project / "AGENTS.md").symlink_to(outside)
    result = run("rules", "--cwd", project, "--dry-run")
    assert result.code == 2 and "symbolic link" in result.stderr and outside.read_text() == "x\n"


def test_the_evidence_is_shown_before_each_question(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _sessions(project)
    monkeypatch.chdir(project)
    env = Environment.captured(stdin=b"q\n", tty=True)
    main(["rules", "--write"], env)
    stderr = env.stderr_bytes().decode()
    first_question = stderr.index("Add to ")
    evidence = stderr[:first_question]
    assert "said in " in evidence and "2026-01-01" in evidence and "'pls run make check before u commit'" in evidence
    assert "entry " in evidence and "2026-01-01T00-00-00-000Z_1.jsonl" in evidence


def test_a_refused_line_is_remembered_and_not_asked_again(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _sessions(project)
    monkeypatch.chdir(project)
    first = find_rules(project)  # the order of the questions
    refused_text, written_text = first.suggestions[0].text, first.suggestions[1].text
    env = Environment.captured(stdin=b"n\ny\nq\n", tty=True)
    assert main(["rules", "--write"], env) == 0
    path = Path(decisions_path())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    doc = orjson.loads(path.read_bytes())
    entry = doc["files"][str(project / "AGENTS.md")]
    assert list(entry["refused"]) == [refused_text] and list(entry["written"]) == [written_text]
    again = run("rules", "--cwd", project, "--json")
    texts = [s["text"] for s in again.json["suggestions"]]
    assert refused_text not in texts and written_text not in texts and len(texts) == 1
    assert [(d["text"], d["why"]) for d in again.json["dismissed"]] == [(refused_text, "refused")]
    env = Environment.captured(stdin=b"q\n", tty=True)
    main(["rules", "--write"], env)
    assert repr(refused_text) not in env.stderr_bytes().decode()


def test_a_line_deleted_from_the_block_is_not_suggested_again(project: Path) -> None:
    _sessions(project)
    agents = project / "AGENTS.md"
    assert run("rules", "--cwd", project, "--write", "--yes").code == 0
    text = agents.read_text()
    bullets = [line for line in text.splitlines() if line.startswith("- ")]
    assert len(bullets) == 3
    agents.write_text(text.replace(bullets[0] + "\n", ""))  # the user deletes one line of the block
    again = run("rules", "--cwd", project, "--json")
    assert again.code == 1 and again.json["suggestions"] == []
    assert [d["why"] for d in again.json["dismissed"]] == ["deleted from the block"]
    assert run("rules", "--cwd", project, "--write", "--yes").code == 1 and agents.read_text().count("\n- ") == 2


@pytest.mark.parametrize(
    "line",
    [
        "- Before each commit, run `make check`.",
        "* ALWAYS run make-check before committing!",
        "Run make check before you commit.",
    ],
)
def test_a_line_the_file_holds_in_other_words_is_not_suggested(project: Path, line: str) -> None:
    _sessions(project)
    (project / "AGENTS.md").write_text(f"# Project\n\n{line}\n")
    report = find_rules(project)
    assert not any("make check" in s.text for s in report.suggestions)
    assert any("make check" in k.text for k in report.known)


def test_a_decisions_file_that_is_not_one_is_read_as_empty_with_a_warning(project: Path) -> None:
    _sessions(project)
    path = Path(decisions_path())
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text("{not json")
    path.chmod(0o600)
    result = run("rules", "--cwd", project, "--json")
    assert result.code == 0 and len(result.json["suggestions"]) == 3 and "rules-decisions.json" in result.stderr
    assert run("rules", "--cwd", project, "--write", "--yes").code == 0
    assert orjson.loads(path.read_bytes())["version"] == 1
