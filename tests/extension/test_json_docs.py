"""The `picompact pi` documents have exactly the keys declared in pi_compact/cli/schema.py (and the README table)."""

from __future__ import annotations

from pathlib import Path

from pi_compact.cli.env import SCHEMA_VERSION
from pi_compact.cli.schema import DOCUMENTS, keys
from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


def _keys(result: object) -> list[str]:
    doc = result.json  # type: ignore[attr-defined]
    assert doc["schema_version"] == SCHEMA_VERSION
    return list(doc)


def test_pi_documents_have_the_declared_keys(agent: Path, tmp_path: Path) -> None:
    sb = simple_session(turns=6, size=400)
    path = sb.write(tmp_path / "s.jsonl")
    pi_flags = ["--context-window", "32000", "--reserve-tokens", "4096", "--keep-recent-tokens", "400"]
    printed = {
        "pi install": run("pi", "install", "--json", cwd=tmp_path),
        "pi status": run("pi", "status", "--json", cwd=tmp_path),
        "pi config": run("pi", "config", "--json", "--cwd", tmp_path),
        "pi checkpoint": run("pi", "checkpoint", path, "--leaf", sb.leaf, *pi_flags),
        "pi tool": run("pi", "tool", "context_grep", path, "--args", '{"pattern": "Turn"}'),
        "pi prune-drafts": run("pi", "prune-drafts", path, "--leaf", sb.leaf, "--boundary", "turn_end", *pi_flags),
        "pi uninstall": run("pi", "uninstall", "--json", cwd=tmp_path),
    }
    for name, result in printed.items():
        assert result.code == 0, (name, result.stderr)
        assert _keys(result) == keys(DOCUMENTS[name]), name
    assert {n for n in DOCUMENTS if n.startswith("pi ")} == set(printed)


def test_pi_tool_names_the_extension_tool_in_its_way_on(tmp_path: Path) -> None:
    """The model inside Pi knows the tools as context_*; a page's "call … again" must name the tool it called."""
    path = simple_session(turns=6, size=400).write(tmp_path / "s.jsonl")
    for tool, args in [
        ("context_grep", '{"pattern": "Turn", "max_count": 1}'),
        ("context_list_entries", '{"limit": 1}'),
    ]:
        result = run("pi", "tool", tool, path, "--args", args)
        assert result.code == 0, result.stderr
        last = result.json["text"].rsplit("\n", 1)[-1]  # type: ignore[attr-defined]
        assert last.startswith(f"(more: call {tool} again with the same arguments"), last


def test_pi_documents_are_the_hooks_json(agent: Path, tmp_path: Path) -> None:
    import orjson

    from pi_compact.extension.hook import build_checkpoint, effective_config
    from pi_compact.ops.check import CheckOptions
    from pi_compact.ops.checkpoint_request import CheckpointRequest

    sb = simple_session(turns=6, size=400)
    path = sb.write(tmp_path / "s.jsonl")
    flags = ["--context-window", "32000", "--reserve-tokens", "4096", "--keep-recent-tokens", "400"]
    settings = CheckOptions(context_window=32000, reserve_tokens=4096, keep_recent_tokens=400, leaf_id=sb.leaf)
    checkpoint = build_checkpoint(path, settings, CheckpointRequest())
    for name, result, data in [
        ("pi checkpoint", run("pi", "checkpoint", path, "--leaf", sb.leaf, *flags), checkpoint),
        ("pi config", run("pi", "config", "--json", "--cwd", tmp_path), effective_config(str(tmp_path), None, None)),
    ]:
        assert result.code == 0, (name, result.stderr)
        assert result.json == {"schema_version": SCHEMA_VERSION, **orjson.loads(orjson.dumps(data))}, name
    assert checkpoint["stats"] is not None and checkpoint["firstKeptEntryId"] is not None
