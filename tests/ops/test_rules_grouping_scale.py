"""``rules`` groups what thousands of statements say in near-linear work, into the groups all pairs would give.

Two pasted 350 KB lists of rule-like sentences (14,000 statements, most of them variations of one sentence) took
all-pairs grouping more than five minutes. The grouping now compares a statement only with the keys that share
one of its rarest words (prefix filtering: exact for Jaccard similarity), not with a group it is already in, and
with a sample of each group's keys: the number of similarity computations is counted, not timed."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from pi_compact.ops import rules
from pi_compact.ops.instruction_text import GENERIC, MATCH_THRESHOLD, MIXED, NOT, similarity
from pi_compact.ops.rules import Mention, _group, _Said, find_rules
from tests.helpers.sessions import SessionBuilder


def _all_pairs(said: Sequence[_Said], threshold: float) -> list[list[_Said]]:
    """The grouping as it was: every statement compared with every earlier one sharing a word."""
    parent = list(range(len(said)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, item in enumerate(said):
        matches = [(similarity(item.key, said[j].key), j) for j in range(i)]
        matches = [(score, j) for score, j in matches if score >= threshold]
        if len(item.key - {NOT, MIXED}) <= 1 and matches:
            matches = [max(matches, key=lambda m: (m[0], -m[1]))]
        for _, j in matches:
            a, b = root(i), root(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[_Said]] = {}
    for i, item in enumerate(said):
        groups.setdefault(root(i), []).append(item)
    return list(groups.values())


def _said(keys: Sequence[frozenset[str]]) -> list[_Said]:
    return [_Said(Mention("p", "s", f"e{n}", None, " ".join(sorted(k))), "rule", k, n) for n, k in enumerate(keys)]


VOCABULARY = ["test", "commit", "run", "lint", "tab", "space", "env", "file", "use", "never", "ask", "push", "main"]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("threshold", [MATCH_THRESHOLD, 0.34, 0.75])
def test_the_groups_are_those_of_all_pairs(seed: int, threshold: float) -> None:
    rng = random.Random(seed)
    keys = []
    for _ in range(rng.randint(1, 60)):
        words = set(rng.sample(VOCABULARY, rng.randint(1, 5)))
        if rng.random() < 0.3:
            words.add(NOT)
        if rng.random() < 0.1:
            words.add(MIXED)
        if words - GENERIC - {MIXED}:  # what ``statements`` keeps
            keys.append(frozenset(words))
        if keys and rng.random() < 0.2:
            keys.append(rng.choice(keys))  # said again
    said = _said(keys)
    ours = [[s.order for s in group] for group in _group(said, threshold)]
    theirs = [[s.order for s in group] for group in _all_pairs(said, threshold)]
    assert ours == theirs


def test_thousands_of_variations_cost_a_few_comparisons_each(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0

    def counted(a: frozenset[str], b: frozenset[str]) -> float:
        nonlocal calls
        calls += 1
        return similarity(a, b)

    monkeypatch.setattr(rules, "similarity", counted)
    n = 20_000  # all pairs: 200 million comparisons
    keys = [frozenset({"run", "test", "commit", f"module{i}"}) for i in range(n)]
    keys += [frozenset({"never", "edit", f"a{i}", f"b{i}", f"c{i % 50}"}) for i in range(n)]
    groups = _group(_said(keys), MATCH_THRESHOLD)
    assert len(groups[0]) == n  # one sentence, n variations
    assert calls <= 4 * len(keys)


def test_two_long_pasted_lists_are_grouped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "proj"
    cwd.mkdir()
    folder = agent / "sessions" / ("--" + str(cwd).strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True)
    for s in range(2):
        sb = SessionBuilder(cwd=str(cwd), session_id=f"s{s}")
        sb.user("".join(f"Always run the tests before committing module{n}. " for n in range(3000)))
        sb.write(folder / f"s{s}.jsonl")
    calls = 0
    real = rules.similarity

    def counted(a: frozenset[str], b: frozenset[str]) -> float:
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(rules, "similarity", counted)
    report = find_rules(cwd, agent_dir=agent)
    assert len(report.suggestions) == 1 and len(report.suggestions[0].mentions) == 6000
    assert calls <= 4 * 6000
