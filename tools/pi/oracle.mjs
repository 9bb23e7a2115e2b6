// Asks Pi 1.6 itself (its npm package, installed in ./node_modules by install.sh) what it makes of a session file,
// so the tests can compare picompact's answers with Pi's. Every number here is the result of a call into Pi's own
// modules; this file only opens the session, picks the calls and shapes their results as JSON.
//
//   node oracle.mjs analyze FILE [--context-window N] [--reserve N] [--keep N] [--brief]
//       how Pi loads the file, its leaf and branch, the context estimate, the threshold decision and what
//       prepareCompaction() would summarise and keep
//   node oracle.mjs context FILE [--full]
//       the messages Pi would send the model (buildSessionContext), described, or whole with --full
//   node oracle.mjs append-compaction FILE [--keep N] [--reserve N] [--summary TEXT] [--no-usage]
//       the compaction entry Pi's SessionManager.appendCompaction() writes for prepareCompaction()'s cut, and
//       how Pi reads the file back
//
// FILE is never written: Pi works on a copy in a temp dir (it rewrites files it migrates and appends a missing final
// newline). Output: one JSON document on stdout, exit 0; on any failure {"error": "..."} and exit 2.
// Pi 1.6 needs node >= 22.19 (the node in ./node_modules/.bin). PICOMPACT_PI_PACKAGE overrides the package folder.
//
//   node oracle.mjs serve
//       many calls in one process (node and Pi load once): one JSON array of arguments per line on stdin, each
//       answered by one line {"status": N, "stdout": "..."} on stdout (what the call's own process would give),
//       until stdin ends
//
// As a module: `answer(argv)` returns {status, stdout} for one call without exiting.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PACKAGE =
	process.env.PICOMPACT_PI_PACKAGE || path.join(HERE, "node_modules", "@earendil-works", "pi-coding-agent");
const COMMANDS = new Set(["analyze", "context", "append-compaction"]);
const DEFAULT_SUMMARY = "Summary written by the test oracle (tools/pi/oracle.mjs append-compaction).";

class OracleError extends Error {}

const digest = (text) => createHash("sha256").update(text, "utf8").digest("hex");

// ---------------------------------------------------------------------------------------------------- arguments

function parseArgv(argv) {
	const [command, ...rest] = argv;
	if (!COMMANDS.has(command)) {
		throw new OracleError(
			"usage: node oracle.mjs analyze|context|append-compaction FILE [--context-window N] [--reserve N] " +
				"[--keep N] [--brief] [--full] [--summary TEXT] [--no-usage]",
		);
	}
	const opts = { command, file: null, contextWindow: 200000, reserve: null, keep: null, brief: false, full: false };
	opts.summary = DEFAULT_SUMMARY;
	opts.usage = true;
	const count = (flag, value) => {
		if (value === undefined || !/^\d+$/.test(value)) throw new OracleError(`${flag} takes a whole number`);
		return Number(value);
	};
	for (let i = 0; i < rest.length; i++) {
		const arg = rest[i];
		if (arg === "--context-window") opts.contextWindow = count(arg, rest[++i]);
		else if (arg === "--reserve") opts.reserve = count(arg, rest[++i]);
		else if (arg === "--keep") opts.keep = count(arg, rest[++i]);
		else if (arg === "--brief") opts.brief = true;
		else if (arg === "--full") opts.full = true;
		else if (arg === "--no-usage") opts.usage = false;
		else if (arg === "--summary") {
			opts.summary = rest[++i];
			if (opts.summary === undefined) throw new OracleError("--summary takes a text");
		} else if (arg.startsWith("--")) throw new OracleError(`unknown option ${arg}`);
		else if (opts.file === null) opts.file = arg;
		else throw new OracleError(`one session file only, not also ${arg}`);
	}
	if (opts.file === null) throw new OracleError("no session file given");
	return opts;
}

// ---------------------------------------------------------------------------------------------------- Pi

let piModules = null;

/** Pi's modules, imported by file (the package's exports map offers only its index). */
async function pi() {
	if (piModules) return piModules;
	const manifest = path.join(PACKAGE, "package.json");
	if (!fs.existsSync(manifest)) throw new OracleError(`Pi's package is not installed at ${PACKAGE} (make pi)`);
	const load = (rel) => import(pathToFileURL(path.join(PACKAGE, "dist", rel)).href);
	const [sessions, compaction, utils, messages] = await Promise.all([
		load("core/session-manager.js"),
		load("core/compaction/compaction.js"),
		load("core/compaction/utils.js"),
		load("core/messages.js"),
	]);
	const version = JSON.parse(fs.readFileSync(manifest, "utf8")).version;
	piModules = { version, sessions, compaction, utils, messages };
	return piModules;
}

// ---------------------------------------------------------------------------------------------------- the file

/** Physical lines as Pi 1.6's loader sees them: which become entries, which are blank, unparsable or falsy. */
function classifyLines(text) {
	const pieces = text.split("\n");
	const unterminated = pieces[pieces.length - 1] !== "";
	if (!unterminated) pieces.pop();
	const parsed = [];
	const malformed = [];
	const falsy = [];
	let blank = 0;
	pieces.forEach((line, i) => {
		if (!line.trim()) {
			blank++;
			return;
		}
		let value;
		try {
			value = JSON.parse(line);
		} catch {
			malformed.push(i + 1);
			return;
		}
		if (value) parsed.push({ line: i + 1, value });
		else falsy.push(i + 1);
	});
	return { physical: pieces.length, parsed, malformed, falsy, blank, unterminated };
}

/** The session opened by Pi on a private copy, with what loading did to that copy. */
function openWithPi(P, file, scratch) {
	const source = path.resolve(file);
	if (!fs.existsSync(source)) throw new OracleError(`no such file: ${path.basename(file)}`);
	const bytes = fs.readFileSync(source);
	const lines = classifyLines(bytes.toString("utf8"));
	const grewByNewline = (after) =>
		after.length === bytes.length + 1 && after[bytes.length] === 10 && after.subarray(0, bytes.length).equals(bytes);

	const probe = path.join(scratch, "probe.jsonl");
	fs.writeFileSync(probe, bytes);
	const raw = P.sessions.loadEntriesFromFile(probe);
	const loaderAppendedFinalNewline = grewByNewline(fs.readFileSync(probe));

	const copy = path.join(scratch, "session.jsonl");
	fs.writeFileSync(copy, bytes);
	const manager = P.sessions.SessionManager.open(copy, scratch);
	const after = fs.readFileSync(copy);
	const fileAfterOpen = after.equals(bytes) ? "unchanged" : grewByNewline(after) ? "final-newline-appended" : "rewritten";
	const header = raw[0] && typeof raw[0] === "object" ? raw[0] : null;

	const entries = manager.getEntries();
	const position = new Map(entries.map((entry, i) => [entry, i]));
	// Line numbers only when every parsed line is a header or one of Pi's entries, in order.
	const entryLines = lines.parsed.filter(({ value }) => !(typeof value === "object" && value.type === "session"));
	const lineOf = raw.length === lines.parsed.length && entryLines.length === entries.length ? entryLines : null;
	return {
		bytes,
		lines,
		copy,
		manager,
		entries,
		position,
		lineOf,
		load: {
			rawEntryCount: raw.length,
			headerValid: raw.length > 0,
			originalVersion: header ? (header.version ?? 1) : null,
			loaderAppendedFinalNewline,
			fileAfterOpen,
			piRewroteFile: fileAfterOpen === "rewritten",
		},
	};
}

/** Pi's getBranch() walks parentId links without end on a cycle: refuse such a file instead of hanging. */
function refuseCycle(session) {
	const seen = new Set();
	for (let entry = session.manager.getLeafEntry(); entry; entry = session.manager.getEntry(entry.parentId)) {
		if (seen.has(entry)) throw new OracleError("parentId cycle reachable from the leaf (Pi would loop forever)");
		seen.add(entry);
		if (!entry.parentId) break;
	}
}

function ref(session, entry, branchIndex) {
	if (!entry) return null;
	const index = session.position.get(entry) ?? null;
	const out = { index, id: entry.id ?? null, type: entry.type ?? null };
	if (entry.type === "message" && entry.message && typeof entry.message === "object") out.role = entry.message.role;
	if (session.lineOf && index !== null) out.line = session.lineOf[index].line;
	if (branchIndex !== undefined) out.b = branchIndex;
	return out;
}

function settings(P, opts) {
	const base = P.compaction.DEFAULT_COMPACTION_SETTINGS;
	return {
		enabled: base.enabled,
		reserveTokens: opts.reserve ?? base.reserveTokens,
		keepRecentTokens: opts.keep ?? base.keepRecentTokens,
	};
}

const tokensOf = (P, messages) => messages.reduce((sum, m) => sum + P.compaction.estimateTokens(m), 0);

function textFacts(text) {
	return {
		sha256: digest(text),
		utf16Length: text.length,
		codePoints: [...text].length,
		utf8Bytes: Buffer.byteLength(text, "utf8"),
		head300: [...text].slice(0, 300).join(""),
	};
}

function plainText(content) {
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content.map((block) => (block?.type === "text" && typeof block.text === "string" ? block.text : "")).join("");
}

// ---------------------------------------------------------------------------------------------------- analyze

function analyze(P, opts, session) {
	const { manager } = session;
	const C = P.compaction;
	const chosen = settings(P, opts);
	const branch = manager.getBranch();
	const onBranch = new Map(branch.map((entry, i) => [entry, i]));
	const projection = P.sessions.buildSessionProjection(branch);
	const estimate = C.estimateProjectedContextTokens(projection, branch);
	const unchecked = C.estimateContextTokens(projection.messages);
	const prep = C.prepareCompaction(branch, chosen);
	const context = manager.buildSessionContext();

	let preparation = null;
	if (prep) {
		const firstKept = branch.find((entry) => entry.id === prep.firstKeptEntryId);
		const files = P.utils.computeFileLists(prep.fileOps);
		const roles = (list) => list.map((m) => m.role);
		preparation = {
			firstKeptEntryId: prep.firstKeptEntryId,
			firstKeptBranchIndex: firstKept ? onBranch.get(firstKept) : null,
			firstKeptEntry: ref(session, firstKept),
			isSplitTurn: prep.isSplitTurn,
			tokensBefore: prep.tokensBefore,
			messagesToSummarizeCount: prep.messagesToSummarize.length,
			turnPrefixMessageCount: prep.turnPrefixMessages.length,
			messagesToSummarizeRoleSeq: roles(prep.messagesToSummarize),
			turnPrefixRoleSeq: roles(prep.turnPrefixMessages),
			previousSummary:
				prep.previousSummary === undefined ? { present: false } : { present: true, ...textFacts(String(prep.previousSummary)) },
			computeFileLists: files,
			formatFileOperations: P.utils.formatFileOperations(files.readFiles, files.modifiedFiles),
			serializedToSummarize: textFacts(P.utils.serializeConversation(P.messages.convertToLlm(prep.messagesToSummarize))),
			serializedTurnPrefix: textFacts(P.utils.serializeConversation(P.messages.convertToLlm(prep.turnPrefixMessages))),
		};
	}
	const lastUsage = C.getLastAssistantUsage(branch);
	const { lines } = session;
	const out = {
		oracle: { piVersion: P.version, command: "analyze" },
		file: {
			name: path.basename(opts.file),
			bytes: session.bytes.length,
			physicalLines: lines.physical,
			parsedLines: lines.parsed.length,
			malformedLines: lines.malformed,
			falsyLines: lines.falsy,
			blankLines: lines.blank,
			unterminatedLastLine: lines.unterminated,
			lineMapValid: session.lineOf !== null,
		},
		settings: { contextWindow: opts.contextWindow, ...chosen, threshold: opts.contextWindow - chosen.reserveTokens },
		load: { ...session.load, sessionVersion: manager.getHeader()?.version ?? null },
		sessionName: manager.getSessionName() ?? null,
		entryCount: session.entries.length,
		leaf: ref(session, manager.getLeafEntry()),
		branchLength: branch.length,
		contextEstimate: {
			tokens: estimate.tokens,
			usageTokens: estimate.usageTokens,
			trailingTokens: estimate.trailingTokens,
			lastUsageIndex: estimate.lastUsageIndex,
			contextMessageCount: projection.messages.length,
			usageTrusted: unchecked.lastUsageIndex !== null && estimate.lastUsageIndex !== null,
		},
		lastAssistantUsageTokens: lastUsage ? C.calculateContextTokens(lastUsage) : null,
		shouldCompact: C.shouldCompact(estimate.tokens, opts.contextWindow, chosen),
		preparation,
		sessionContext: { count: context.messages.length, roles: context.messages.map((m) => m.role) },
	};
	if (opts.brief) {
		out.branchEntryIndices = branch.map((entry) => session.position.get(entry) ?? null);
	} else {
		out.branch = branch.map((entry, b) => {
			const r = ref(session, entry, b);
			const contributed = P.sessions.sessionEntryToContextMessages(entry);
			if (contributed.length) r.tokens = tokensOf(P, contributed);
			return r;
		});
		out.projectionEntries = projection.entries.map((pe, p) => ({
			p,
			...ref(session, pe.sourceEntry, onBranch.get(pe.sourceEntry)),
			n: pe.messages.length,
			tokens: tokensOf(P, pe.messages),
		}));
	}
	return out;
}

// ---------------------------------------------------------------------------------------------------- context

function describe(P, message) {
	const d = { role: message.role, tokens: P.compaction.estimateTokens(message) };
	const head = (content) => [...plainText(content)].slice(0, 120).join("");
	if (message.role === "user" || message.role === "toolResult" || message.role === "custom") d.textHead = head(message.content);
	if (message.role === "assistant") {
		const blocks = Array.isArray(message.content) ? message.content : [];
		d.stopReason = message.stopReason;
		d.blocks = blocks.map((b) => b?.type);
		d.toolCalls = blocks.filter((b) => b?.type === "toolCall").map((b) => b.name);
	} else if (message.role === "toolResult") {
		Object.assign(d, { toolName: message.toolName, toolCallId: message.toolCallId, isError: message.isError });
	} else if (message.role === "custom") {
		Object.assign(d, { customType: message.customType, display: message.display });
	} else if (message.role === "compactionSummary") {
		Object.assign(d, { tokensBefore: message.tokensBefore, summary: message.summary });
	} else if (message.role === "branchSummary") {
		Object.assign(d, { fromId: message.fromId, summary: message.summary });
	} else if (message.role === "bashExecution") {
		Object.assign(d, { command: message.command, exitCode: message.exitCode ?? null });
	} else if (message.role === "system") {
		d.contentChars = plainText(message.content).length;
	}
	return d;
}

function context(P, opts, session) {
	const { manager } = session;
	const branch = manager.getBranch();
	const projection = P.sessions.buildSessionProjection(branch);
	const built = manager.buildSessionContext();
	const latest = P.sessions.getLatestCompactionEntry(branch);
	let latestCompaction = null;
	if (latest) {
		const at = branch.indexOf(latest);
		const kept = branch.findIndex((entry, i) => i < at && entry.id === latest.firstKeptEntryId);
		latestCompaction = {
			entry: ref(session, latest),
			branchIndex: at,
			firstKeptEntryId: latest.firstKeptEntryId ?? null,
			firstKeptBranchIndex: kept >= 0 ? kept : null,
			tokensBefore: latest.tokensBefore ?? null,
			fromHook: latest.fromHook ?? null,
			hasSystemMessage: Boolean(latest.systemMessage),
		};
	}
	const summaryIndex = built.messages.findIndex((m) => m.role === "compactionSummary");
	return {
		oracle: { piVersion: P.version, command: "context" },
		file: path.basename(opts.file),
		load: {
			headerValid: session.load.headerValid,
			originalVersion: session.load.originalVersion,
			piRewroteFile: session.load.piRewroteFile,
			fileAfterOpen: session.load.fileAfterOpen,
		},
		leaf: ref(session, manager.getLeafEntry()),
		branchLength: branch.length,
		count: built.messages.length,
		summaryFirst: built.messages[0]?.role === "compactionSummary",
		summaryIndex: summaryIndex >= 0 ? summaryIndex : null,
		roles: built.messages.map((m) => m.role),
		llmRoles: P.messages.convertToLlm(built.messages).map((m) => m.role),
		thinkingLevel: built.thinkingLevel,
		model: built.model,
		latestCompaction,
		estimateContextTokens: P.compaction.estimateContextTokens(built.messages),
		estimateProjectedContextTokens: P.compaction.estimateProjectedContextTokens(projection, branch),
		messages: opts.full ? built.messages : built.messages.map((m) => describe(P, m)),
	};
}

// ---------------------------------------------------------------------------------------------------- append-compaction

const SUMMARY_USAGE = { input: 12000, output: 800, cacheRead: 0, cacheWrite: 0, totalTokens: 12800 };

function appendCompaction(P, opts, session) {
	const { manager } = session;
	const chosen = settings(P, opts);
	const prep = P.compaction.prepareCompaction(manager.getBranch(), chosen);
	if (!prep) throw new OracleError("prepareCompaction() found nothing to compact");
	const files = P.utils.computeFileLists(prep.fileOps);
	const summary = opts.summary + P.utils.formatFileOperations(files.readFiles, files.modifiedFiles);
	const before = fs.readFileSync(session.copy);
	const usage = opts.usage
		? { ...SUMMARY_USAGE, cost: { input: 0.036, output: 0.012, cacheRead: 0, cacheWrite: 0, total: 0.048 } }
		: undefined;
	const id = manager.appendCompaction(summary, prep.firstKeptEntryId, prep.tokensBefore, files, false, usage);
	const after = fs.readFileSync(session.copy);
	const written = after.subarray(before.length).toString("utf8");
	let entry = null;
	try {
		entry = JSON.parse(written);
	} catch {
		entry = null;
	}
	let snapshot = null;
	if (entry) {
		entry.timestamp = "<now>";
		if (entry.systemMessage && typeof entry.systemMessage === "object") {
			// Pi stamps the system message snapshot with the compaction's time, in ms
			const masked = { ...entry.systemMessage, timestamp: "<now-ms>" };
			snapshot = {
				keyOrder: Object.keys(masked),
				sha256: digest(JSON.stringify(masked)),
				tokens: P.compaction.estimateTokens({ ...masked, timestamp: 0 }),
				toolsAdded: (masked.toolsAdded ?? []).map((tool) => tool?.name ?? null),
			};
			entry.systemMessage = "<see appendedSystemMessage>";
		}
	}
	const reread = P.sessions.SessionManager.open(session.copy, path.dirname(session.copy));
	const rebuilt = reread.buildSessionContext();
	return {
		oracle: { piVersion: P.version, command: "append-compaction" },
		file: path.basename(opts.file),
		settings: chosen,
		firstKeptEntryId: prep.firstKeptEntryId,
		tokensBefore: prep.tokensBefore,
		appendedEntryId: id,
		persistedByAppend: after.length > before.length && after.subarray(0, before.length).equals(before),
		appendedEndsWithNewline: written.endsWith("\n"),
		appendedKeyOrder: entry ? Object.keys(JSON.parse(written)) : null,
		appendedEntry: entry,
		appendedSystemMessage: snapshot,
		survivedReload: Boolean(reread.getEntry(id)),
		reloadedLeafId: reread.getLeafId(),
		context: {
			count: rebuilt.messages.length,
			summaryFirst: rebuilt.messages[0]?.role === "compactionSummary",
			roles: rebuilt.messages.map((m) => m.role),
			estimateProjectedContextTokens: P.compaction.estimateProjectedContextTokens(
				reread.buildSessionProjection(),
				reread.getBranch(),
			),
		},
	};
}

// ---------------------------------------------------------------------------------------------------- entry points

const RUN = { analyze, context, "append-compaction": appendCompaction };

/** One call: {status, stdout} as the command line would give them (stdout ends with a newline). */
export async function answer(argv) {
	let scratch = null;
	let file = null;
	try {
		const opts = parseArgv(argv);
		file = path.resolve(opts.file);
		const P = await pi();
		scratch = fs.mkdtempSync(path.join(os.tmpdir(), "picompact-oracle-"));
		const session = openWithPi(P, opts.file, scratch);
		refuseCycle(session);
		const result = RUN[opts.command](P, opts, session);
		return { status: 0, stdout: `${JSON.stringify(result)}\n` };
	} catch (error) {
		let message = String(error?.message ?? error);
		if (scratch) message = message.split(scratch).join("<tmp>");
		if (file) message = message.split(file).join(path.basename(file));
		const out = { error: message };
		if (!(error instanceof OracleError)) out.errorName = error?.name ?? null;
		return { status: 2, stdout: `${JSON.stringify(out)}\n` };
	} finally {
		if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
	}
}

async function serve() {
	const lines = readline.createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
	for await (const line of lines) {
		if (line.trim()) process.stdout.write(`${JSON.stringify(await answer(JSON.parse(line)))}\n`);
	}
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	if (process.argv[2] === "serve") await serve();
	else {
		const { status, stdout } = await answer(process.argv.slice(2));
		process.stdout.write(stdout, () => process.exit(status));
	}
}
