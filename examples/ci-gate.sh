#!/bin/sh
# CI gate: fail the job when a session needs compacting, with the reason in the log.
# Usage: ci-gate.sh SESSION [CONTEXT_WINDOW]
set -u
session="$1"
window="${2:-200000}"
picompact check "$session" --context-window "$window"
case $? in
  0) echo "ok: the context fits" ;;
  1) echo "compaction needed: run 'picompact compact $session --mode verbatim'" >&2; exit 1 ;;
  *) echo "error: not a usable Pi session" >&2; exit 2 ;;
esac
