"""Generate project trees for ``picompact rules``: sessions with standing instructions planted in paraphrase.

A tree is an agent directory (``agent/``, what ``PI_CODING_AGENT_DIR`` points at) and project directories
(``projects/p01`` …), each with its sessions under ``agent/sessions/--<project path>--/``. In each project:

- *repeated* rules: said in 2 to 4 sessions, each time in another paraphrase, with or without a leading "btw" /
  "also" / "remember:", on their own or after an ordinary request in the same message: ``rules`` must suggest
  each once, with those sessions;
- *single* rules: said in one session only: not suggested at ``--min-sessions 2``;
- *known* rules: said in several sessions, and already in the project's AGENTS.md in yet other words: left out;
- ordinary requests, most of them look-alikes that name the same files and tools as the rules ("open .env and
  tell me which variables are set", "write a raw SQL query …", "make sure it still builds"), some said in every
  session: never suggested;
- rules that share a noun with another but say something else ("never commit .env" beside "don't touch .env"):
  two suggestions, not one;
- one file that is not a readable session (reported and skipped).

``truth.json`` beside the tree maps every session file and entry id that carries a planted rule to the rule's
name, and lists per project which rules must be suggested. The same seed gives the same tree.

    python bench/rules_trees.py --out bench/data/rules --seed 1 [--projects 10] [--sessions 8]
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from random import Random
from typing import Any

import orjson

# name -> paraphrases, as users write them (the first is the canonical wording). Some paraphrases flip the form
# ("X, not Y" / "never Y, use X"); some are missed by the classifier on purpose (they still count for recall).
RULES: dict[str, list[str]] = {
    "env": [
        "Don't touch .env.",
        "Never modify the .env file, it holds the live keys.",
        "Please leave .env alone.",
        "Do not edit .env under any circumstances.",
        "Hands off the .env file.",
        "Never change anything in .env, ops manages it.",
    ],
    "env-commit": [
        "Never commit .env.",
        "Don't commit the .env file to git.",
        "The .env file must never be committed.",
        "Do not add .env to a commit, ever.",
    ],
    "migrate": [
        "Use `stash migrate`, not raw SQL.",
        "Always run migrations with stash migrate instead of raw SQL.",
        "Please use stash migrate for schema migrations rather than raw SQL.",
        "Migrations must go through `stash migrate`, not hand-written SQL.",
        "We use stash migrate for migrations, not raw SQL.",
    ],
    "tests-dir": [
        "Tests live in tests/extractor/.",
        "The extractor tests live in tests/extractor/.",
        "New tests go in tests/extractor/.",
        "Always put the tests under tests/extractor/.",
        "Test files belong in tests/extractor/, nowhere else.",
    ],
    "pnpm": [
        "Use pnpm, not npm.",
        "We use pnpm rather than npm.",
        "Always install packages with pnpm.",
        "Please use pnpm for installing packages.",
        "Stick to pnpm instead of npm.",
    ],
    "small-commits": [
        "I prefer small commits, one change each.",
        "Keep commits small.",
        "Please keep each commit small and focused.",
        "I'd rather have small commits, one change per commit.",
    ],
    "py39": [
        "It must stay compatible with Python 3.9.",
        "The code has to stay compatible with Python 3.9.",
        "Keep everything compatible with Python 3.9, the build hosts still run it.",
        "Everything must remain compatible with Python 3.9.",
    ],
    "no-deps": [
        "No new third-party dependencies.",
        "Don't add new dependencies.",
        "Please avoid adding new third-party packages.",
        "Never introduce new third-party libraries.",
    ],
    "ruff": [
        "Always run ruff before committing.",
        "Make sure to run ruff before every commit.",
        "Remember to run ruff before you commit.",
        "Before committing, always run ruff.",
    ],
    "logging": [
        "Use the logging module instead of print.",
        "Never use print for diagnostics, use logging.",
        "Please use logging rather than print statements.",
        "We use logging, not print, for diagnostics.",
    ],
    "port": [
        "The dev server listens on port 4100.",
        "The dev server runs on port 4100.",
        "The dev server port is 4100.",
    ],
    "main-branch": [
        "Never push directly to main.",
        "Don't push straight to main, open a PR.",
        "Do not push to the main branch directly.",
        "Never push to main without a PR.",
    ],
    "numpydoc": [
        "Keep docstrings in the numpydoc style.",
        "Docstrings should always follow the numpydoc style.",
        "Please write docstrings in the numpydoc style.",
        "We use numpydoc style for docstrings.",
    ],
    "gen-dir": [
        "Don't add files under gen/, that directory is generated.",
        "Never edit anything in gen/, it is generated.",
        "Leave the gen/ directory alone, it's generated.",
        "Do not touch gen/.",
    ],
    "pathlib": [
        "Use pathlib instead of os.path.",
        "Please use pathlib rather than os.path.",
        "We use pathlib, not os.path.",
        "Always use pathlib over os.path.",
    ],
    "english": [
        "Code comments must be in English.",
        "Always write code comments in English.",
        "Please keep all code comments in English.",
        "Comments have to be in English.",
    ],
    "changelog": [
        "Always update CHANGELOG.md when you change behaviour.",
        "Remember to add a CHANGELOG.md entry for every behaviour change.",
        "Every behaviour change must get a line in CHANGELOG.md.",
        "Make sure to update CHANGELOG.md whenever behaviour changes.",
    ],
    "prod-db": [
        "Never run anything against the production database.",
        "Don't touch the production database.",
        "Do not connect to the production database.",
        "Stay away from the production database.",
    ],
    "timeout": [
        "The request timeout is 30 seconds.",
        "Request timeout should be 30 seconds.",
        "The HTTP request timeout is 30 s.",
    ],
    "tabs": [
        "Use tabs, not spaces, in the Makefile.",
        "The Makefile uses tabs, never spaces.",
        "Always indent the Makefile with tabs.",
        "Please use tabs rather than spaces in the Makefile.",
    ],
}
# Ordinary requests, many of them naming what the rules name. Said in any session, some in every session.
ORDINARY = [
    "Open .env and tell me which variables are set.",
    "Write a raw SQL query that counts the active users.",
    "Fix the failing test in tests/extractor/test_dates.py.",
    "Run pnpm install and show me the output.",
    "Make sure it still builds.",
    "Make sure the tests pass.",
    "Commit this with a short message.",
    "Can you add a --verbose flag to the CLI?",
    "Why is the build red on main?",
    "Refactor the parser into smaller functions.",
    "Update the README with the new install steps.",
    "Move the helpers to utils/strings.py.",
    "Bump the version to 2.3.1.",
    "Rename fetch_all to fetch_pages everywhere.",
    "Let's look at the migration that failed yesterday.",
    "Add a test for the empty input case.",
    "Run ruff and fix what it reports.",
    "Print the first ten rows of the users table.",
    "Check the logs of the dev server.",
    "Explain how the stash migrate command works.",
    "Now push the branch.",
    "Add type hints to the new module.",
    "Write the docstring for parse_header.",
    "The tests are failing on main.",
    "I think the problem is in the extractor.",
    "Delete the old gen/ output and regenerate it.",
    "What does the timeout setting do?",
    "Good, that works. Next, the CSV export.",
    "Thanks, looks right.",
    "Use a dict here, it reads better.",
    "Don't worry about the warnings for now.",
    "Please check the .env.example for the missing variable.",
]
OPENINGS = [
    "Let's add CSV export to the report command.",
    "The date parser breaks on ISO weeks, can you fix it?",
    "I want a retry wrapper around the HTTP client.",
    "Let's split the extractor module in two.",
    "Add pagination to the users endpoint.",
    "The importer is slow, profile it.",
    "Port the config loader to the new schema.",
    "Add a health check endpoint.",
]
LEADS = ["", "", "", "Btw, ", "Also, ", "Remember: ", "One more thing: ", "Reminder: ", "Heads up: ", "Again, "]
# Rules that share a noun with another rule but say something else: kept apart.
CONFUSABLE = [("env", "env-commit")]


def _lead(rng: Random, sentence: str) -> str:
    lead = rng.choice(LEADS)
    if not lead:
        return sentence
    return lead + sentence[:1].lower() + sentence[1:] if not sentence.startswith(".") else lead + sentence


def _session_lines(session_id: str, cwd: str, day: int, messages: list[str]) -> tuple[list[bytes], list[str]]:
    """A session's JSONL lines and the entry id of each user message, in order."""
    stamp = f"2026-03-{day:02d}T09:00:00.000Z"
    lines = [orjson.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": cwd})]
    parent = None
    ids = []
    for n, text in enumerate(messages):
        minute = n * 2
        user_id = f"{session_id[-4:]}u{n:03d}"
        reply_id = f"{session_id[-4:]}a{n:03d}"
        when = f"2026-03-{day:02d}T09:{minute // 60 % 60:02d}:{minute % 60:02d}.000Z"
        lines.append(
            orjson.dumps(
                {
                    "type": "message",
                    "id": user_id,
                    "parentId": parent,
                    "timestamp": when,
                    "message": {"role": "user", "content": [{"type": "text", "text": text}]},
                }
            )
        )
        lines.append(
            orjson.dumps(
                {
                    "type": "message",
                    "id": reply_id,
                    "parentId": user_id,
                    "timestamp": when,
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Done."}],
                        "stopReason": "stop",
                    },
                }
            )
        )
        parent = reply_id
        ids.append(user_id)
    return lines, ids


def session_dir(agent: Path, cwd: str) -> Path:
    safe = re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd))
    return agent / "sessions" / f"--{safe}--"


def generate(out: Path, seed: int = 1, projects: int = 10, sessions: int = 8) -> dict[str, Any]:
    """Write a tree under ``out`` (emptied first) and return its truth (also written to ``out/truth.json``)."""
    rng = Random(seed)
    if out.exists():
        shutil.rmtree(out)
    agent = out / "agent"
    (agent / "sessions").mkdir(parents=True)
    truth: dict[str, Any] = {"seed": seed, "projects": {}}
    for p in range(1, projects + 1):
        cwd = (out / "projects" / f"p{p:02d}").resolve()
        cwd.mkdir(parents=True)
        names = list(RULES)
        rng.shuffle(names)
        for a, b in CONFUSABLE:  # in half of the projects, two rules that share a noun, both repeated
            if rng.random() < 0.5:
                names.remove(a)
                names.remove(b)
                names[0:0] = [a, b]
        repeated, single, known = names[:6], names[6:8], names[8:9]
        known_lines = [rng.choice(RULES[name]) for name in known]
        (cwd / "AGENTS.md").write_text(
            "# Project notes\n\nThe extractor turns scanned invoices into JSON.\n\n## Conventions\n\n"
            + "".join(f"- {line}\n" for line in known_lines)
            + "- Run `make check` for the whole suite.\n"
        )
        plan: list[list[str]] = [[] for _ in range(sessions)]
        for name in repeated + known:
            count = rng.randint(2, min(4, sessions))
            for s in rng.sample(range(sessions), count):
                plan[s].append(name)
        for name in single:
            plan[rng.randrange(sessions)].append(name)
        every = rng.sample(ORDINARY, 3)  # look-alike requests said in (almost) every session
        directory = session_dir(agent, str(cwd))
        directory.mkdir(parents=True)
        labels: dict[str, str] = {}
        for s in range(sessions):
            messages = [rng.choice(OPENINGS)]
            ordinary = rng.sample(ORDINARY, 5) + [e for e in every if rng.random() < 0.85]
            rng.shuffle(ordinary)
            body: list[tuple[str, str | None]] = [(o, None) for o in ordinary]
            for name in plan[s]:
                sentence = _lead(rng, rng.choice(RULES[name]))
                if rng.random() < 0.4 and body:  # after an ordinary request, in the same message
                    index = rng.randrange(len(body))
                    text, label = body[index]
                    if label is None:
                        body[index] = (f"{text} {sentence}", name)
                        continue
                body.insert(rng.randrange(len(body) + 1), (sentence, name))
            messages += [text for text, _ in body]
            session_id = f"0199bbbb-{seed:04d}-7000-8000-{p:06d}{s:06d}"
            lines, ids = _session_lines(session_id, str(cwd), s + 1, messages)
            path = directory / f"2026-03-{s + 1:02d}T09-00-00-000Z_{session_id}.jsonl"
            path.write_bytes(b"\n".join(lines) + b"\n")
            for entry_id, (_, label) in zip(ids[1:], body, strict=True):
                if label is not None:
                    labels[f"{path}#{entry_id}"] = label
        (directory / "2026-02-28T09-00-00-000Z_broken.jsonl").write_bytes(b'{"type": "message", "id": "x"}\n')
        truth["projects"][str(cwd)] = {
            "repeated": sorted(repeated),
            "single": sorted(single),
            "known": sorted(known),
            "labels": labels,
        }
    (out / "truth.json").write_bytes(orjson.dumps(truth, option=orjson.OPT_INDENT_2))
    return truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench/data/rules"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--projects", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=8)
    args = parser.parse_args()
    truth = generate(args.out, args.seed, args.projects, args.sessions)
    print(f"{args.out}: {len(truth['projects'])} projects of {args.sessions} sessions (seed {args.seed})")


if __name__ == "__main__":
    main()
