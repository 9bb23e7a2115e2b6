"""Regenerate pi_compact/data/pi-models.json: Pi's model table, as picompact ships it.

Usage: python tools/update_model_table.py PI_MODELS_JSON PATH/TO/node_modules/@earendil-works/pi-ai

Two sources, merged: PI_MODELS_JSON, Pi's own model table (the catalog Pi refreshes from its service, which
overlays the data its npm package ships), and the chat models built into the pi-ai npm package, for those the
table does not list. Where both list a model, the table wins, as the refreshed catalog wins in Pi. Only the fields
picompact uses are kept (context window, output limit, prices, base URL, API).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

KEEP = ("provider", "id", "name", "api", "contextWindow", "maxTokens", "reasoning", "cost", "baseUrl")


def slim(model: dict[str, Any]) -> dict[str, Any]:
    return {k: model[k] for k in KEEP if k in model}


def package_models(package: Path) -> dict[tuple[str, str], dict[str, Any]]:
    models: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((package / "dist" / "providers" / "data").glob("*.json")):
        for group in json.loads(path.read_text()).values():
            if not isinstance(group, dict):
                continue  # metadata such as generatedAt
            for key, model in group.items():
                if key.startswith("chat:"):
                    row = slim(model)
                    models.setdefault((row["provider"], row["id"]), row)
    return models


def main() -> int:
    if len(sys.argv) != 3 or not (Path(sys.argv[2]) / "dist" / "providers" / "data").is_dir():
        print(__doc__, file=sys.stderr)
        return 2
    table = {(m["provider"], m["id"]): slim(m) for m in json.loads(Path(sys.argv[1]).read_text())}
    models = package_models(Path(sys.argv[2]))
    models.update(table)
    out = Path(__file__).resolve().parent.parent / "pi_compact" / "data" / "pi-models.json"
    out.write_text(json.dumps([models[k] for k in sorted(models)], separators=(",", ":"), ensure_ascii=False))
    print(f"{len(models)} models ({len(table)} from the table) -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
