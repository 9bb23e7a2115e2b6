"""Two copies of the extension loaded in one Pi (a global and a project install in a trusted project): the first
copy Pi loads runs, the other registers nothing and says once that it stands down. First with a stand-in for Pi's
loader (two factories sharing one synchronous event bus, as Pi's do), then in the real Pi 1.6 over RPC."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.extension.install import extension_source
from tests.helpers.cli import picompact_exe
from tests.oracle import NODE22, NOT_INSTALLED, pi_installed

LOADER = r"""
import { EventEmitter } from "node:events";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

// Pi's event bus: handlers wrapped in async functions, called synchronously by emit.
const emitter = new EventEmitter();
const bus = {
	emit: (channel, data) => emitter.emit(channel, data),
	on: (channel, handler) => {
		const safe = async (data) => { await handler(data); };
		emitter.on(channel, safe);
		return () => emitter.off(channel, safe);
	},
};
const copies = [];
for (const dir of process.argv.slice(2)) {
	const copy = { dir, commands: [], tools: [], handlers: {} };
	const pi = {
		on(name, handler) { (copy.handlers[name] ??= []).push(handler); return () => {}; },
		registerCommand(name) { copy.commands.push(name); },
		registerTool(tool) { copy.tools.push(tool.name); },
		sendMessage() {},
		events: bus,
	};
	const mod = await import(pathToFileURL(join(dir, "index.ts")).href);
	await mod.default(pi);
	copies.push(copy);
}
const notices = [];
const ctx = { hasUI: true, ui: { notify: (text, level) => notices.push({ text, level }) } };
const second = copies[1];
for (const handler of second.handlers.session_start ?? []) await handler({ type: "session_start" }, ctx);
for (const handler of second.handlers.session_start ?? []) await handler({ type: "session_start" }, ctx);
process.stdout.write(JSON.stringify({
	copies: copies.map((c) => ({ dir: c.dir, commands: c.commands, events: Object.keys(c.handlers).sort() })),
	notices,
}));
"""


def _copy(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "index.ts").write_bytes(extension_source())
    (directory / "install.json").write_bytes(orjson.dumps({"command": ["/nonexistent/picompact"], "version": "0"}))
    return directory


def test_the_second_copy_loaded_stands_down(tmp_path: Path) -> None:
    if not NODE22.exists():
        pytest.skip(NOT_INSTALLED)
    project = _copy(tmp_path / "project" / ".pi" / "extensions" / "picompact")
    global_ = _copy(tmp_path / "agent" / "extensions" / "picompact")
    loader = tmp_path / "loader.mjs"
    loader.write_text(LOADER)
    proc = subprocess.run(
        [str(NODE22), str(loader), str(project), str(global_)], capture_output=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    data = orjson.loads(proc.stdout)
    first, second = data["copies"]
    assert first["commands"] == ["picompact"] and "session_before_compact" in first["events"]
    assert second["commands"] == [] and second["events"] == ["session_start"]
    assert len(data["notices"]) == 1  # once, however many session starts
    notice = data["notices"][0]
    assert notice["level"] == "warning"
    assert f"another copy of the extension is active ({project})" in notice["text"]
    assert f"this one ({global_}) stands down" in notice["text"]


def test_real_pi_loads_one_working_copy_of_two(tmp_path: Path) -> None:
    """Pi 1.6 in a trusted project with both installs: one /picompact command, not /picompact:1 and :2."""
    if not pi_installed():
        pytest.skip(NOT_INSTALLED)
    import tests.extension.test_pi_e2e as e2e
    from tests.extension.test_pi_e2e import FAKE_MODEL, _sandbox_env
    from tests.helpers.real_pi import local_model, pi_rpc

    def trusting_pi(*args: str) -> list[str]:  # the e2e command line, trusting the project (--approve)
        return [("--approve" if a == "--no-approve" else a) for a in e2e._pi(*args)]

    agent, home, work = tmp_path / "agent", tmp_path / "home", tmp_path / "work"
    for d in (agent, home, work):
        d.mkdir()
    with local_model(tmp_path, lifetime=60) as port:
        model = {"id": "fake-model", "name": "Fake", "reasoning": False, "input": ["text"], "contextWindow": 100000}
        provider = {"baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions", "apiKey": "k"}
        (agent / "models.json").write_bytes(orjson.dumps({"providers": {"fake": {**provider, "models": [model]}}}))
        (agent / "settings.json").write_bytes(orjson.dumps({"defaultProjectTrust": "always"}))
        env: dict[str, Any] = {**_sandbox_env({"tempDir": str(tmp_path)}), "PATH": f"{NODE22.parent}:/usr/bin:/bin"}
        env["TMPDIR"] = str(tmp_path)
        installed = subprocess.run([*picompact_exe(), "pi", "install"], env=env, cwd=work, capture_output=True)
        assert installed.returncode == 0, installed.stderr
        refused = subprocess.run(
            [*picompact_exe(), "pi", "install", "--project"], env=env, cwd=work, capture_output=True
        )
        assert refused.returncode == 2  # picompact refuses; a hand-made copy is what Pi then sees
        global_dir = agent / "extensions" / "picompact"
        project_dir = work / ".pi" / "extensions" / "picompact"
        project_dir.mkdir(parents=True)
        for name in ("index.ts", "install.json"):
            (project_dir / name).write_bytes((global_dir / name).read_bytes())
        commands = [{"id": "cmds", "type": "get_commands"}]
        events = pi_rpc(FAKE_MODEL, env, work, commands, tmp_path / "pi.err", approve=True)
        printed = subprocess.run(
            trusting_pi("-p", "hello", "--no-session"), env=env, cwd=work, capture_output=True, timeout=120
        )
    response = next(e for e in events if e.get("type") == "response" and e.get("id") == "cmds")
    names = [c["name"] for c in response["data"]["commands"] if c["name"].startswith("picompact")]
    paths = [c["sourceInfo"]["path"] for c in response["data"]["commands"] if c["name"].startswith("picompact")]
    assert names == ["picompact"] and paths == [str(project_dir / "index.ts")], response["data"]["commands"]
    # In print mode the notice is a line on stderr: once, from the global copy, naming the project's.
    assert printed.returncode == 0, printed.stderr[-2000:]
    lines = [line for line in printed.stderr.decode().splitlines() if "stands down" in line]
    assert len(lines) == 1, printed.stderr[-2000:]
    assert f"another copy of the extension is active ({project_dir})" in lines[0]
    assert f"this one ({global_dir}) stands down" in lines[0]
