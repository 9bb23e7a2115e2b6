"""Regenerate pi_compact/data/pi-thinking.json: how Pi turns a thinking level into each model's request.

Usage: python tools/update_thinking_table.py PATH/TO/node_modules/@earendil-works/pi-ai

For every chat model of the pi-ai npm package that has one, keeps its ``thinkingLevelMap`` (which levels the
model supports and the provider's name for each; null: not supported) and whether it uses Anthropic's adaptive
thinking (``compat.forceAdaptiveThinking``). Models without either use Pi's defaults (pi_compact.llm.thinking).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def thinking_rows(package: Path) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for path in sorted((package / "dist" / "providers" / "data").glob("*.json")):
        for group in json.loads(path.read_text()).values():
            if not isinstance(group, dict):
                continue  # metadata such as generatedAt
            for key, model in group.items():
                if not key.startswith("chat:") or not isinstance(model, dict):
                    continue
                row: dict[str, Any] = {}
                if isinstance(model.get("thinkingLevelMap"), dict):
                    row["map"] = model["thinkingLevelMap"]
                if (model.get("compat") or {}).get("forceAdaptiveThinking") is True:
                    row["adaptive"] = True
                if row:
                    rows.setdefault(f"{model['provider']}/{model['id']}", row)
    return rows


def main() -> int:
    if len(sys.argv) != 2 or not (Path(sys.argv[1]) / "dist" / "providers" / "data").is_dir():
        print(__doc__, file=sys.stderr)
        return 2
    rows = thinking_rows(Path(sys.argv[1]))
    out = Path(__file__).resolve().parent.parent / "pi_compact" / "data" / "pi-thinking.json"
    out.write_text(json.dumps({k: rows[k] for k in sorted(rows)}, separators=(",", ":"), ensure_ascii=False))
    print(f"{len(rows)} models -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
