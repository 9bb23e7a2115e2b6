// Loads the Pi extension (index.ts, next to install.json in the directory given as argv[2]) with a stand-in for
// Pi's ExtensionAPI, drives a scripted sequence of events, and prints what the extension did as one JSON document.
// The installed command (install.json) is a fake picompact that logs its arguments; see test_extension_logic.py.
// With "script" and a JSON file of steps as argv[3..4], it runs those steps instead (see runScript below).
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const dir = process.argv[2];
const scripted = process.argv[3] === "script";
// In a script, every wait of a second or more is recorded and cut short, so that a fake picompact that hangs is
// given up on quickly; the test reads the limits the extension asked for. picompact's time limits (5 s and more)
// end as soon as the fake says it hangs (it adds its pid to hung.pids, after ignoring SIGTERM where it does so),
// else after 1 s, still many times what the fake takes to answer; the grace between SIGTERM and SIGKILL (2 s)
// becomes 0.25 s, as the fake that ignores SIGTERM has set that up by then.
const limits = [];
if (scripted) {
	const realSetTimeout = globalThis.setTimeout;
	const realClearTimeout = globalThis.clearTimeout;
	const hung = () => {
		try {
			return readFileSync(join(dir, "hung.pids"), "utf8").split("\n").filter(Boolean).length;
		} catch {
			return 0; // none hung yet
		}
	};
	const watches = new Map(); // a cut-short limit -> the interval watching for a hung fake
	globalThis.setTimeout = (fn, ms, ...rest) => {
		if (ms < 1000) return realSetTimeout(fn, ms, ...rest);
		limits.push(ms);
		if (ms < 5000) return realSetTimeout(fn, 250, ...rest);
		const before = hung();
		const fire = () => {
			clearInterval(watches.get(timer));
			watches.delete(timer);
			fn(...rest);
		};
		const timer = realSetTimeout(fire, 1000);
		watches.set(
			timer,
			setInterval(() => {
				if (hung() > before) {
					realClearTimeout(timer);
					fire();
				}
			}, 5),
		);
		return timer;
	};
	globalThis.clearTimeout = (timer) => {
		if (watches.has(timer)) {
			clearInterval(watches.get(timer));
			watches.delete(timer);
		}
		realClearTimeout(timer);
	};
}
const handlers = new Map();
const tools = new Map();
const commands = new Map();
const sent = [];
const pi = {
	on(name, handler) {
		if (!handlers.has(name)) handlers.set(name, []);
		handlers.get(name).push(handler);
		return () => {};
	},
	registerTool(tool) {
		tools.set(tool.name, tool);
	},
	registerCommand(name, options) {
		commands.set(name, options);
	},
	sendMessage(message, options) {
		sent.push({ message, options: options ?? null });
	},
};

const branch = [
	{ type: "compaction", id: "c1", parentId: null },
	{ type: "compaction", id: "c2", parentId: "c1" },
	{ type: "message", id: "u1", parentId: "c2", message: { role: "user", content: "hi" } },
	{
		type: "message",
		id: "a1",
		parentId: "u1",
		message: {
			role: "assistant",
			content: ["a", "b", "c", "d", "e", "f", "g"].map((id) => ({ type: "toolCall", id, name: "context_lookup" })),
		},
	},
];
const ctx = {
	cwd: dir,
	hasUI: false,
	mode: "print",
	model: { provider: "fake", id: "fake-model", contextWindow: 24000 },
	// The keys Pi resolved, by provider: "fake" (the session's) and "other" have one, "login" an OAuth token, any
	// other provider none.
	modelRegistry: {
		getApiKeyForProvider: async (provider) =>
			({ fake: "sk-pi-resolved-key", other: "sk-pi-resolved-other", login: "oauth-access-token" })[provider],
		isUsingOAuth: (model) => model.provider === "login",
	},
	isProjectTrusted: () => false,
	sessionManager: {
		getSessionFile: () => join(dir, "session.jsonl"),
		getBranch: () => branch,
		getLeafId: () => "a1",
	},
	ui: { notify() {} },
};

async function emit(name, event) {
	let result;
	for (const handler of handlers.get(name) ?? []) {
		const r = await handler({ type: name, ...event }, ctx);
		if (r !== undefined) result = r;
	}
	return result;
}

async function lookup(id) {
	const result = await tools.get("context_lookup").execute(id, { question: `q ${id}` }, undefined, undefined, ctx);
	return result.content[0].text;
}

const mod = await import(pathToFileURL(join(dir, "index.ts")).href);
mod.default(pi);

// A script: steps of ["behave", {config: B, checkpoint: B}] (what the fake picompact does next: ok, hang, ...),
// ["start"], ["compact"], ["command", args] (/picompact), ["tool", {name, params}] (a tool call: its text, or
// {error}), ["schema", name] (a tool's parameters), ["event", {type, ...}] (a Pi event to the extension's handlers)
// or ["model", {provider, id, contextWindow}] (the session's model from now on, as after /model). Prints, per step,
// the notices the extension gave, how many times picompact was run so far and what the step returned.
async function runScript(steps) {
	const notices = [];
	ctx.hasUI = true;
	ctx.ui = { notify: (text, level) => notices.push({ text, level }) };
	const calls = () => {
		try {
			return readFileSync(join(dir, "calls.jsonl"), "utf8").split("\n").filter(Boolean).length;
		} catch {
			return 0; // not run yet
		}
	};
	const settings = { enabled: true, reserveTokens: 4096, keepRecentTokens: 4000 };
	const done = [];
	for (const [kind, arg] of steps) {
		const before = notices.length;
		let result = null;
		if (kind === "behave") writeFileSync(join(dir, "behaviour.json"), JSON.stringify(arg));
		else if (kind === "start") await emit("session_start", { reason: "startup" });
		else if (kind === "compact") {
			const preparation = { firstKeptEntryId: "k1", tokensBefore: 1234, settings };
			const signal = new AbortController().signal;
			const event = { preparation, branchEntries: branch, reason: "threshold", willRetry: false, signal };
			result = (await emit("session_before_compact", event)) ?? null;
		} else if (kind === "command") await commands.get("picompact").handler(arg ?? "", ctx);
		else if (kind === "tool") {
			try {
				const answer = await tools.get(arg.name).execute("t1", arg.params, undefined, undefined, ctx);
				result = answer.content[0].text;
			} catch (error) {
				result = { error: String(error?.message ?? error) };
			}
		} else if (kind === "schema") result = tools.get(arg).parameters;
		else if (kind === "event") await emit(arg.type, arg);
		else if (kind === "model") ctx.model = arg;
		done.push({ kind, result, notices: notices.slice(before), calls: calls(), tools: [...tools.keys()].sort() });
	}
	return done;
}

if (scripted) {
	// No exit here: node ends once the extension's children and timers are done (a picompact that ignores SIGTERM
	// is killed after the grace period first).
	const steps = JSON.parse(readFileSync(process.argv[4], "utf8"));
	process.stdout.write(JSON.stringify({ steps: await runScript(steps), limits }));
} else {
	await fixedSequence();
}

async function fixedSequence() {
	const out = {};
	await emit("session_start", { reason: "startup" });
	out.tools = [...tools.keys()].sort();
	out.toolSpecs = [...tools.values()].map((t) => ({
		name: t.name,
		label: t.label,
		description: t.description,
		parameters: t.parameters,
	}));
	out.commands = [...commands.keys()];
	if (process.argv[3] === "disabled") {
		const preparation = { firstKeptEntryId: "k1", tokensBefore: 1234, settings: {} };
		const signal = new AbortController().signal;
		const event = { preparation, branchEntries: branch, reason: "threshold", willRetry: false, signal };
		out.compaction = (await emit("session_before_compact", event)) ?? null;
		process.stdout.write(JSON.stringify(out));
		process.exit(0);
	}

	// One assistant message with two lookups: both are judged before either runs.
	await emit("tool_execution_start", { toolCallId: "a", toolName: "context_lookup", args: {} });
	await emit("tool_execution_start", { toolCallId: "b", toolName: "context_lookup", args: {} });
	out.a = await lookup("a");
	out.b = await lookup("b");
	await emit("tool_result", { toolCallId: "x", toolName: "context_grep", content: [], isError: false });
	await emit("tool_execution_start", { toolCallId: "c", toolName: "context_lookup", args: {} });
	out.c = await lookup("c"); // a fallback search does not reset
	await emit("tool_result", { toolCallId: "y", toolName: "bash", content: [], isError: false });
	await emit("tool_execution_start", { toolCallId: "d", toolName: "context_lookup", args: {} });
	out.d = await lookup("d"); // another tool's result resets
	await emit("before_agent_start", { messageType: "user", prompt: "next", systemPrompt: "" });
	await emit("tool_execution_start", { toolCallId: "e", toolName: "context_lookup", args: {} });
	await emit("tool_execution_start", { toolCallId: "f", toolName: "context_lookup", args: {} });
	out.e = await lookup("e"); // a user message resets
	out.f = await lookup("f");
	await emit("user_bash", { command: "ls" });
	await emit("tool_execution_start", { toolCallId: "g", toolName: "context_lookup", args: {} });
	out.g = await lookup("g"); // a bash execution resets

	// Only the reminder of the latest compaction on the branch (c2) reaches the model.
	const reminder = (n, id) => ({
		role: "custom",
		customType: "picompact.reorientation",
		content: `r${n}`,
		display: false,
		details: { compactionId: id },
	});
	const user = { role: "user", content: "u" };
	const filtered = await emit("context", {
		messages: [user, reminder(1, "c1"), { role: "assistant", content: [] }, reminder(2, "c2"), reminder(3, "c2")],
	});
	out.context = filtered ? filtered.messages.map((m) => m.content) : null;
	out.contextUnchanged = (await emit("context", { messages: [user, reminder(4, "c2")] })) ?? null;
	const stale = await emit("context", { messages: [user, reminder(5, "c1")] });
	out.contextStale = stale ? stale.messages.map((m) => m.content) : null;

	// Compaction: picompact's cut must be Pi's; the reminder goes where the work resumes.
	const settings = { enabled: true, reserveTokens: 4096, keepRecentTokens: 4000 };
	async function compact(firstKeptEntryId, reason, willRetry) {
		const preparation = { firstKeptEntryId, tokensBefore: 1234, settings };
		const result = await emit("session_before_compact", {
			preparation,
			branchEntries: branch,
			reason,
			willRetry,
			signal: new AbortController().signal,
		});
		if (result?.compaction) {
			const entry = { type: "compaction", id: `c-${reason}`, ...result.compaction };
			await emit("session_compact", { compactionEntry: entry, fromExtension: true, reason, willRetry });
		}
		return result ?? null;
	}
	out.disagree = await compact("u1", "threshold", false);
	out.agreeIdle = await compact("k1", "threshold", false);
	await emit("agent_start", {});
	out.agreeRunning = await compact("k1", "threshold", false);
	await emit("agent_end", { messages: [] });
	out.overflow = await compact("k1", "overflow", true);
	out.manual = await compact("k1", "manual", false);
	out.sent = sent;
	// /picompact: the configuration and the last compaction's figures (on stderr: print mode has no UI).
	process.stderr.write("--- /picompact ---\n");
	await commands.get("picompact").handler("", ctx);
	process.stdout.write(JSON.stringify(out));
}
