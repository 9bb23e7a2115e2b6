// The peer of `picompact check` for the benchmark: Pi 1.6's own code does what check does.
//
//   node bench/pi_check.mjs PI_PACKAGE_DIR SESSION.jsonl [CONTEXT_WINDOW]
//
// SessionManager.open (read, parse, index), getBranch, buildSessionProjection,
// estimateProjectedContextTokens, shouldCompact and prepareCompaction, with Pi's default settings.
// Prints one JSON line with the decision and the cut, so a run can be checked against picompact's answer.
// Pi's open appends a final newline to a file that lacks one and rewrites old versions: such a file is
// refused here rather than modified (the generated bench sessions are v3 and end with a newline).

import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [pkgDir, file, windowArg] = process.argv.slice(2);
if (!pkgDir || !file) {
	process.stderr.write("usage: node pi_check.mjs PI_PACKAGE_DIR SESSION.jsonl [CONTEXT_WINDOW]\n");
	process.exit(2);
}
const fd = fs.openSync(file, "r");
const size = fs.fstatSync(fd).size;
const head = Buffer.alloc(Math.min(size, 4096));
fs.readSync(fd, head, 0, head.length, 0);
const last = Buffer.alloc(1);
fs.readSync(fd, last, 0, 1, Math.max(size - 1, 0));
fs.closeSync(fd);
const firstLine = head.toString("utf8").split("\n")[0];
if (last[0] !== 10 || !/"version":3[,}]/.test(firstLine)) {
	process.stderr.write("pi_check.mjs: only v3 sessions that end with a newline (Pi would rewrite others)\n");
	process.exit(2);
}

const url = (rel) => pathToFileURL(path.join(pkgDir, rel)).href;
const [SM, C] = await Promise.all([
	import(url("dist/core/session-manager.js")),
	import(url("dist/core/compaction/compaction.js")),
]);
const contextWindow = Number(windowArg ?? 200000);
const settings = { ...C.DEFAULT_COMPACTION_SETTINGS };

const mgr = SM.SessionManager.open(path.resolve(file), path.dirname(path.resolve(file)));
const branch = mgr.getBranch();
const projection = SM.buildSessionProjection(branch);
const estimate = C.estimateProjectedContextTokens(projection, branch);
const tokens = typeof estimate === "number" ? estimate : estimate.tokens;
const compact = C.shouldCompact(tokens, contextWindow, settings);
const prep = C.prepareCompaction(branch, settings);
process.stdout.write(
	`${JSON.stringify({
		entries: mgr.getEntries().length,
		branch: branch.length,
		contextTokens: tokens,
		shouldCompact: compact,
		firstKeptEntryId: prep ? prep.firstKeptEntryId : null,
	})}\n`,
);
process.exit(compact ? 1 : 0);
