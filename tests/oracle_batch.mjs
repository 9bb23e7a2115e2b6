// Answers the Pi oracle's own commands (pi_oracle.mjs analyze|context|append-compaction FILE [options]) for many
// files in one node process, so that node and Pi's modules start once instead of once per file. The oracle script
// itself is imported, with its final `main();` call replaced by an export of its functions, and each call runs as that
// main() runs it (parse the arguments, call Pi, print the result or {"error": ...} with exit status 2); the output and
// exit status of each call are captured instead of going to stdout and ending the process.
//
// Usage: node oracle_batch.mjs PI_ORACLE_MJS   reads one call (a JSON array of arguments) per line on stdin and
// answers each with one {"status": N, "stdout": "..."} line on stdout, until stdin ends. When the script does not
// have the shape this relies on, prints {"unsupported": "..."} and exits 3: the caller then runs the script itself.
import fs from "node:fs";
import * as nodeModule from "node:module";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const [script] = process.argv.slice(2);
const TAIL = "\nmain();\n";
const NAMES = ["parseArgs", "loadPi16", "analyze16", "context16", "appendCompaction16", "render", "cleanup", "fail"];

const source = fs.readFileSync(script, "utf8");
const missing = NAMES.filter((name) => !source.includes(`function ${name}(`));
if (!source.endsWith(TAIL) || missing.length) {
	process.stdout.write(`${JSON.stringify({ unsupported: `no final main() call or no ${missing.join(", ")}` })}\n`);
	process.exit(3);
}

const MARK = "oracle-batch";
nodeModule.registerHooks({
	load(url, context, nextLoad) {
		const result = nextLoad(url, context);
		if (!url.endsWith(`?${MARK}`)) return result;
		const text = typeof result.source === "string" ? result.source : Buffer.from(result.source).toString("utf8");
		return { ...result, source: `${text.slice(0, -TAIL.length)}\nexport { ${NAMES.join(", ")} };\n` };
	},
});
const oracle = await import(`${pathToFileURL(script).href}?${MARK}`);

class Exit {
	constructor(code) {
		this.code = code;
	}
}

const write = process.stdout.write.bind(process.stdout);
const exit = process.exit;
let pi = null;

/** One job, as main() runs it for Pi 1.6 (the caller sends no --pi and no --stable-ids): its output and status. */
async function runJob(argv) {
	let out = "";
	let status = 0;
	process.stdout.write = (chunk) => {
		out += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
		return true;
	};
	process.exit = (code) => {
		throw new Exit(code ?? 0);
	};
	try {
		const args = oracle.parseArgs(argv);
		pi ??= await oracle.loadPi16();
		let result;
		try {
			if (args.command === "analyze") result = oracle.analyze16(pi, args);
			else if (args.command === "context") result = oracle.context16(pi, args);
			else result = oracle.appendCompaction16(pi, args);
		} catch (e) {
			if (e instanceof Exit) throw e;
			oracle.fail(e?.message ?? String(e), { errorName: e?.name ?? null });
		}
		oracle.cleanup();
		const text = args.compact ? JSON.stringify(result) : oracle.render(result);
		process.stdout.write(`${text}\n`);
	} catch (e) {
		if (!(e instanceof Exit)) throw e;
		status = e.code;
	} finally {
		process.stdout.write = write;
		process.exit = exit;
	}
	return { status, stdout: out };
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
for await (const line of lines) {
	if (line.trim()) write(`${JSON.stringify(await runJob(JSON.parse(line)))}\n`);
}
