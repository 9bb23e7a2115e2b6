"""Every problem code ``lint`` can report, and what Pi 1.6 does about each (a finding's ``pi``): the loader's codes,
those fatal for it, and lint's own."""

from __future__ import annotations

# What Pi 1.6 does about each problem, by code, checked against Pi's code and the oracle
# (tests/ops/test_lint_pi_claims.py).
# Every code lint can report has its entry; a code the loader adds later still lints (without one).
PI_DOES: dict[str, str] = {
    # from the loader
    "malformed-line": "skips the line; entries whose parent was on it start a new branch",
    "non-object-line": "keeps it as an entry without an id: no entry can be its child, it is on no branch, and as "
    "the last line it leaves Pi no leaf",
    "truncated-last-line": "ignores the line, and adds a newline after it when it opens the file, so its next entry "
    "starts a line of its own",
    "null-line": "skips the line",
    "no-final-newline": "adds the newline when it opens the file",
    "duplicate-id": "indexes the later entry under that id: every parentId naming it reaches the later entry",
    "orphaned-branch": "starts the branch at this entry: the history before it is not in the model's context",
    "missing-id": "keeps the entry; a missing or empty id names nothing (no entry can have it as parent, and as the "
    "last entry it leaves Pi no leaf), while a number id works as one in Pi",
    "leaf-without-id": "finds no leaf: its branch is empty and it never compacts the session; the context it sends "
    "falls back to the last entry and its parents (nothing for a line that is not an object)",
    "extra-header": "leaves it out of the tree: it is no entry, and never the leaf",
    "version-not-number": 'compares it as JavaScript does ("3" is 3, true is 1); a value that is no number '
    "migrates nothing, yet Pi rewrites the file when it opens it",
    "v1-with-ids": "migrates it as v1 when it opens it: every entry gets a new id, chained in file order (the tree "
    "is flattened), and the file is rewritten",
    "first-kept-not-on-branch": "keeps none of the branch before the compaction in the context: only the summary "
    "and what follows it",
    "pi-throws": "throws an error on it, at the step the message names (opening the file, building the context, "
    "listing sessions or showing the name)",
    "big-line": "reads the whole line into memory on every load",
    "old-version": "migrates the file to v3 when it opens it, and rewrites it",
    # fatal for the loader
    "bom": "refuses to open the file: with the mark its first line is not JSON, so there is no valid session header",
    "missing-header": "refuses to open the file (not a valid pi session)",
    "invalid-utf8": "reads the bad bytes as replacement characters (U+FFFD)",
    "deep-nesting": "loads the line in full",
    "not-regular-file": "does not check: it waits forever on a FIFO (for a writer), reads a device such as "
    "/dev/null as an empty file, and fails on a socket",
    "empty-file": "starts a new session in it, writing a session header into the file",
    "not-found": "starts a new session at that path (the file is written with its first message)",
    "unreadable": "cannot read it either (it fails with an error, or starts a new session it cannot save)",
    "line-too-long": "cannot open the file when the line is over 536,870,888 characters (JavaScript's longest "
    "string), and reads a shorter one, which picompact skips unread (over 128 MiB, PICOMPACT_MAX_LINE_BYTES)",
    # lint's own
    "parent-cycle": "loops forever walking a branch through it (hangs or crashes)",
    "dangling-parent": "starts a branch at this entry: nothing before it is in the model's context on that branch",
    "off-branch": "stops each walk up at the entry whose parent is missing, which starts their branch (nothing "
    "above it is in the context), or loops forever on a cycle",
    "orphan-tool-result": "sends the result without its call; the provider may reject the request",
    "missing-tool-result": 'sends a synthetic error result "No result provided" in its place (in each request, '
    "not in the file)",
    "pending-tool-result": 'sends a synthetic error result "No result provided" if the session goes on without '
    "one (in the request, not in the file)",
    "compaction-kept-missing": "keeps nothing before the compaction: the history it meant to keep silently vanishes",
    "edit-target-missing": "applies the edit to nothing",
    "edit-target-off-branch": "applies the edit to nothing on this branch",
    "edit-bad-replacement": "throws on it (content is not iterable) when it builds the context of a branch where "
    "the edit and its target are in view, so it cannot resume that branch",
    "negative-usage": "takes a usage only when its total (totalTokens, else input + output + cacheRead + "
    "cacheWrite) is above zero: a total at or below zero is passed over for an earlier reply's, a positive one "
    "is taken as it is",
    "usage-over-window": "trusts it: while it is the latest usage in the context, Pi's context figure is over the "
    "window and it compacts at its next check",
    "time-backwards": "keeps file order; tools that sort by time disagree with it",
    "bad-timestamp": "keeps the entry; its time is unknown",
    "unknown-type": "keeps the entry but never puts it in the model's context",
    "unknown-role": "keeps the message in its context but leaves it out of what it sends to the model",
    "message-missing": "throws on it (cannot read 'role') when it builds the context of a branch through it, so it "
    "cannot resume that branch; its session list leaves the whole session out",
    "duplicate-reminder": "puts every custom message of the branch in the model's context: the model reads the same "
    "re-orientation again (two copies of picompact's extension were loaded, or a checkpoint was appended twice)",
}
