/**
 * picompact inside Pi.
 *
 * - Pi's own compaction (threshold, overflow, /compact) writes picompact's checkpoint: on session_before_compact
 *   this runs `picompact pi checkpoint` on the session file and hands the result to Pi, which appends it.
 * - After a verbatim compaction the re-orientation reminder reaches the model once, where work resumes; older
 *   reminders are kept out of what the model reads.
 * - context_list_entries, context_grep, context_show_entry (and context_lookup when a lookup model is available)
 *   search the raw session branch through picompact.
 * - context_search_sessions searches other sessions (`picompact search`; this project's unless
 *   picompact.crossSession says "all" or false); context_show_entry reads an entry of one with its session id.
 * - Between compactions, old tool output is pruned with Pi's own context_edit entries, handed to Pi as drafts at
 *   turn_end and agent_before_settle, in batches and only when that breaks the prompt cache no more often than the
 *   compactions it puts off would (`picompact pi prune-drafts` decides: the cache lifetime has passed, or the
 *   chance of a warm cache, read off the session's own pauses, is outweighed by the compaction breaks and the
 *   cost it saves). picompact.prune: false turns it off.
 * - /picompact shows the configuration, the last compaction and what was pruned; /picompact compact compacts now.
 *
 * Thin on purpose: every decision about the checkpoint and every search is picompact's (Python); this file runs
 * it and translates. Any failure leaves Pi to compact its own way, with a notice. When picompact does not answer in
 * time, crashes or replies with something that is not its JSON, it is not run again in this session (one notice)
 * until /picompact retries. Installed by `picompact pi install`, which writes install.json beside this file.
 */
import type {
	BoundaryResult,
	ContextEditEntryDraft,
	ExtensionAPI,
	ExtensionCommandContext,
	ExtensionContext,
	SessionBeforeCompactEvent,
	SessionBeforeCompactResult,
	SessionBoundaryDraft,
} from "@earendil-works/pi-coding-agent";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const REMINDER_TYPE = "picompact.reorientation";
const TOOL_NAMES = [
	"context_lookup",
	"context_list_entries",
	"context_grep",
	"context_show_entry",
	"context_search_sessions",
];
// How long Pi waits for picompact before going on without it. Measured on two shared cores, a fresh process each time
// as here: `pi config` takes 130-210 ms; a verbatim `pi checkpoint` 250-300 ms on a 1 MB session, 300-370 ms on
// 11 MB, 0.95-1.1 s on 105 MB, 4.5-6.2 s on 525 MB (about 9 ms a MB above start-up, the first run without the file's
// index the slowest). The limits keep a wide margin: 5 s for the configuration (25 times the slowest run); for a
// verbatim checkpoint 5 s plus 25 ms a MB of session file (about 3 times the measured rate: 7.6 s at 105 MB, 18 s at
// 525 MB).
const CONFIG_TIMEOUT_MS = 5_000;
const CHECKPOINT_TIMEOUT_MS = 5_000;
const CHECKPOINT_MS_PER_MB = 25;
// A summary waits for the model (each answer bounded by picompact's own --timeout); Esc aborts it.
const SUMMARY_TIMEOUT_MS = 600_000;
// The recovery tools: the model asked for them, and Esc aborts them.
const TOOL_TIMEOUT_MS = 120_000;
const LOOKUP_TIMEOUT_MS = 600_000;
// After a timeout, SIGTERM; if picompact is still there this much later, SIGKILL.
const KILL_GRACE_MS = 2_000;

interface InstallRecord {
	command: string[];
	version?: string;
	mode?: string;
}

interface Config {
	enabled: boolean;
	mode: string | null;
	cap: number | false | null;
	lookupModel: string | null;
	crossSession?: "project" | "all" | false; // absent (an older picompact): "project"
	capArgs: string[];
	lookupAvailable: boolean;
	warnings: string[];
	tools?: ToolSpec[]; // what to register, defined by picompact (pi_compact/extension/tools.py)
	prune?: boolean; // absent (an older picompact): no pruning
}

/** `picompact pi prune-drafts`: the batch for a boundary, and whether (and why) to hand it to Pi now. */
interface PruneDrafts {
	prune: boolean;
	reason: string;
	detail: string;
	entries: ContextEditEntryDraft[];
	tokensBefore: number;
	tokensAfter: number;
	tokensFreed: number;
	pruned: { id: string; tool?: string; tokens?: number }[];
}

interface PruneRecord {
	boundary: string;
	reason: string;
	tokensBefore: number;
	tokensAfter: number;
	tokensFreed: number;
	pruned: { id: string; tool?: string; tokens?: number }[];
}

/** A tool as `picompact pi config` defines it: "search" tools run `picompact pi tool NAME`, "lookup" runs lookup. */
interface ToolSpec {
	name: string;
	label: string;
	description: string;
	parameters: Record<string, unknown>;
	kind: "search" | "lookup";
}

interface Checkpoint {
	mode: string;
	summary: string;
	firstKeptEntryId: string;
	tokensBefore: number;
	details?: unknown;
	reminder: string | null;
	reminderCustomType: string | null;
	settings: { enabled: boolean; reserveTokens: number; keepRecentTokens: number };
	stats: {
		tokens_before: number;
		tokens_after: number;
		freed_tokens: number;
		freed_percent: number;
	} | null;
	trimmed: boolean;
	warnings: string[];
}

interface RunResult {
	code: number | null;
	signal?: string | null;
	stdout: string;
	stderr: string;
	error?: string;
	aborted?: boolean;
}

/** What a run of picompact came to: its JSON answer, or why there is none. ``broken``: picompact itself failed (no
 * answer in time, not started, a crash, a reply that is not its JSON), as opposed to an error it reported. */
type Outcome<T> = { ok: true; data: T } | { ok: false; why: string; broken: boolean };

interface LastCompaction {
	reason: string;
	mode: string;
	tokensBefore: number;
	tokensAfter: number | null;
	freed: number | null;
	freedPercent: number | null;
	trimmed: boolean;
	fromPicompact: boolean;
	note?: string;
}

function here(): string {
	try {
		return dirname(fileURLToPath(import.meta.url));
	} catch {
		return __dirname;
	}
}

function readInstall(): InstallRecord | undefined {
	try {
		const data = JSON.parse(readFileSync(join(here(), "install.json"), "utf8")) as InstallRecord;
		if (Array.isArray(data.command) && data.command.length > 0 && data.command.every((p) => typeof p === "string")) {
			return data;
		}
	} catch {
		// no record: fall back to `picompact` on PATH
	}
	return undefined;
}

/** Run picompact with `args`; never throws. */
function runPicompact(
	command: string[],
	args: string[],
	timeoutMs: number,
	signal?: AbortSignal,
	extraEnv: Record<string, string> = {},
): Promise<RunResult> {
	return new Promise((resolve) => {
		const out: Buffer[] = [];
		const err: Buffer[] = [];
		let settled = false;
		const finish = (result: RunResult) => {
			if (!settled) {
				settled = true;
				clearTimeout(timer);
				signal?.removeEventListener("abort", onAbort);
				resolve(result);
			}
		};
		let child: ReturnType<typeof spawn>;
		try {
			child = spawn(command[0], [...command.slice(1), ...args], {
				stdio: ["ignore", "pipe", "pipe"],
				env: { ...process.env, ...extraEnv, NO_COLOR: "1" },
			});
		} catch (error) {
			resolve({ code: null, stdout: "", stderr: "", error: String(error) });
			return;
		}
		const timer = setTimeout(() => {
			child.kill("SIGTERM");
			// Not unref'd, so that it fires even when Pi is about to exit; cleared once picompact is gone.
			const kill = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
			child.once("exit", () => clearTimeout(kill));
			finish({ code: null, stdout: "", stderr: "", error: `picompact did not answer within ${timeoutMs / 1000} s` });
		}, timeoutMs);
		const onAbort = () => {
			child.kill("SIGINT");
			finish({ code: null, stdout: "", stderr: "", error: "aborted", aborted: true });
		};
		if (signal?.aborted) {
			onAbort();
			return;
		}
		signal?.addEventListener("abort", onAbort, { once: true });
		child.stdout?.on("data", (chunk: Buffer) => out.push(chunk));
		child.stderr?.on("data", (chunk: Buffer) => err.push(chunk));
		child.on("error", (error) => finish({ code: null, stdout: "", stderr: "", error: error.message }));
		child.on("close", (code, signal) =>
			finish({
				code,
				signal,
				stdout: Buffer.concat(out).toString("utf8"),
				stderr: Buffer.concat(err).toString("utf8"),
			}),
		);
	});
}

/** The last error line picompact printed ("picompact: error: …", without the prefix), if any. */
function errorLine(result: RunResult): string | undefined {
	const lines = result.stderr.split("\n").filter((l) => l.startsWith("picompact: error:"));
	return lines.length > 0 ? lines[lines.length - 1].replace(/^picompact: error: /, "") : undefined;
}

/** Why a run gave no answer, in words, and whether picompact itself failed (see Outcome). */
function failure(result: RunResult): { why: string; broken: boolean } {
	if (result.error) return { why: result.error, broken: !result.aborted };
	if (result.code === null) return { why: `picompact was killed by ${result.signal ?? "a signal"}`, broken: true };
	const line = errorLine(result);
	if (result.code === 0) {
		const size = Buffer.byteLength(result.stdout);
		const what = size === 0 ? "printed nothing" : `printed ${size} bytes that are not the JSON answer expected`;
		return { why: `picompact exited normally but ${what}`, broken: true };
	}
	// An error picompact reported (bad settings, a session it refuses) is an answer; an internal error (exit 70) or
	// an exit without its error line (a traceback, a missing interpreter) is a crash.
	if (line !== undefined && result.code !== 70) return { why: line, broken: false };
	const detail = line ?? result.stderr.trim().split("\n").pop();
	return { why: `picompact crashed (exit status ${result.code}${detail ? `: ${detail}` : ""})`, broken: true };
}

/** picompact's JSON answer when it exited 0 with one that ``valid`` accepts, else why not. */
function outcome<T>(result: RunResult, valid: (data: T) => boolean): Outcome<T> {
	if (result.code === 0 && !result.error) {
		try {
			const data = JSON.parse(result.stdout) as T;
			if (data !== null && typeof data === "object" && valid(data)) return { ok: true, data };
		} catch {
			// not JSON: a failure, said below
		}
	}
	return { ok: false, ...failure(result) };
}

const isConfig = (c: Config) => typeof c.enabled === "boolean" && Array.isArray(c.capArgs) && Array.isArray(c.warnings);
const isPruneDrafts = (d: PruneDrafts) =>
	typeof d.prune === "boolean" && typeof d.reason === "string" && Array.isArray(d.entries) && Array.isArray(d.pruned);
const isCheckpoint = (c: Checkpoint) =>
	typeof c.summary === "string" &&
	typeof c.firstKeptEntryId === "string" &&
	typeof c.tokensBefore === "number" &&
	typeof c.settings === "object" &&
	c.settings !== null &&
	Array.isArray(c.warnings);

// Two copies of this extension (a global and a project install, both loaded in a trusted project) must not both
// run: that would be two /picompact commands and two re-orientation messages per compaction. The copies of one Pi
// load share Pi's event bus, whose handlers run at once: the first copy loaded (Pi loads the project's before the
// global ones) answers this probe, and a copy that gets an answer stands down. A reload drops the old copy's handler.
const CLAIM_CHANNEL = "picompact:extension";

/** A copy that found another one active: it registers nothing but one notice that says so. */
function standDown(pi: ExtensionAPI, owner: string) {
	let told = false;
	pi.on("session_start", async (_event, ctx) => {
		if (told) return;
		told = true;
		const text =
			`picompact: another copy of the extension is active (${owner}); this one (${here()}) stands down. ` +
			"Keep one: `picompact pi uninstall` (global) or `picompact pi uninstall --project`";
		if (ctx.hasUI) ctx.ui.notify(text, "warning");
		else process.stderr.write(`${text}\n`);
	});
}

export default function picompact(pi: ExtensionAPI) {
	const probe: { owner?: string } = {};
	pi.events?.emit(CLAIM_CHANNEL, probe);
	if (probe.owner) {
		standDown(pi, probe.owner);
		return;
	}
	pi.events?.on(CLAIM_CHANNEL, (data: unknown) => {
		const claim = data as { owner?: string } | null;
		if (claim && typeof claim === "object" && !claim.owner) claim.owner = here();
	});
	const install = readInstall();
	const command = install?.command ?? ["picompact"];
	let config: Config | undefined;
	let configError: string | undefined;
	// Why picompact is off for the rest of this session: it did not answer in time, crashed or replied with
	// something that is not its JSON. Pi compacts its own way without asking it again; /picompact retries.
	let off: string | undefined;
	let running = false; // between agent_start and agent_end
	let pending: { entryLeaf: string; checkpoint: Checkpoint; reason: string } | undefined;
	let last: LastCompaction | undefined;
	let lookupAttempts = 0; // context_lookup calls since the last reset (user message, bash, other tool result)
	const lookupVerdicts = new Map<string, boolean>();
	let toolsRegistered = false;

	function notify(ctx: ExtensionContext, message: string, level: "info" | "warning" | "error" = "warning") {
		const text = `picompact: ${message}`;
		if (ctx.hasUI) ctx.ui.notify(text, level);
		else process.stderr.write(`${text}\n`);
	}

	function mode(): string {
		return config?.mode ?? install?.mode ?? "verbatim";
	}

	/** Turn picompact off for this session, with the one notice that says so (none when ``quiet``: the caller
	 * shows it). */
	function turnOff(ctx: ExtensionContext, why: string, quiet = false) {
		off = why;
		if (quiet) return;
		notify(ctx, `${why}; picompact is off for the rest of this session, Pi compacts its own way (/picompact retries)`);
	}

	async function loadConfig(ctx: ExtensionContext, quiet = false): Promise<void> {
		if (off) return;
		const args = ["pi", "config", "--json", "--cwd", ctx.cwd, ctx.isProjectTrusted() ? "--trusted" : "--untrusted"];
		if (ctx.model) args.push("--session-model", `${ctx.model.provider}/${ctx.model.id}`);
		// With the key the lookup will be given, so that whether context_lookup is offered is decided as it runs.
		const result = await runPicompact(command, args, CONFIG_TIMEOUT_MS, undefined, await piKey(ctx));
		const answer = outcome<Config>(result, isConfig);
		if (!answer.ok) {
			config = undefined;
			configError = answer.why;
			if (answer.broken) turnOff(ctx, answer.why, quiet);
			return;
		}
		config = answer.data;
		configError = undefined;
		for (const warning of answer.data.warnings) notify(ctx, warning);
	}

	/** The API key Pi resolved for the session model's provider, for picompact: PICOMPACT_API_KEY comes first in
	 * picompact's order, so it is the key used (a key helper of models.json or auth.json is not run a second time, and
	 * a key only Pi knows, from --api-key, an extension or a login, is there too); PICOMPACT_API_KEY_PROVIDER binds it
	 * to that provider, so that a model of another provider (picompact.lookupModel, PICOMPACT_MODEL) never gets it and
	 * looks for its own. Empty without a model or a key, and for a login (OAuth): its token is no API key, and
	 * picompact, which calls providers with API keys only, says so instead of sending it where it is refused. */
	async function piKey(ctx: ExtensionContext): Promise<Record<string, string>> {
		const provider = ctx.model?.provider;
		if (!provider || !ctx.model) return {};
		if (ctx.modelRegistry.isUsingOAuth(ctx.model)) return {};
		const key = await ctx.modelRegistry.getApiKeyForProvider(provider).catch(() => undefined);
		return key ? { PICOMPACT_API_KEY: key, PICOMPACT_API_KEY_PROVIDER: provider } : {};
	}

	/** How long a verbatim checkpoint of ``file`` may take: a base, plus a little for each MB (see the constants). */
	function checkpointTimeout(file: string): number {
		let size = 0;
		try {
			size = statSync(file).size;
		} catch {
			// gone since: picompact says so, quickly
		}
		return CHECKPOINT_TIMEOUT_MS + Math.ceil((size / 1_048_576) * CHECKPOINT_MS_PER_MB);
	}

	function sessionFile(ctx: ExtensionContext): string | undefined {
		const file = ctx.sessionManager.getSessionFile();
		return file && existsSync(file) ? file : undefined;
	}

	/** The leaf a search runs on: the branch before the assistant message that holds this tool call, so a search
	 * never finds the call that asked for it. */
	function searchLeaf(ctx: ExtensionContext, toolCallId: string): string | undefined {
		const branch = ctx.sessionManager.getBranch();
		for (let i = branch.length - 1; i >= 0; i--) {
			const entry = branch[i];
			if (entry.type !== "message" || entry.message.role !== "assistant") continue;
			const content = entry.message.content;
			if (Array.isArray(content) && content.some((c) => c.type === "toolCall" && c.id === toolCallId)) {
				return entry.parentId ?? undefined;
			}
		}
		return ctx.sessionManager.getLeafId() ?? undefined;
	}

	// ---------------------------------------------------------------------------------------------------------
	// Compaction

	async function onBeforeCompact(
		event: SessionBeforeCompactEvent,
		ctx: ExtensionContext,
	): Promise<SessionBeforeCompactResult | undefined> {
		pending = undefined;
		if (!config) await loadConfig(ctx);
		const fallback = (why: string, quiet = false): undefined => {
			if (!quiet) notify(ctx, `${why}; Pi compacts its own way this time`);
			last = {
				reason: event.reason,
				mode: "pi",
				tokensBefore: event.preparation.tokensBefore,
				tokensAfter: null,
				freed: null,
				freedPercent: null,
				trimmed: false,
				fromPicompact: false,
				note: why,
			};
			return undefined;
		};
		if (off) return fallback(`picompact is off for this session (${off})`, true); // the notice was given
		if (config && !config.enabled) return undefined;
		if (!config) return fallback(`picompact did not run (${configError ?? "no answer"})`);
		const file = sessionFile(ctx);
		if (!file) return fallback("this session is in memory only (no session file to read)");
		const leaf = event.branchEntries[event.branchEntries.length - 1]?.id;
		if (!leaf) return fallback("the branch is empty");
		const window = ctx.model?.contextWindow;
		if (!window) return fallback("the model's context window is unknown");
		const settings = event.preparation.settings;
		const chosen = mode();
		const args = [
			"pi",
			"checkpoint",
			file,
			"--leaf",
			leaf,
			"--context-window",
			String(window),
			"--reserve-tokens",
			String(settings.reserveTokens),
			"--keep-recent-tokens",
			String(settings.keepRecentTokens),
			"--mode",
			chosen,
		];
		// Summary: the key for the session's model; verbatim: whether context_lookup is mentioned is decided with it.
		const env = await piKey(ctx);
		if (chosen === "verbatim") {
			args.push(...config.capArgs);
			if (event.customInstructions) {
				notify(ctx, "a verbatim checkpoint keeps the conversation as it was: the focus text is not used", "info");
			}
		} else {
			// The session's model, reached the way Pi reaches it: its server (OpenAI-compatible providers) and the
			// API key Pi resolved (piKey).
			const model = ctx.model;
			if (model) {
				args.push("--model", `${model.provider}/${model.id}`);
				if (model.api === "openai-completions" && model.baseUrl) args.push("--base-url", model.baseUrl);
			}
			if (event.customInstructions) args.push("--instructions", event.customInstructions);
		}
		const timeout = chosen === "summary" ? SUMMARY_TIMEOUT_MS : checkpointTimeout(file);
		const result = await runPicompact(command, args, timeout, event.signal, env);
		if (event.signal.aborted) return undefined;
		const answer = outcome<Checkpoint>(result, isCheckpoint);
		if (!answer.ok) {
			if (!answer.broken) return fallback(`picompact failed: ${answer.why}`);
			turnOff(ctx, answer.why);
			return fallback(answer.why, true);
		}
		const checkpoint = answer.data;
		const prep = event.preparation;
		if (checkpoint.firstKeptEntryId !== prep.firstKeptEntryId) {
			return fallback(
				`picompact would cut at ${checkpoint.firstKeptEntryId}, Pi at ${prep.firstKeptEntryId}: they disagree`,
			);
		}
		if (checkpoint.tokensBefore !== prep.tokensBefore) {
			return fallback(
				`picompact counts ${checkpoint.tokensBefore} tokens before compaction, Pi ${prep.tokensBefore}: they disagree`,
			);
		}
		const used = checkpoint.settings;
		if (used.reserveTokens !== settings.reserveTokens || used.keepRecentTokens !== settings.keepRecentTokens) {
			return fallback("picompact used other compaction settings than Pi");
		}
		for (const warning of checkpoint.warnings) notify(ctx, warning, "info");
		pending = { entryLeaf: leaf, checkpoint, reason: event.reason };
		return {
			compaction: {
				summary: checkpoint.summary,
				firstKeptEntryId: checkpoint.firstKeptEntryId,
				tokensBefore: checkpoint.tokensBefore,
				details: checkpoint.details,
			},
		};
	}

	pi.on("session_before_compact", async (event, ctx) => {
		try {
			return await onBeforeCompact(event, ctx);
		} catch (error) {
			pending = undefined;
			notify(ctx, `unexpected error (${String(error)}); Pi compacts its own way this time`);
			return undefined;
		}
	});

	pi.on("session_compact", async (event, ctx) => {
		const mine = pending;
		pending = undefined;
		if (!event.fromExtension || !mine || event.compactionEntry.summary !== mine.checkpoint.summary) return;
		const stats = mine.checkpoint.stats;
		last = {
			reason: event.reason,
			mode: mine.checkpoint.mode,
			tokensBefore: mine.checkpoint.tokensBefore,
			tokensAfter: stats?.tokens_after ?? null,
			freed: stats?.freed_tokens ?? null,
			freedPercent: stats?.freed_percent ?? null,
			trimmed: mine.checkpoint.trimmed,
			fromPicompact: true,
		};
		const reminder = mine.checkpoint.reminder;
		if (!reminder) return;
		const message = {
			customType: mine.checkpoint.reminderCustomType ?? REMINDER_TYPE,
			content: reminder,
			display: false,
			details: { compactionId: event.compactionEntry.id },
		};
		try {
			// Where the work resumes: mid-run and after an overflow the next request continues the run (steer lands
			// right before it); after a run, and for /compact, the next prompt comes later (append it now).
			if (event.willRetry || (running && event.reason !== "manual")) {
				pi.sendMessage(message, { deliverAs: "steer" });
			} else {
				pi.sendMessage(message, { triggerTurn: false });
			}
		} catch (error) {
			notify(ctx, `could not add the re-orientation message (${String(error)})`);
		}
	});

	pi.on("agent_start", async () => {
		running = true;
	});
	pi.on("agent_end", async () => {
		running = false;
	});

	// Only the reminder of the current checkpoint reaches the model: the newest one tagged with the latest
	// compaction on the branch. Older ones (some still in the kept tail, or one left over after Pi compacted its own
	// way) stay in the session file only.
	pi.on("context", async (event, ctx) => {
		const isReminder = (m: (typeof event.messages)[number]) => m.role === "custom" && m.customType === REMINDER_TYPE;
		if (!event.messages.some(isReminder)) return undefined;
		const branch = ctx.sessionManager.getBranch();
		let latest: string | undefined;
		for (let i = branch.length - 1; i >= 0 && latest === undefined; i--) {
			if (branch[i].type === "compaction") latest = branch[i].id;
		}
		let keep = -1;
		event.messages.forEach((m, i) => {
			if (!isReminder(m) || m.role !== "custom") return;
			const details = m.details as { compactionId?: unknown } | undefined;
			if (latest !== undefined && details?.compactionId === latest) keep = i;
		});
		const kept = event.messages.filter((m, i) => !isReminder(m) || i === keep);
		if (kept.length === event.messages.length) return undefined;
		return { messages: kept };
	});

	// ---------------------------------------------------------------------------------------------------------
	// Pruning between compactions
	//
	// At turn_end and agent_before_settle picompact is asked for a batch of context_edit drafts (`picompact pi
	// prune-drafts`), which it hands over only when the batch costs no prompt cache; Pi appends them, and its
	// compaction check after the turn counts the context without what they removed. At turn_end it is asked only when
	// a reason can hold (the cache lifetime has passed since the last request, the context grew by a batch since
	// picompact was last asked, or it is past 70% of the window), so that most turns run no process.

	let pruneOff: string | undefined; // why pruning is off for this session (picompact failed at it)
	const pruned: PruneRecord[] = [];
	let lastRequestAt: number | undefined; // the last request of this process, or Pi's last refresh of its cache
	let warming: "warm" | "stop" | undefined; // Pi's last cache_warming_decision since that request
	let askedAtTokens: number | undefined; // the context when picompact was last asked

	/** The prompt-cache lifetime of the session's model for the retention tier Pi uses (getPromptCacheTtlMs). */
	function cacheTtlSeconds(ctx: ExtensionContext): number | undefined {
		const tier = process.env.PI_CACHE_RETENTION === "long" ? "long" : "short";
		return ctx.model?.promptCache?.[tier];
	}

	function pruneWanted(ctx: ExtensionContext, boundary: "turn_end" | "agent_before_settle"): boolean {
		if (off || pruneOff || !config?.enabled || config.prune !== true) return false;
		if (boundary === "agent_before_settle") return true;
		const window = ctx.model?.contextWindow ?? 0;
		const tokens = ctx.getContextUsage()?.tokens ?? null;
		const ttl = cacheTtlSeconds(ctx);
		if (ttl !== undefined && lastRequestAt !== undefined && Date.now() - lastRequestAt > ttl * 1000) return true;
		if (tokens === null || window <= 0) return false;
		if (tokens > window * 0.7) return true;
		return askedAtTokens === undefined || tokens - askedAtTokens >= Math.max(2_000, window * 0.05);
	}

	async function pruneDrafts(
		ctx: ExtensionContext,
		boundary: "turn_end" | "agent_before_settle",
		proposed: readonly unknown[],
	): Promise<PruneDrafts["entries"] | undefined> {
		// Another extension's drafts (a compaction, say) change what the batch was computed on: not this time.
		if (proposed.length > 0 || !pruneWanted(ctx, boundary)) return undefined;
		const file = sessionFile(ctx);
		const leaf = ctx.sessionManager.getLeafId();
		const model = ctx.model;
		if (!file || !leaf || !model?.contextWindow) return undefined;
		askedAtTokens = ctx.getContextUsage()?.tokens ?? undefined;
		const args = [
			"pi",
			"prune-drafts",
			file,
			"--leaf",
			leaf,
			"--boundary",
			boundary,
			"--context-window",
			String(model.contextWindow),
			"--price-input",
			String(model.cost.input),
			"--price-output",
			String(model.cost.output),
			"--price-cache-read",
			String(model.cost.cacheRead),
			"--price-cache-write",
			String(model.cost.cacheWrite),
		];
		const ttl = cacheTtlSeconds(ctx);
		if (ttl !== undefined) args.push("--cache-ttl", String(ttl));
		if (warming) args.push("--warming", warming);
		const result = await runPicompact(command, args, checkpointTimeout(file), ctx.signal);
		const answer = outcome<PruneDrafts>(result, isPruneDrafts);
		if (!answer.ok) {
			if (answer.broken || !result.aborted) {
				pruneOff = answer.why;
				notify(ctx, `pruning failed (${answer.why}); no more pruning in this session (/picompact retries)`);
			}
			return undefined;
		}
		const data = answer.data;
		if (!data.prune || data.entries.length === 0) return undefined;
		pruned.push({
			boundary,
			reason: data.reason,
			tokensBefore: data.tokensBefore,
			tokensAfter: data.tokensAfter,
			tokensFreed: data.tokensFreed,
			pruned: data.pruned,
		});
		askedAtTokens = data.tokensAfter;
		return data.entries;
	}

	pi.on("turn_start", async () => {
		lastRequestAt = Date.now();
		warming = undefined;
	});
	pi.on("cache_warming_decision", async (event) => {
		warming = event.action;
		if (event.action === "warm") lastRequestAt = Date.now();
		return undefined; // Pi's decision stands
	});
	async function atBoundary(
		boundary: "turn_end" | "agent_before_settle",
		entries: SessionBoundaryDraft[],
		ctx: ExtensionContext,
	): Promise<BoundaryResult | undefined> {
		try {
			const drafts = await pruneDrafts(ctx, boundary, entries);
			return drafts ? { entries: [...entries, ...drafts] } : undefined;
		} catch (error) {
			notify(ctx, `pruning: unexpected error (${String(error)})`);
			return undefined;
		}
	}
	pi.on("turn_end", (event, ctx) => atBoundary("turn_end", event.entries, ctx));
	pi.on("agent_before_settle", (event, ctx) => atBoundary("agent_before_settle", event.entries, ctx));

	// ---------------------------------------------------------------------------------------------------------
	// Recovery tools

	async function runTool(
		name: string,
		params: Record<string, unknown>,
		toolCallId: string,
		signal: AbortSignal | undefined,
		ctx: ExtensionContext,
	) {
		const file = sessionFile(ctx);
		if (!file) throw new Error("this session is in memory only: there is no session file to search");
		const args = ["pi", "tool", name, file, "--args", JSON.stringify(params)];
		// Pi's own answer, temporary trust (--approve) included: a project's crossSession widens the search only then.
		args.push(ctx.isProjectTrusted() ? "--trusted" : "--untrusted");
		// Other sessions are read whole; this session's branch stops before the call that asked.
		const other = name === "context_search_sessions" || params.session !== undefined;
		const leaf = other ? undefined : searchLeaf(ctx, toolCallId);
		if (leaf) args.push("--leaf", leaf);
		const result = await runPicompact(command, args, TOOL_TIMEOUT_MS, signal);
		const answer = outcome<{ text: string }>(result, (d) => typeof d.text === "string");
		if (!answer.ok) throw new Error(answer.why);
		return { content: [{ type: "text" as const, text: answer.data.text }], details: {} };
	}

	/** One of the tools that run `picompact pi tool NAME` (the search tools of the lookup model). */
	function registerSearchTool(spec: ToolSpec) {
		pi.registerTool({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			parameters: spec.parameters as never,
			execute: (toolCallId, params, signal, _onUpdate, ctx) =>
				runTool(spec.name, params as Record<string, unknown>, toolCallId, signal, ctx),
		});
	}

	function registerTools(specs: ToolSpec[]) {
		if (toolsRegistered) return;
		toolsRegistered = true;
		for (const spec of specs) {
			if (spec.kind === "search") registerSearchTool(spec);
			else if (spec.kind === "lookup") registerLookupTool(spec);
		}
	}

	function registerLookupTool(spec: ToolSpec) {
		pi.registerTool({
			name: spec.name,
			label: spec.label,
			description: spec.description,
			parameters: spec.parameters as never,
			execute: async (toolCallId, params, signal, _onUpdate, ctx) => {
				const allowed = lookupVerdicts.get(toolCallId) ?? lookupAttempts++ === 0;
				lookupVerdicts.delete(toolCallId);
				if (!allowed) {
					return {
						content: [
							{
								type: "text" as const,
								text:
									"context_lookup was already tried since the last user message or tool result; use " +
									"context_grep, context_show_entry or context_list_entries to search directly.",
							},
						],
						details: {},
					};
				}
				const file = sessionFile(ctx);
				if (!file) throw new Error("this session is in memory only: there is no session file to search");
				const question = String((params as { question?: unknown }).question ?? "");
				const args = ["lookup", "--json"];
				const leaf = searchLeaf(ctx, toolCallId);
				if (leaf) args.push("--leaf", leaf);
				if (config?.lookupModel) args.push("--model", config.lookupModel);
				args.push("--", question, file); // a question may start with "-"
				const result = await runPicompact(command, args, LOOKUP_TIMEOUT_MS, signal, await piKey(ctx));
				let data: { answer?: string; note?: string | null } | undefined;
				try {
					data = JSON.parse(result.stdout);
				} catch {
					data = undefined;
				}
				if (!data || typeof data.answer !== "string") throw new Error(failure(result).why);
				const text = data.note ? `${data.answer}\n\n[note] ${data.note}` : data.answer;
				return { content: [{ type: "text" as const, text }], details: {} };
			},
		});
	}

	// The one-attempt rule: calls in one assistant message are judged in order, before any of them runs.
	pi.on("tool_execution_start", async (event) => {
		if (event.toolName === "context_lookup") lookupVerdicts.set(event.toolCallId, lookupAttempts++ === 0);
	});
	pi.on("tool_result", async (event) => {
		if (!TOOL_NAMES.includes(event.toolName)) lookupAttempts = 0;
	});
	pi.on("user_bash", async () => {
		lookupAttempts = 0;
	});
	pi.on("before_agent_start", async (event) => {
		if (event.messageType === "user") lookupAttempts = 0;
	});

	/** The tools read the session file: none for a session that lives only in memory (--no-session). */
	function registerToolsIfUsable(ctx: ExtensionContext) {
		if (config?.enabled && ctx.sessionManager.getSessionFile()) registerTools(config.tools ?? []);
	}

	pi.on("session_start", async (_event, ctx) => {
		await loadConfig(ctx);
		if (off) return; // the notice was given
		if (!config) {
			notify(ctx, `picompact does not run (${configError}); Pi compacts its own way`);
			return;
		}
		registerToolsIfUsable(ctx);
	});

	// ---------------------------------------------------------------------------------------------------------
	// /picompact

	function describe(): string {
		const lines: string[] = [];
		if (off) lines.push(`picompact is off for this session: ${off} (/picompact retries)`);
		else if (!config) lines.push(`picompact does not run: ${configError ?? "not loaded yet"}`);
		else {
			const cap = config.cap === false ? "none" : config.cap === null ? "default (keepRecentTokens / 2)" : `${config.cap}`;
			lines.push(
				`picompact: ${config.enabled ? "enabled" : "disabled"}, mode ${mode()}, cap ${cap}, lookup ${
					config.lookupAvailable ? (config.lookupModel ?? "session model") : "unavailable"
				}`,
			);
		}
		lines.push(`command: ${command.join(" ")}${install?.version ? ` (installed by picompact ${install.version})` : ""}`);
		if (config && config.prune !== true) lines.push("pruning: off (picompact.prune)");
		else if (pruneOff) lines.push(`pruning: off for this session: ${pruneOff} (/picompact retries)`);
		else if (pruned.length === 0) lines.push("pruning: on, nothing pruned yet in this process");
		else {
			const total = pruned.reduce((sum, p) => sum + p.tokensFreed, 0);
			lines.push(`pruning: ${pruned.length} batch${pruned.length === 1 ? "" : "es"}, ${total} tokens freed:`);
			for (const p of pruned) {
				const what = p.pruned.map((e) => `${e.id}${e.tool ? ` ${e.tool}` : ""}${e.tokens ? ` ${e.tokens}` : ""}`);
				lines.push(
					`  ${p.boundary} (${p.reason}): ${p.tokensBefore} -> ${p.tokensAfter} tokens, ${p.pruned.length} ` +
						`results: ${what.join(", ")}`,
				);
			}
			lines.push("  the originals stay in the session file: context_show_entry ID (or `picompact show ID`)");
		}
		if (!last) lines.push("no compaction yet in this process");
		else if (!last.fromPicompact) lines.push(`last compaction (${last.reason}): Pi's own, because ${last.note}`);
		else {
			const after = last.tokensAfter !== null ? `${last.tokensAfter}` : "?";
			const freed = last.freed !== null ? `${last.freed} freed (${Math.round(last.freedPercent ?? 0)}%)` : "";
			lines.push(
				`last compaction (${last.reason}, ${last.mode}): ${last.tokensBefore} -> ${after} tokens, ${freed}, ` +
					`trimmed by the cap: ${last.trimmed ? "yes" : "no"}`,
			);
		}
		return lines.join("\n");
	}

	pi.registerCommand("picompact", {
		description: "picompact: show the configuration and the last compaction; `/picompact compact` compacts now",
		handler: async (args: string, ctx: ExtensionCommandContext) => {
			const [sub, ...rest] = args.trim().split(/\s+/);
			pruneOff = undefined;
			if (off) {
				// The user asks for picompact again: try it afresh.
				off = undefined;
				config = undefined;
				configError = undefined;
			}
			if (sub === "compact") {
				const focus = rest.join(" ").trim();
				// Wait for it: print mode ends (and cancels a running compaction) once the command returns.
				await new Promise<void>((resolve) => {
					ctx.compact({
						customInstructions: focus || undefined,
						onComplete: () => {
							notify(ctx, describe(), "info");
							resolve();
						},
						onError: (error) => {
							notify(ctx, `compaction failed: ${error.message}`, "error");
							resolve();
						},
					});
				});
				return;
			}
			if (!config) await loadConfig(ctx, true); // a failure is in what describe() shows
			registerToolsIfUsable(ctx);
			notify(ctx, describe(), "info");
		},
	});
}
