"""``picompact pi prune-drafts``: the batch the extension hands Pi at a boundary is ``prune --dry-run``'s, and it is
handed over only when the prompt cache is cold (or the other rules of ``ops.prune_policy`` hold)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from tests.helpers.cli import run
from tests.helpers.sessions import simple_session

WINDOW = ["--context-window", "200000", "--reserve-tokens", "16384", "--keep-recent-tokens", "4000"]


def _session(tmp_path: Path, warm_after_s: float | None = None) -> tuple[Path, str, int]:
    sb = simple_session(turns=12, size=8000, usage=False)
    last = sb.entries[-1]
    last_ms = int(datetime.fromisoformat(last["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)
    leaf = last["id"]
    if warm_after_s is not None:
        stamp = datetime.fromtimestamp((last_ms + warm_after_s * 1000) / 1000).astimezone()
        leaf = sb.other(
            "usage",
            kind="cache_warm",
            provider="anthropic",
            model="claude-sonnet-4-5",
            usage={"input": 0, "output": 1, "cacheRead": 12000, "cacheWrite": 0, "totalTokens": 12001},
        )
        sb.entries[-1]["timestamp"] = stamp.isoformat(timespec="milliseconds")
    return sb.write(tmp_path / "s.jsonl"), leaf, last_ms


def _drafts(path: Path, leaf: str, *args: str) -> dict[str, Any]:
    result = run("pi", "prune-drafts", path, "--leaf", leaf, *WINDOW, *args)
    assert result.code == 0, result.stderr
    data: dict[str, Any] = orjson.loads(result.stdout)
    return data


def test_a_cold_cache_gets_the_dry_runs_batch(tmp_path: Path) -> None:
    path, leaf, last = _session(tmp_path)
    before = path.read_bytes()
    data = _drafts(path, leaf, "--boundary", "turn_end", "--cache-ttl", "300", "--now-ms", str(last + 301_000))
    assert data["prune"] is True and data["reason"] == "cold"
    dry = run("prune", path, "--dry-run", "--json", *WINDOW, "--leaf", leaf)
    assert dry.code == 0, dry.stderr
    planned = orjson.loads(dry.stdout)
    assert planned["entries"], "the session has old tool output to prune"
    assert data["entries"] == [
        {"type": "context_edit", "targetId": e["targetId"], "replacement": e["replacement"]} for e in planned["entries"]
    ]
    assert [p["id"] for p in data["pruned"]] == [p["id"] for p in planned["pruned"]]
    assert data["tokensFreed"] == planned["tokens_freed"] and data["tokensAfter"] == planned["tokens_after"]
    assert path.read_bytes() == before  # nothing written: Pi appends the drafts


def test_a_warm_cache_gets_nothing(tmp_path: Path) -> None:
    path, leaf, last = _session(tmp_path)
    data = _drafts(path, leaf, "--boundary", "turn_end", "--cache-ttl", "300", "--now-ms", str(last + 10_000))
    assert data["prune"] is False and data["entries"] == [] and data["tokensFreed"] > 0
    # Pi refreshed the cache 200 s after the reply: 301 s after the reply it is still warm.
    path, leaf, last = _session(tmp_path, warm_after_s=200)
    data = _drafts(path, leaf, "--boundary", "turn_end", "--cache-ttl", "300", "--now-ms", str(last + 301_000))
    assert data["prune"] is False and data["lastRequestMs"] == last + 200_000
    # No lifetime declared: never "cold".
    data = _drafts(path, leaf, "--boundary", "turn_end", "--now-ms", str(last + 3_600_000))
    assert data["prune"] is False


def test_bad_flags_are_refused(tmp_path: Path) -> None:
    path, leaf, _ = _session(tmp_path)
    for args in (["--boundary", "agent_end"], ["--boundary", "turn_end", "--warming", "maybe"]):
        result = run("pi", "prune-drafts", path, "--leaf", leaf, *WINDOW, *args)
        assert result.code == 2 and "must be" in result.stderr


SONNET = ["--price-input", "3", "--price-output", "15", "--price-cache-read", "0.3", "--price-cache-write", "3.75"]


def _paced(tmp_path: Path, away_s: float) -> tuple[Path, str, int]:
    """The plain session with the user away ``away_s`` seconds before each prompt, five seconds between the rest."""
    from datetime import UTC

    sb = simple_session(turns=12, size=8000, usage=False)
    clock = datetime(2026, 1, 5, tzinfo=UTC).timestamp()
    for entry in sb.entries:
        message = entry.get("message") or {}
        clock += away_s if message.get("role") == "user" else 5
        entry["timestamp"] = (
            datetime.fromtimestamp(clock, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        )
    return sb.write(tmp_path / f"paced-{away_s:g}.jsonl"), sb.entries[-1]["id"], int(clock * 1000)


def test_before_the_prompt_a_user_who_comes_back_quickly_keeps_the_cache(tmp_path: Path) -> None:
    settle = ["--boundary", "agent_before_settle", "--cache-ttl", "300", *SONNET]
    # The same batch, the same warm cache ten seconds after the run's last reply; only the user's habits differ.
    path, leaf, last = _paced(tmp_path, away_s=3600)
    slow = _drafts(path, leaf, *settle, "--now-ms", str(last + 10_000))
    path, leaf, last = _paced(tmp_path, away_s=30)
    quick = _drafts(path, leaf, *settle, "--now-ms", str(last + 10_000))
    assert slow["tokensRemoved"] == quick["tokensRemoved"] > 0
    # Eleven gaps, none (or all) within the lifetime, on Pi's prior of 0.15 counted as four gaps.
    assert slow["returnProbability"] == 0.6 / 15 and quick["returnProbability"] == 11.6 / 15
    assert slow["settleShare"] == quick["settleShare"] and 0 < slow["settleShare"] < 1
    assert slow["prune"] is True and slow["entries"]
    # Back within the lifetime three times in four: the batch would break the cache more often than the compactions
    # it puts off would.
    assert quick["prune"] is False and quick["reason"] == "breaks" and quick["entries"] == []
