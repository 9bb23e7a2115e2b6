"""``pi_compact.js`` against JavaScript's own answers (each expected value is what Node gives for the same input)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from pi_compact.js import (
    js_date,
    js_double,
    js_join,
    js_len,
    js_number_text,
    js_string,
    js_stringify,
    js_to_number,
    js_truthy,
    json_parse,
    json_quote,
)

NAN = math.nan
INF = math.inf


def test_js_len_counts_utf16_code_units() -> None:
    assert js_len("abc") == 3
    assert js_len("a\U0001f600") == 3  # "a😀".length: the emoji is a surrogate pair
    assert js_len("é") == 1


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.1, "0.1"),
        (2.0**60, "1152921504606847000"),
        (123456789012345680000.0, "123456789012345680000"),
        (-0.0, "0"),
        (1.5e300, "1.5e+300"),
        (1e-6, "0.000001"),
        (123e-20, "1.23e-18"),
        (2.0**53, "9007199254740992"),
        (100.0, "100"),
        (0.000001234, "0.000001234"),
        (1e20, "100000000000000000000"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (-2.5, "-2.5"),
    ],
)
def test_js_number_text_is_number_to_string(value: float, text: str) -> None:
    assert js_number_text(value) == text


def test_json_quote_escapes_as_json_stringify() -> None:
    # U+2028 stays as it is; a lone surrogate and control characters are escaped
    assert json_quote('a"b\n\u2028\ud800\u0001é\\\t') == '"a\\"b\\n\u2028\\ud800\\u0001é\\\\\\t"'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e-7, "1e-7"),
        ([1.0, 2.5], "[1,2.5]"),
        ({"a": None, "b": [1e21]}, '{"a":null,"b":[1e+21]}'),
        (2.0**60, "1152921504606847000"),
        (INF, "null"),  # JSON.parse("1" + "0".repeat(400)) is Infinity, which JSON.stringify writes as null
        ({"s": "\ud800"}, '{"s":"\\ud800"}'),
        # Integers as JSON.parse holds them (doubles): exact to 2**53, the nearest double past it (Node's answers)
        (9007199254740992, "9007199254740992"),
        (9007199254740993, "9007199254740992"),
        ([18446744073709551615], "[18446744073709552000]"),
        ({"n": -9223372036854775808}, '{"n":-9223372036854776000}'),
        (9999999999999999999, "10000000000000000000"),
        (10**25, "1e+25"),
        ([10**400, -(10**400)], "[null,null]"),  # past the largest double: Infinity, written as null
        ([True, 3], "[true,3]"),
    ],
)
def test_js_stringify(value: Any, text: str) -> None:
    assert js_stringify(value) == text


def test_js_stringify_of_undefined_is_none() -> None:
    assert js_stringify(object()) is None


def test_json_parse_reads_as_json_parse() -> None:
    assert json_parse('{"a": [1, 2.5, null, true]}') == {"a": [1, 2.5, None, True]}
    assert json_parse("1" + "0" * 400) == INF
    for text in ("NaN", "Infinity", "-Infinity", "\ufeff{}", "{'a': 1}", "[1,]"):
        with pytest.raises(ValueError):
            json_parse(text)


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (10**30, 1e30),
        (2**53 + 1, 9007199254740992.0),  # JSON.parse("9007199254740993")
        (3, 3.0),
        (10**400, INF),
        (-(10**400), -INF),
    ],
)
def test_js_double_is_the_nearest_double(value: int, number: float) -> None:
    assert js_double(value) == number


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ([1, [2, 3]], "1,2,3"),
        (1e21, "1e+21"),
        (None, "null"),
        ([None, 1], ",1"),
        ({}, "[object Object]"),
        (True, "true"),
        (False, "false"),
        (1.5, "1.5"),
        (1e-7, "1e-7"),
        (2**60, "1152921504606847000"),  # the integer literal, as JSON.parse reads it
        (123456789012345678901, "123456789012345680000"),
        (NAN, "NaN"),
        (INF, "Infinity"),
        (-INF, "-Infinity"),
        (-0.0, "0"),
        ([[], [[]]], ","),
        ("text", "text"),
        (7, "7"),
    ],
)
def test_js_string_is_string_of(value: Any, text: str) -> None:
    assert js_string(value) == text


def test_js_join_shows_null_as_empty() -> None:
    assert js_join([None, "a", 1, [2, 3]], "-") == "-a-1-2,3"
    assert js_join(iter(["x", None, True])) == "x,,true"
    assert js_join([]) == ""


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (3, 3.0),
        ("3", 3.0),
        (" 3 ", 3.0),
        ("0x3", 3.0),
        ("3e0", 3.0),
        ("", 0.0),
        (True, 1.0),
        (False, 0.0),
        ([], 0.0),
        ([3], 3.0),
        ([[3]], 3.0),
        ("Infinity", INF),
        (" 0x1F ", 31.0),
        ("\u00a0 12 \ufeff", 12.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("+.5e1", 5.0),
        ("0X1f", 31.0),
        ("0o17", 15.0),
        ("0b101", 5.0),
        ("1e400", INF),
        ("-Infinity", -INF),
        (" \n\t ", 0.0),
        ("00012", 12.0),
        ("-.5", -0.5),
        (None, 0.0),
        ([None], 0.0),
        (["0x10"], 16.0),
        (10**400, INF),
        (2.5, 2.5),
    ],
)
def test_js_to_number(value: Any, number: float) -> None:
    assert js_to_number(value) == number


@pytest.mark.parametrize(
    "value",
    ["abc", "3a", "inf", "infinity", "1_0", "0x", "-0x1F", "\u180e12", "0b2", "1e", ".", "+", {}, [1, 2], NAN],
)
def test_js_to_number_nan(value: Any) -> None:
    assert math.isnan(js_to_number(value))


@pytest.mark.parametrize(
    ("value", "truthy"),
    [
        (None, False),
        (False, False),
        (0, False),
        (-0.0, False),
        (NAN, False),
        ("", False),
        ("0", True),
        ([], True),
        ({}, True),
        ("false", True),
        (0.5, True),
        (True, True),
    ],
)
def test_js_truthy(value: Any, truthy: bool) -> None:
    assert js_truthy(value) is truthy


@pytest.mark.parametrize(
    ("value", "when"),
    [
        ("2026-01-01", datetime(2026, 1, 1, tzinfo=UTC)),  # a date alone is UTC
        ("2026-01-01T00:00:00.000Z", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-03-04T05:06:07.890+02:00", datetime(2026, 3, 4, 3, 6, 7, 890000, tzinfo=UTC)),
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
        (1.5e12, datetime(2017, 7, 14, 2, 40, tzinfo=UTC)),
    ],
)
def test_js_date(value: Any, when: datetime) -> None:
    assert js_date(value) == when


@pytest.mark.parametrize("value", ["garbage", "", INF, NAN, 10**400, True, None, {}])
def test_js_date_invalid(value: Any) -> None:
    assert js_date(value) is None


def test_js_date_without_offset_is_local_time() -> None:
    expected = datetime(2026, 1, 1, 12, 0).astimezone().astimezone(UTC)
    assert js_date("2026-01-01T12:00:00") == expected
