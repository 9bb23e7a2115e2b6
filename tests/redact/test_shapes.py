"""The corpus by shape (tests/redact/corpus/*.txt): every secret masked as its kind and whole, every look-alike
unchanged, and the corpus' precision and recall at 1."""

from __future__ import annotations

import pytest

from pi_compact.redact import Redactor, find_secrets
from tests.redact.corpus_kit import CorpusCase, load_corpus, parse_case, score

CORPUS = load_corpus()
SHAPES = {"assignments", "config", "escapes", "headers", "issuers", "keys", "prose", "urls"}


def _found(text: str) -> list[tuple[str, int, int]]:
    return [(f.kind, f.start, f.end) for f in find_secrets(text)]


def test_every_shape_has_secrets_and_look_alikes() -> None:
    assert {case.shape for case in CORPUS} == SHAPES
    for shape in SHAPES - {"prose"}:
        cases = [case for case in CORPUS if case.shape == shape]
        assert any(case.kind for case in cases) and any(case.kind is None for case in cases), shape


@pytest.mark.parametrize("case", [c for c in CORPUS if c.kind], ids=lambda c: c.name)
def test_each_secret_is_masked_whole_as_its_kind(case: CorpusCase) -> None:
    tally = score([case], _found)["all"]
    assert tally.misses == [] and tally.false_positives == []
    masked = Redactor().redact(case.text)
    for start, end in case.secrets:
        secret = case.text[start:end]
        assert masked.count(secret) < case.text.count(secret)  # gone (a user name may be spelt alike)
    assert f"[REDACTED:{case.kind}:1]" in masked


@pytest.mark.parametrize("case", [c for c in CORPUS if not c.kind], ids=lambda c: c.name)
def test_each_look_alike_is_left_alone(case: CorpusCase) -> None:
    assert find_secrets(case.text) == []


def test_precision_and_recall_on_the_whole_corpus() -> None:
    tally = score(CORPUS, _found)["all"]
    assert tally.secrets >= 160
    assert (tally.precision, tally.recall, tally.wrong_kind) == (1.0, 1.0, 0), tally.misses + tally.false_positives


def test_the_scoring_counts_misses_and_false_positives() -> None:
    case = parse_case("t", 1, "+ password | a=⟦xy⟧ b")
    assert score([case], lambda text: [])["all"].recall == 0.0
    tally = score([case], lambda text: [("password", 0, 1), ("password", 2, 3)])["all"]
    assert (tally.found, tally.false) == (0, 1)
    assert score([case], lambda text: [("secret", 2, 4)])["all"].wrong_kind == 1
    with pytest.raises(ValueError):
        parse_case("t", 2, "+ password | no marks")
    with pytest.raises(ValueError):
        parse_case("t", 3, "- a ⟦marked⟧ look-alike")
    assert parse_case("t", 4, r"- \e[1m\\u0041\n").text == "\x1b[1m\\u0041\n"
