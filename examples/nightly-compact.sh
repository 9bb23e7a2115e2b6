#!/bin/sh
# Nightly job: compact every session of a project that crossed Pi's threshold, leave the others alone.
# Usage: nightly-compact.sh [PROJECT_DIR]
set -eu
project="${1:-$PWD}"
picompact sessions --cwd "$project" --json |
  python3 -c 'import json,sys; [print(s["path"]) for s in json.load(sys.stdin)["sessions"]]' |
  while IFS= read -r session; do
    picompact compact "$session" --mode verbatim --if-needed || echo "skipped $session (exit $?)" >&2
  done
