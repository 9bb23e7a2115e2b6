"""Regenerate pi_compact/data/regex-classes.json: the characters the installed ``regex`` puts in ``\\d``, ``\\s`` and
``\\w``, as RE2 ranges (``archive.query.class_ranges``), keyed by its version.

    python tools/update_regex_classes.py

``search --regex`` gives RE2 these very characters for the classes, so the two engines agree; for another version of
``regex`` than the table's they are computed at run time instead (tens of milliseconds a class)."""

from __future__ import annotations

from pathlib import Path

import orjson
import regex

from pi_compact.archive.query import CLASS_TABLE, class_ranges

OUT = Path(__file__).resolve().parent.parent / "pi_compact" / "data" / CLASS_TABLE


def main() -> None:
    table = {"regex": regex.__version__, "classes": {name: class_ranges(name) for name in "dsw"}}
    OUT.write_bytes(orjson.dumps(table, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"wrote {OUT} (regex {regex.__version__})")


if __name__ == "__main__":
    main()
