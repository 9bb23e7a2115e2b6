"""Numbers past 64 bits in a session (a header version of 1e308, usage totals of 10^30 tokens) are printed as
JavaScript holds them: JSON.parse makes every number a double, so the integer literal 10^30 is 1e+30 to Pi, and a
sum past the largest double is Infinity, which JSON.stringify writes as null. The JSON stays valid and nothing
ends as an internal error."""

from __future__ import annotations

import json
import math
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.cli.env import dumps
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

HEADER = '{{"type":"session","version":{version},"id":"s1","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/repo"}}\n'


def _header_only(path: Path, version: str) -> Path:
    path.write_text(HEADER.format(version=version))
    return path


def _with_usage(path: Path, total: str, replies: int = 1) -> Path:
    """A session whose replies each record ``total`` (a JSON number literal, written as it is) as their usage."""
    sb = SessionBuilder()
    for n in range(replies):
        sb.user(f"question {n}")
        sb.assistant("answer", usage=123456)
    text = b"".join(line + b"\n" for line in sb.lines()).decode()
    path.write_text(text.replace("123456", total))  # input and totalTokens
    return path


def test_dumps_writes_integers_past_64_bits_as_javascript_numbers() -> None:
    doc = {"big": 10**30, "huge": 10**400, "top": 2**64 - 1, "low": -(2**63) - 1, "flag": True, "text": "x"}
    parsed = json.loads(dumps(doc))
    assert parsed == {
        "big": 1e30,
        "huge": None,
        "top": 2**64 - 1,
        "low": float(-(2**63) - 1),
        "flag": True,
        "text": "x",
    }


@pytest.mark.parametrize(("literal", "shown"), [("1e308", 1e308), ("1" + "0" * 30, 1e30), ("3.5e20", 3.5e20)])
def test_check_json_of_a_header_version_past_64_bits(tmp_path: Path, literal: str, shown: float) -> None:
    path = _header_only(tmp_path / "s.jsonl", literal)
    result = run("check", path, "--json", "--context-window", "100000")
    assert result.code == 0, result.stderr
    assert result.json["session"]["version"] == shown
    human = run("check", path, "--context-window", "100000")
    assert human.code == 0 and "internal error" not in human.stderr
    assert "0 entries" in human.stdout


@pytest.mark.parametrize("literal", ["18446744073709551621", "1e30", "1e308"])
def test_usage_past_64_bits_in_check_audit_and_context(tmp_path: Path, literal: str) -> None:
    path = _with_usage(tmp_path / "s.jsonl", literal)
    tokens = float(literal)  # what Pi reads
    check = run("check", path, "--json", "--context-window", "100000")
    assert check.code == 1, check.stderr  # far over the threshold
    assert check.json["usage_tokens"] == tokens and check.json["context_tokens"] == tokens
    audit = run("audit", path, "--json", "--context-window", "100000", "--no-cl100k")
    assert audit.code == 0, audit.stderr
    assert audit.json["replies"][0]["usage"]["total"] == tokens
    assert audit.json["costs"][0]["total_tokens"] == tokens
    context = run("context", path, "--json")
    assert context.code == 0, context.stderr
    assert context.json["context_tokens"] == tokens
    for args in (("check", path, "--context-window", "100000"), ("audit", path, "--context-window", "100000")):
        human = run(*args)
        assert human.code in (0, 1) and "internal error" not in human.stderr, human.stderr


def test_a_sum_past_the_largest_double_is_null(tmp_path: Path) -> None:
    """Two replies of 1e308 tokens each: JavaScript's sum is Infinity, which JSON.stringify writes as null."""
    path = _with_usage(tmp_path / "s.jsonl", "1e308", replies=2)
    audit = run("audit", path, "--json", "--context-window", "100000", "--no-cl100k")
    assert audit.code == 0, audit.stderr
    assert audit.json["costs"][0]["total_tokens"] is None
    assert [r["usage"]["total"] for r in audit.json["replies"]] == [1e308, 1e308]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    number=st.one_of(
        st.integers(min_value=2**53, max_value=10**308),
        st.floats(min_value=2.0**53, max_value=1.7976931348623157e308),
    )
)
def test_any_large_usage_total_prints_valid_json(tmp_path: Path, number: int | float) -> None:
    literal = str(number) if isinstance(number, int) else repr(number)
    path = _with_usage(tmp_path / "s.jsonl", literal)
    result = run("check", path, "--json", "--context-window", "100000")
    assert result.code == 1, result.stderr
    doc = orjson.loads(result.stdout_bytes)  # valid JSON
    shown = doc["usage_tokens"]
    assert isinstance(shown, (int, float)) and math.isfinite(shown)
    assert float(shown) == float(literal)  # the double Pi holds (an integer within 64 bits is exact)


def test_a_header_only_session_without_a_model_names_its_file(tmp_path: Path) -> None:
    path = _header_only(tmp_path / "only-header.jsonl", "3")
    for command in ("check", "audit"):
        result = run(command, path)
        assert result.code == 2
        assert result.stderr == (
            f"picompact: error: {path}: the session records no model, so its context window is unknown: "
            "pass --context-window\n"
        )
        as_json = run(command, path, "--json")
        assert as_json.code == 2
        assert as_json.json["error"]["message"].startswith(f"{path}: the session records no model")


def test_tool_arguments_past_2_53_are_counted_as_pi_holds_them(tmp_path: Path) -> None:
    """Pi estimates a tool call by the length of JSON.stringify(arguments), and JSON.parse has made every integer a
    double: 9999999999999999999 is printed 10000000000000000000, one digit more than the file holds."""
    from tests.oracle import ask_oracle, oracle_for_comparison

    sb = SessionBuilder()
    sb.user("q")
    sb.assistant(sb.call("bash", {k: 9999999999999999999 for k in "abcd"}), usage=None)
    path = sb.write(tmp_path / "s.jsonl")
    ours = run("check", str(path), "--json").json["context_tokens"]
    # "q" (1 char) + the call's name and its arguments with four 20-digit numbers: 105 characters, 27 tokens
    # (with the file's 19 digits, 101 characters: 26), plus the user message's 1.
    assert ours == 28
    if oracle_for_comparison():
        pi = orjson.loads(ask_oracle("analyze", path, "--brief").stdout)
        assert pi["contextEstimate"]["tokens"] == ours
