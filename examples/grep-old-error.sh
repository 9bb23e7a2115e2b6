#!/bin/sh
# Find an error seen earlier in a session, even after compaction hid it, and show the entry it came from.
# Usage: grep-old-error.sh SESSION [PATTERN]
set -u
session="$1"
pattern="${2:-Error|FAILED}"
id=$(picompact grep "$session" "$pattern" --max-count 1 --json |
  python3 -c 'import json,sys
for line in sys.stdin:
    rec = json.loads(line)
    if rec["type"] == "match":
        print(rec["data"]["entry_id"]); break')
if [ -z "$id" ]; then
  echo "no match for /$pattern/" >&2
  exit 1
fi
picompact show "$session" "$id" | head -40
