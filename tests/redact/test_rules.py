"""The redactor on its own: every planted kind is found and masked, placeholders are stable, ordinary text is not."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_compact.redact import PLACEHOLDER, Redactor, describe_counts, find_secrets
from tests.redact.secrets_kit import ORDINARY, PLANTED, texts


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_planted_kind_is_masked_with_its_own_placeholder(kind: str) -> None:
    redactor = Redactor()
    joined = "\n\n".join(texts().values())
    masked = redactor.redact(joined)
    assert PLANTED[kind] not in masked
    assert f"[REDACTED:{kind}:1]" in masked
    assert redactor.counts.get(kind) == 1


def test_no_fragment_of_a_planted_secret_survives() -> None:
    masked = Redactor().redact("\n\n".join(texts().values()))
    for secret in PLANTED.values():
        for line in secret.splitlines():
            # Any 12 characters of a secret line would be a leak (the key headers are not secret).
            if "PRIVATE KEY" in line:
                continue
            for start in range(0, max(len(line) - 12, 0) + 1, 6):
                assert line[start : start + 12] not in masked, line


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_ordinary_text_is_left_alone(name: str) -> None:
    assert find_secrets(ORDINARY[name]) == []
    assert Redactor().redact(ORDINARY[name]) == ORDINARY[name]


def test_the_same_secret_gets_the_same_placeholder_across_texts() -> None:
    redactor = Redactor()
    token, other = PLANTED["github-token"], "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    first = redactor.redact(f"push with {token}")
    second = redactor.redact(f"then {other}, and again {token}")
    assert first == "push with [REDACTED:github-token:1]"
    assert second == "then [REDACTED:github-token:2], and again [REDACTED:github-token:1]"
    assert redactor.counts == {"github-token": 2}
    assert redactor.occurrences["github-token"] == 3


def test_masking_is_idempotent() -> None:
    redactor = Redactor()
    once = redactor.redact("\n".join(texts().values()))
    assert redactor.redact(once) == once


def test_counts_are_described_without_the_secrets() -> None:
    redactor = Redactor()
    redactor.redact("\n".join(texts().values()))
    text = describe_counts(redactor.counts)
    assert text.startswith(f"{len(PLANTED)} secrets (")
    assert not any(secret in text for secret in PLANTED.values())
    assert describe_counts({}) == "no secrets"


def test_values_that_reference_a_secret_are_not_secrets() -> None:
    for text in (
        "OPENAI_API_KEY=$OPENAI_API_KEY",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        'password = os.getenv("DB_PASSWORD")',
        "api_key: process.env.API_KEY",
        "password: str = Field(...)",
    ):
        assert find_secrets(text) == [], text


def test_quoted_and_env_style_assignments_are_masked() -> None:
    for text, kind in (
        ('password = "s3cret-Value"', "password"),
        ("DB_PASS=Tr0ub4dor&3", "password"),
        ('"client_secret": "a8f5f167f44f4964e6c998dee827110c"', "secret"),
        ("auth_token: 'Zm9vYmFyYmF6cXV4MTIzNDU2'", "secret"),
    ):
        assert [f.kind for f in find_secrets(text)] == [kind], text


def test_a_bearer_token_is_masked_whatever_the_scheme_case() -> None:
    token = "tok_9Hq2Wm4Xn6Kp8Rt0Yv2Zc4Lf6Jd8Ga"
    for text in (
        f"Authorization: Bearer {token}",
        f"authorization: bearer {token}",
        f"AUTHORIZATION: BEARER\t{token}",
    ):
        masked = Redactor().redact(text)
        assert token not in masked and "[REDACTED:bearer-token:1]" in masked, text


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_redaction_never_raises_and_keeps_text_without_findings(text: str) -> None:
    masked = Redactor().redact(text)
    if not find_secrets(text):
        assert masked == text
    else:
        assert PLACEHOLDER.search(masked)


def test_placeholder_shape() -> None:
    masked = Redactor().redact(PLANTED["jwt"])
    assert re.fullmatch(r"\[REDACTED:jwt:1\]", masked)
