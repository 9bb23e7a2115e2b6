"""The forecast: turns left in ``check``, turns bought by ``compact``, the refusal and the low-turns warning."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pi_compact.ops.forecast import context_growth
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import Result, run
from tests.helpers.sessions import SessionBuilder, simple_session


def _growth(sb: SessionBuilder, tmp_path: Path) -> tuple[float | None, int]:
    growth = context_growth(get_branch(load_session(sb.write(tmp_path / "g.jsonl"))))
    return growth.per_turn, growth.samples


def test_growth_is_the_median_per_reply_of_the_last_ten_with_usage(tmp_path: Path) -> None:
    sb = SessionBuilder()
    totals = [1000, 1200, 1400, 1600, 9000, 9200, 9400, 9600, 9800, 10000, 10200, 10400]
    for total in totals:
        sb.user("q")
        sb.assistant("a", usage=total)
    # The last ten totals give nine differences: 200 x 8 and one jump of 7,400 (the median ignores it).
    assert _growth(sb, tmp_path) == (200, 9)


def test_growth_counts_replies_without_usage_and_skips_aborted_and_compactions(tmp_path: Path) -> None:
    sb = SessionBuilder()
    sb.user("q")
    sb.assistant("a", usage=1000)
    sb.assistant("no usage")  # two replies from 1000 to 1600: 300 per reply
    sb.assistant("b", usage=1600)
    sb.assistant("aborted", usage=99_999, stop="aborted")  # not trusted: not a point, but a reply
    sb.assistant("c", usage=2200)  # 600 over two replies: 300
    sb.add({"type": "compaction", "summary": "s", "firstKeptEntryId": sb.leaf, "tokensBefore": 2200})
    sb.user("after")
    sb.assistant("d", usage=500)  # across the compaction: no difference taken
    sb.assistant("e", usage=800)  # 300
    assert _growth(sb, tmp_path) == (300, 3)


def test_no_growth_without_two_points(tmp_path: Path) -> None:
    sb = SessionBuilder()
    sb.user("q")
    sb.assistant("a", usage=1000)
    assert _growth(sb, tmp_path) == (None, 0)


def _check(path: Path, *args: str) -> dict:
    return run("check", path, "--json", *args).json


def test_check_says_how_many_turns_remain(tmp_path: Path) -> None:
    path = simple_session(turns=6, size=100).write(tmp_path / "s.jsonl")
    data = _check(path, "--context-window", "30000", "--reserve-tokens", "10000")
    forecast = data["forecast"]
    assert forecast["growth"]["per_turn"] == 500  # +1,000 every two replies
    assert forecast["tokens"] == data["context_tokens"] and forecast["threshold"] == data["threshold"]
    assert forecast["turns"] == math.floor((20000 - data["context_tokens"]) / 500)
    text = run("check", path, "--context-window", "30000", "--reserve-tokens", "10000").stdout
    assert f"~{forecast['turns']} turns before the threshold" in text
    assert "median growth 500 tokens per reply" in text


def test_check_over_the_threshold_has_zero_turns(tmp_path: Path) -> None:
    path = simple_session(turns=6, size=100).write(tmp_path / "s.jsonl")
    data = _check(path, "--context-window", "20000", "--reserve-tokens", "16384")
    assert data["should_compact"] and data["forecast"]["turns"] == 0


def test_check_without_usage_has_no_forecast(tmp_path: Path) -> None:
    path = simple_session(turns=3, size=100, usage=False).write(tmp_path / "s.jsonl")
    data = _check(path, "--context-window", "200000")
    assert data["forecast"]["turns"] is None and data["forecast"]["growth"]["per_turn"] is None
    assert "no forecast" in run("check", path, "--context-window", "200000").stdout


# ---------------------------------------------------------------------------------------------------------------
# compact


def _session(tmp_path: Path) -> Path:
    return simple_session(turns=12, size=2000).write(tmp_path / "s.jsonl")


def _after(path: Path) -> int:
    """tokens after the compaction, from a dry run (the threshold does not change the checkpoint)."""
    data = run("compact", path, "--dry-run", "--json", "--keep-recent-tokens", "3000", "--context-window", "200000")
    assert data.code == 0, data.stderr
    return data.json["stats"]["tokens_after"]


def _compact(path: Path, threshold: int, *args: str) -> Result:
    window = threshold + 16384
    return run("compact", path, "--keep-recent-tokens", "3000", "--context-window", str(window), *args)


def test_a_compaction_still_over_the_threshold_is_refused(tmp_path: Path) -> None:
    path = _session(tmp_path)
    before = path.read_bytes()
    after = _after(path)
    refused = _compact(path, after - 1)
    assert refused.code == 2
    message = refused.stderr
    assert message.startswith(f"picompact: error: {path}: nothing written: ")
    assert "would still be over the threshold" in message and "--keep-recent-tokens" in message and "--force" in message
    assert path.read_bytes() == before
    # The dry run reports it and exits 0.
    dry = _compact(path, after - 1, "--dry-run", "--json")
    assert dry.code == 0
    assert dry.json["forecast"]["turns"] == 0
    assert "refused (exit 2) unless --force" in dry.stderr
    # --force writes it, with a warning.
    forced = _compact(path, after - 1, "--force")
    assert forced.code == 0, forced.stderr
    assert "written anyway (--force)" in forced.stderr
    assert path.read_bytes().startswith(before)
    assert [e.type for e in load_session(path).entries].count("compaction") == 1


@pytest.mark.parametrize(("turns", "warned"), [(1, True), (2, False), (7, False)])
def test_a_compaction_buying_fewer_than_two_turns_is_warned_about(tmp_path: Path, turns: int, warned: bool) -> None:
    path = _session(tmp_path)
    after = _after(path)
    threshold = after + turns * 500  # the growth is 500 tokens per reply
    result = _compact(path, threshold, "--dry-run", "--json")
    assert result.code == 0
    forecast = result.json["forecast"]
    assert forecast["turns"] == turns and forecast["tokens"] == after and forecast["threshold"] == threshold
    assert ("buys only ~1 turn" in result.stderr) is warned
    if warned:
        assert "try a lower --keep-recent-tokens (now 3,000) or a smaller --cap" in result.stderr


def test_the_summary_line_says_what_the_compaction_buys(tmp_path: Path) -> None:
    path = _session(tmp_path)
    after = _after(path)
    result = _compact(path, after + 10 * 500)
    assert result.code == 0, result.stderr
    assert "buys ~10 turns before the next compaction (at +500 tokens per reply)" in result.stderr
