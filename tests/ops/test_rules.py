"""``picompact rules``: standing instructions repeated across a project's sessions, suggested for its AGENTS.md."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pi_compact.checkpoint.verbatim.standing import classify
from pi_compact.cli import Environment, main
from pi_compact.cli.env import SCHEMA_VERSION
from pi_compact.cli.schema import DOCUMENTS, keys
from pi_compact.ops.instruction_text import same_instruction
from pi_compact.ops.rules import find_rules
from pi_compact.ops.rules_block import BLOCK_BEGIN, BLOCK_END, with_rules
from pi_compact.pi.sessions import session_dir_for_cwd
from tests.helpers.cli import run
from tests.helpers.sessions import Scheme, SessionBuilder

ORDINARY = [
    "Fix the failing test in tests/api/test_users.py.",
    "Add a --verbose flag to the CLI.",
    "Thanks, looks right.",
]


@pytest.fixture
def project(tmp_path: Path, agent: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


def write_session(project: Path, number: int, messages: list[str]) -> tuple[Path, list[str]]:
    """A session of ``project`` on day ``number`` of 2026-01 with these user messages (each answered); returns
    the file and the user entries' ids."""
    scheme = Scheme(False, f"2026-01-{number:02d}", f"0199cccc-0000-7000-8000-{number:012d}", str(project), None, None)
    builder = SessionBuilder(scheme=scheme)
    ids = []
    for text in messages:
        ids.append(builder.user(text))
        builder.assistant("Done.")
    directory = session_dir_for_cwd(str(project))
    directory.mkdir(parents=True, exist_ok=True)
    return builder.write(directory / f"2026-01-{number:02d}T00-00-00-000Z_{number}.jsonl"), ids


def said(suggestion: dict) -> list[tuple[str, str]]:
    return [(Path(m["session"]).name, m["entry_id"]) for m in suggestion["said"]]


def test_an_instruction_repeated_in_other_words_is_suggested_with_its_sessions_and_entry_ids(project: Path) -> None:
    one, ids_one = write_session(project, 1, [ORDINARY[0], "Don't touch .env.", ORDINARY[1]])
    two, ids_two = write_session(project, 2, [ORDINARY[2], "Btw, never modify the .env file, it holds the keys."])
    write_session(project, 3, ORDINARY)
    result = run("rules", "--cwd", project, "--json")
    assert result.code == 0, result.stderr
    doc = result.json
    assert list(doc) == keys(DOCUMENTS["rules"])
    assert doc["schema_version"] == SCHEMA_VERSION and doc["sessions_read"] == 3 and doc["written"] is None
    [suggestion] = doc["suggestions"]
    assert suggestion["kind"] == "rule" and suggestion["sessions"] == 2 and suggestion["mentions"] == 2
    assert said(suggestion) == [(one.name, ids_one[1]), (two.name, ids_two[1])]
    assert suggestion["text"] == "Don't touch .env." or suggestion["text"].startswith("Never modify")
    report = find_rules(project)
    assert doc == {"schema_version": SCHEMA_VERSION, **report.to_json(), "written": None, "diff": None}
    # the same from the project directory itself (--here is the default), as text
    text = run("rules", cwd=project)
    assert text.code == 0 and text.stdout.startswith("1. ")
    assert f"{one}  {ids_one[1]}" in text.stdout and f"{two}  {ids_two[1]}" in text.stdout
    assert "1 suggestion(s) from 3 session(s)" in text.stderr


def test_an_instruction_said_in_one_session_only_is_not_suggested_at_two_sessions(project: Path) -> None:
    write_session(project, 1, ["Always run ruff before committing.", "Again, always run ruff before committing."])
    write_session(project, 2, ORDINARY)
    result = run("rules", "--cwd", project, "--json")
    assert result.code == 1 and result.json["suggestions"] == []
    once = run("rules", "--cwd", project, "--min-sessions", "1", "--json")
    assert once.code == 0 and [s["mentions"] for s in once.json["suggestions"]] == [2]
    assert run("rules", "--cwd", project, "--min-sessions", "0").code == 2


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Don't touch .env.", "Please leave .env alone."),
        ("Don't touch .env.", "Btw, do not edit .env under any circumstances."),
        ("Use `stash migrate`, not raw SQL.", "Always run migrations with stash migrate instead of raw SQL."),
        ("Tests live in tests/extractor/.", "New tests go in tests/extractor/."),
        ("Use pnpm, not npm.", "Stick to pnpm instead of npm."),
        ("I prefer small commits, one change each.", "Also, keep commits small."),
        ("Use logging instead of print.", "Never use print for diagnostics, use logging."),
        ("It must stay compatible with Python 3.9.", "Remember: everything must remain compatible with Python 3.9."),
    ],
)
def test_paraphrases_are_the_same_instruction(a: str, b: str) -> None:
    assert same_instruction(a, b) and same_instruction(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Don't touch .env.", "Never commit .env."),  # the same file, another instruction
        ("Always use pnpm.", "Never use pnpm."),  # the opposite
        ("Don't edit the tests.", "Don't edit .env."),  # all they share is generic
        ("Never push directly to main.", "Never run anything against the production database."),
        ("Tests live in tests/extractor/.", "Tests live in tests/api/."),
    ],
)
def test_different_instructions_are_kept_apart(a: str, b: str) -> None:
    assert not same_instruction(a, b)


def test_paraphrases_across_sessions_are_one_suggestion(project: Path) -> None:
    write_session(project, 1, ["Use pnpm, not npm.", "Don't touch .env."])
    write_session(project, 2, ["Heads up: we use pnpm rather than npm.", "Never commit .env."])
    write_session(project, 3, ["Stick to pnpm instead of npm.", "Don't commit the .env file to git."])
    doc = run("rules", "--cwd", project, "--json").json
    pnpm, commit = doc["suggestions"]  # "don't touch .env", said once, is neither
    assert pnpm["sessions"] == 3 and "pnpm" in pnpm["text"]
    assert pnpm["text"] == "We use pnpm rather than npm."  # the wording said most often (the same words as day 1's)
    assert commit["sessions"] == 2 and [m["text"] for m in commit["said"]] == [
        "Never commit .env.",
        "Don't commit the .env file to git.",
    ]


def test_requests_for_the_work_at_hand_are_not_suggested_however_often_said(project: Path) -> None:
    for day in (1, 2, 3):
        write_session(project, day, ["Make sure the tests pass.", "Bump the version to 2.3.1.", *ORDINARY])
    assert run("rules", "--cwd", project, "--json").json["suggestions"] == []


def test_an_instruction_the_agents_md_already_states_is_left_out(project: Path) -> None:
    (project / "AGENTS.md").write_text("# Notes\n\n- Never edit .env, it is managed by ops.\n")
    write_session(project, 1, ["Don't touch .env."])
    write_session(project, 2, ["Please leave .env alone."])
    result = run("rules", "--cwd", project, "--json")
    assert result.code == 1
    doc = result.json
    assert doc["suggestions"] == [] and doc["context_files"] == [str(project / "AGENTS.md")]
    [known] = doc["known"]
    assert known["file"] == str(project / "AGENTS.md") and known["line"].startswith("Never edit .env")
    assert "1 more already in" in run("rules", cwd=project).stderr


def test_suggestions_are_ranked_by_sessions_then_by_when_last_said(project: Path) -> None:
    write_session(project, 1, ["Use pathlib instead of os.path.", "Keep docstrings in the numpydoc style."])
    write_session(project, 2, ["Use pathlib rather than os.path.", "Never push directly to main."])
    write_session(project, 3, ["We use pathlib, not os.path.", "Don't push straight to main, open a PR."])
    write_session(project, 4, ["Docstrings should always follow the numpydoc style."])
    found = run("rules", "--cwd", project, "--json").json["suggestions"]
    # pathlib: 3 sessions; numpydoc: 2, last on day 4; main: 2, last on day 3
    assert [(s["sessions"], s["last_said"][:10]) for s in found] == [
        (3, "2026-01-03"),
        (2, "2026-01-04"),
        (2, "2026-01-03"),
    ]
    assert "pathlib" in found[0]["text"] and "numpydoc" in found[1]["text"] and "main" in found[2]["text"]


def test_an_unreadable_session_is_reported_with_its_path_and_skipped(project: Path) -> None:
    one, _ = write_session(project, 1, ["Don't touch .env."])
    two, _ = write_session(project, 2, ["Please leave .env alone."])
    broken = one.parent / "broken.jsonl"
    broken.write_bytes(b'{"type": "message"}\n')
    before = {p: p.read_bytes() for p in (one, two, broken)}
    result = run("rules", "--cwd", project, "--json")
    assert result.code == 0 and len(result.json["suggestions"]) == 1
    assert [u["path"] for u in result.json["unreadable"]] == [str(broken)]
    assert f"{broken}: skipped, cannot read it as a Pi session" in result.stderr
    assert {p: p.read_bytes() for p in before} == before  # nothing is written to a session
    if os.geteuid() != 0:
        two.chmod(0)
        try:
            denied = run("rules", "--cwd", project, "--json")
        finally:
            two.chmod(0o644)
        assert denied.code == 1 and str(two) in denied.stderr
        assert {u["path"] for u in denied.json["unreadable"]} == {str(broken), str(two)}


def test_write_refuses_without_a_terminal_unless_yes(project: Path) -> None:
    write_session(project, 1, ["Don't touch .env."])
    write_session(project, 2, ["Please leave .env alone."])
    refused = run("rules", "--cwd", project, "--write")
    assert refused.code == 2 and "--yes" in refused.stderr
    assert not (project / "AGENTS.md").exists()
    written = run("rules", "--cwd", project, "--write", "--yes", "--json")
    assert written.code == 0
    assert written.json["written"] == {
        "path": str(project / "AGENTS.md"),
        "added": [written.json["suggestions"][0]["text"]],
        "created_file": True,
        "created_block": True,
    }
    text = (project / "AGENTS.md").read_text()
    assert text == f"{BLOCK_BEGIN}\n- {written.json['suggestions'][0]['text']}\n{BLOCK_END}\n"


def test_write_appends_never_rewrites_and_is_idempotent(project: Path) -> None:
    agents = project / "AGENTS.md"
    original = "# Project\r\n\r\nSome text without a final newline"
    agents.write_bytes(original.encode())
    agents.chmod(0o600)
    write_session(project, 1, ["Don't touch .env.", "Use pnpm, not npm."])
    write_session(project, 2, ["Please leave .env alone.", "We use pnpm rather than npm."])
    first = run("rules", "--cwd", project, "--write", "--yes")
    assert first.code == 0, first.stderr
    after = agents.read_bytes().decode()
    assert after.startswith(original + "\n\n" + BLOCK_BEGIN + "\n") and after.endswith(BLOCK_END + "\n")
    assert after.count("\n- ") == 2 and stat.S_IMODE(agents.stat().st_mode) == 0o600
    again = run("rules", "--cwd", project, "--write", "--yes")
    assert again.code == 1 and agents.read_bytes().decode() == after  # the lines are in the file now
    # a new instruction goes inside the block, after what is there
    write_session(project, 3, ["Never push directly to main."])
    write_session(project, 4, ["Do not push to the main branch directly."])
    third = run("rules", "--cwd", project, "--write", "--yes")
    assert third.code == 0
    final = agents.read_bytes().decode()
    head = after.split(BLOCK_END)[0]
    assert final.startswith(head) and final.endswith(f"- Do not push to the main branch directly.\n{BLOCK_END}\n")
    assert [p.name for p in project.iterdir()] == ["AGENTS.md"]  # no temporary file left


def test_with_rules_inserts_inside_an_existing_block_and_keeps_every_other_byte() -> None:
    text = f"intro\n{BLOCK_BEGIN}\n- Keep commits small.\n{BLOCK_END}\ntrailer  \n"
    new, added, created = with_rules(text, ["Keep commits small.", "Use pnpm, not npm."])
    assert added == ["Use pnpm, not npm."] and not created
    assert new == f"intro\n{BLOCK_BEGIN}\n- Keep commits small.\n- Use pnpm, not npm.\n{BLOCK_END}\ntrailer  \n"
    assert with_rules(new, ["Use pnpm, not npm."]) == (new, [], False)


def test_write_on_a_terminal_asks_for_each_line(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_session(project, 1, ["Use pnpm, not npm.", "Don't touch .env."])
    write_session(project, 2, ["Stick to pnpm instead of npm.", "Please leave .env alone."])
    write_session(project, 3, ["We use pnpm rather than npm."])
    env = Environment.captured(stdin=b"n\ny\n", tty=True)
    monkeypatch.chdir(project)
    assert main(["rules", "--write"], env) == 0
    assert "Add to " in env.stderr_bytes().decode()
    lines = [ln for ln in (project / "AGENTS.md").read_text().splitlines() if ln.startswith("- ")]
    assert lines == ["- Leave .env alone."]  # the first (pnpm, 3 sessions) declined, the second taken


@pytest.mark.parametrize(
    ("args", "clash"),
    [
        (["--here", "--all"], "--here and --all"),
        (["--all", "--write", "--yes"], "--all and --write"),
        (["--yes"], "--yes applies only with --write"),
        (["--all", "--cwd", "."], "--all and --cwd"),
    ],
)
def test_flags_that_clash_are_usage_errors(args: list[str], clash: str) -> None:
    result = run("rules", *args)
    assert result.code == 2 and clash in result.stderr


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        ("Use `stash migrate`, not raw SQL.", "preference"),
        ("New tests go in tests/extractor/.", "value"),
        ("Hands off the .env file.", "rule"),
    ],
)
def test_the_classifier_knows_the_forms_of_a_convention(sentence: str, kind: str) -> None:
    assert classify(sentence) == kind


def test_all_reads_every_project(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    write_session(project, 1, ["Use pnpm, not npm."])
    write_session(other, 2, ["Stick to pnpm instead of npm."])
    assert run("rules", "--cwd", project, "--json").json["suggestions"] == []
    doc = run("rules", "--all", "--json").json
    assert doc["all"] is True and doc["cwd"] is None and doc["target"] is None
    assert [s["sessions"] for s in doc["suggestions"]] == [2]
