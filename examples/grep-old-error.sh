#!/bin/sh
# Find an error seen earlier in a session, even after compaction hid it, and show the entry it came from.
# Usage: grep-old-error.sh SESSION [PATTERN]
# Exit status: 0 shown, 1 no match, 2 picompact could not read the session (its error is on stderr).
set -u
session="$1"
pattern="${2:-Error|FAILED}"
# grep --json writes JSON Lines: match records, then a summary; or one error record (and exit 2).
id=$(picompact grep "$pattern" "$session" --max-count 1 --json |
  python3 -c 'import json,sys
for line in sys.stdin:
    rec = json.loads(line)
    if rec["type"] == "match":
        print(rec["data"]["entry_id"]); break
    if rec["type"] == "error":
        sys.exit(2)')
status=$?
if [ "$status" -eq 2 ]; then
  exit 2
fi
if [ -z "$id" ]; then
  echo "no match for /$pattern/" >&2
  exit 1
fi
picompact show "$id" "$session" | head -40
