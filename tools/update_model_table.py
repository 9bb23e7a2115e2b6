"""Regenerate pi_compact/data/pi-models.json from the model catalog inside Pi's npm package.

Usage: python tools/update_model_table.py PATH/TO/node_modules/@earendil-works/pi-ai
Keeps the fields picompact uses (context window, output limit, prices, base URL, API) for every chat model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

KEEP = ("provider", "id", "name", "api", "contextWindow", "maxTokens", "reasoning", "cost", "baseUrl")


def main() -> int:
    package = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    if package is None or not (package / "dist" / "providers" / "data").is_dir():
        print(__doc__, file=sys.stderr)
        return 2
    version = json.loads((package / "package.json").read_text())["version"]
    models: dict[tuple[str, str], dict] = {}
    for path in sorted((package / "dist" / "providers" / "data").glob("*.json")):
        for group in json.loads(path.read_text()).values():
            if not isinstance(group, dict):
                continue  # metadata such as generatedAt
            for key, model in group.items():
                if not key.startswith("chat:"):
                    continue
                slim = {k: model[k] for k in KEEP if k in model}
                models.setdefault((slim["provider"], slim["id"]), slim)
    out = Path(__file__).resolve().parent.parent / "pi_compact" / "data" / "pi-models.json"
    rows = [models[k] for k in sorted(models)]
    out.write_text(json.dumps(rows, separators=(",", ":"), ensure_ascii=False))
    print(f"{len(rows)} models from pi-ai {version} -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
