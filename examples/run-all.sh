#!/bin/sh
# Run every example against a scratch copy of the demo session (used by `make smoke`).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/demo-session.jsonl" "$tmp/session.jsonl"
sh "$here/ci-gate.sh" "$tmp/session.jsonl" 200000
if sh "$here/ci-gate.sh" "$tmp/session.jsonl" 32000; then echo "expected the gate to fail" >&2; exit 1; fi
sh "$here/grep-old-error.sh" "$tmp/session.jsonl" 'off by one' > /dev/null
picompact compact "$tmp/session.jsonl" --mode verbatim --context-window 32000 --if-needed
picompact check "$tmp/session.jsonl" --context-window 32000 > /dev/null || [ $? -eq 1 ]
echo "examples: ok"
