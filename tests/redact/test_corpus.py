"""The corpus of secret formats (tests/redact/secrets_kit.py): every case is masked as its kind, every look-alike
comes through unchanged, and masking takes linear time (shown by how much text the patterns are given, not by a
clock)."""

from __future__ import annotations

import base64
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import re2

from pi_compact import redact
from pi_compact.redact import RULES, Redactor, find_secrets
from pi_compact.redact.patterns import COMPILED
from tests.redact.secrets_kit import CASES, LOOKALIKES, ORDINARY, case_leaks


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_format_is_masked_as_its_kind(case: Any) -> None:
    redactor = Redactor()
    masked = redactor.redact(case.text)
    assert case_leaks(masked) == [], masked
    assert f"[REDACTED:{case.kind}:1]" in masked, masked
    assert redactor.counts == {case.kind: 1}, masked


def test_the_whole_corpus_at_once_masks_every_secret_apart() -> None:
    redactor = Redactor()
    masked = redactor.redact("\n\n".join(case.text for case in CASES))
    assert case_leaks(masked) == []
    assert sum(redactor.counts.values()) == len(CASES)
    assert redactor.redact(masked) == masked  # masking twice changes nothing


@pytest.mark.parametrize("name", sorted(LOOKALIKES))
def test_look_alikes_are_left_alone(name: str) -> None:
    assert find_secrets(LOOKALIKES[name]) == []
    assert Redactor().redact(LOOKALIKES[name]) == LOOKALIKES[name]


def test_a_key_cut_by_a_line_break_inside_prose_is_not_glued_to_the_next_word() -> None:
    key = CASES[[c.name for c in CASES].index("openrouter")].secret
    masked = Redactor().redact(f"the key is {key}\nDone. Next step")
    assert masked == "the key is [REDACTED:openrouter-key:1]\nDone. Next step"


# ---------------------------------------------------------------------------------------------------------------
# Linear time


def test_every_pattern_is_compiled_by_re2() -> None:
    """RE2 never backtracks: one search is linear in the text it is given."""
    assert COMPILED
    assert all(isinstance(pattern, re2._Regexp) for pattern in COMPILED)
    assert {id(rule.pattern) for rule in RULES} <= {id(pattern) for pattern in COMPILED}
    modules = sorted(Path(redact.__file__).parent.glob("*.py"))
    assert len(modules) > 1
    assert not [m.name for m in modules if "import re\n" in m.read_text(encoding="utf-8")]


def _adversarial(n: int) -> dict[str, str]:
    rng = random.Random(n)
    return {
        "a.token": ("a.token" * (n // 7 + 1))[:n],
        "a.token=": ("a.token=" * (n // 8 + 1))[:n],
        "base64url": base64.urlsafe_b64encode(rng.randbytes(n * 3 // 4)).decode(),
        "name chars": ("x_db-pass.word" * (n // 14 + 1))[:n],
        "headers": ("-----BEGIN RSA PRIVATE KEY-----\n" * (n // 32 + 1))[:n],
        "escapes": ("\\u0041" * (n // 6 + 1))[:n],
        "url": (":\\/\\/a:" * (n // 7 + 1))[:n],
        "prefixes": ("sk-ant-api03-" * (n // 13 + 1))[:n],
        "assignments": ("password=a " * (n // 11 + 1))[:n],
        "wrapped": (("ghp_" + "A" * 40 + "\n") * (n // 45 + 1))[:n],
    }


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Characters handed to RE2 by each call, summed per pattern."""
    given: Counter[str] = Counter()
    original = re2._Regexp._match

    def counting(self: Any, anchor: Any, text: Any, pos: Any = None, endpos: Any = None) -> Any:
        given[self.pattern] += len(text)
        return original(self, anchor, text, pos, endpos)

    monkeypatch.setattr(re2._Regexp, "_match", counting)
    return given


@pytest.mark.parametrize("name", sorted(_adversarial(10)))
def test_the_text_given_to_the_patterns_grows_linearly(name: str, scanned: Counter[str]) -> None:
    """Each pattern reads the text (and its decoded form) a bounded number of times, whatever the text: no pattern
    is run again from positions inside it, which is what made masking quadratic."""
    per_char = []
    for n in (5_000, 20_000):
        scanned.clear()
        text = _adversarial(n)[name]
        find_secrets(text)
        per_char.append(sum(scanned.values()) / len(text))
    bound = 3 * len(COMPILED)  # every pattern over the text and its decoded form, and the checks on matches
    assert per_char[0] <= bound and per_char[1] <= bound, per_char
    assert per_char[1] <= per_char[0] * 1.1 + 1, per_char


def test_ordinary_text_still_passes_the_old_checks() -> None:
    for name, text in ORDINARY.items():
        assert find_secrets(text) == [], name
