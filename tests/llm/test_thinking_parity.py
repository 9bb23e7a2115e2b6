"""Reasoning fields of a summary request agree with what Pi 1.6's pi-ai writes for the same model and level.

pi-ai builds each body itself (``streamSimple`` with ``onPayload``: nothing is sent); picompact's body for the same
model, level and prompt must carry the same thinking fields and output limit."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.checkpoint.summary import fit_request, resolve_summary_model
from pi_compact.llm import resolve_model
from pi_compact.llm.client import _body
from tests.oracle import run_pi_script

SCRIPT = r"""
import { readFileSync } from "node:fs";
const [pkg, jobsFile] = process.argv.slice(2);
const base = pkg + "/../pi-ai/dist/";
const { getModel } = await import(base + "compat.js");
const out = [];
for (const job of JSON.parse(readFileSync(jobsFile, "utf8"))) {
  let model = getModel(job.provider, job.id);
  if (!model) { out.push(null); continue; }
  if (job.api) model = { ...model, api: job.api };
  const mod = await import(base + "api/" + model.api + ".js");
  const user = { role: "user", content: [{ type: "text", text: job.user }], timestamp: 0 };
  const context = { systemPrompt: job.system, messages: [user] };
  let payload = null;
  const options = { apiKey: "sk-k", cacheRetention: "none", reasoning: job.level === "off" ? undefined : job.level,
    onPayload: (p) => { payload = p; throw new Error("captured"); } };
  try {
    for await (const e of mod.streamSimple(model, context, options)) if (e.type === "error" || e.type === "done") break;
  } catch {}
  out.push(payload);
}
console.log(JSON.stringify(out));
"""

FIELDS = (
    "thinking",
    "output_config",
    "reasoning_effort",
    "reasoning",
    "include",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
)
# (provider, id, level, pi's api for a Chat Completions body where the table says Responses: picompact sends Chat
# Completions to OpenAI's models when given a --base-url)
CASES = [
    ("anthropic", "claude-sonnet-4-5", "medium", None),
    ("anthropic", "claude-sonnet-4-5", "high", None),
    ("anthropic", "claude-sonnet-4-5", "xhigh", None),
    ("anthropic", "claude-sonnet-4-5", "minimal", None),
    ("anthropic", "claude-sonnet-4-5", "off", None),
    ("anthropic", "claude-opus-4-6", "medium", None),
    ("anthropic", "claude-opus-4-6", "max", None),
    ("anthropic", "claude-opus-4-6", "off", None),
    ("anthropic", "claude-haiku-4-5", "low", None),
    ("openai", "gpt-5.1", "minimal", "openai-completions"),
    ("openai", "gpt-5.1", "high", "openai-completions"),
    ("openai", "gpt-5.1", "xhigh", "openai-completions"),
    ("openai", "gpt-5.1", "off", "openai-completions"),
    ("openai", "gpt-5-mini", "medium", "openai-completions"),
    ("openai", "gpt-4.1-mini", "high", "openai-completions"),
    ("openai", "gpt-5.1", "minimal", None),
    ("openai", "gpt-5.1", "high", None),
    ("openai", "gpt-5.1", "off", None),
    ("openai", "gpt-5-mini", "medium", None),
    ("openai", "gpt-5-mini", "off", None),
    ("openai", "gpt-4.1-mini", "high", None),
    ("google", "gemini-2.5-flash", "medium", None),
    ("google", "gemini-2.5-flash", "off", None),
    ("google", "gemini-2.5-pro", "high", None),
    ("google", "gemini-2.5-pro", "off", None),
    ("google", "gemini-3.1-pro-preview", "minimal", None),
    ("google", "gemini-3.1-pro-preview", "xhigh", None),
    ("google", "gemini-3.1-pro-preview", "off", None),
]

SYSTEM = "You write context checkpoints."
USER = "<conversation>\n[User]: fix the build\n</conversation>\n\nSummarise."


def _ours(provider: str, model_id: str, level: str, api: str | None = None) -> dict[str, Any]:
    base_url = "https://api.openai.com/v1" if api == "openai-completions" else None
    ref = resolve_model((provider, model_id), base_url=base_url)
    assert ref.protocol == {"openai-completions": "openai", None: ref.protocol}[api]
    model = resolve_summary_model(ref)
    request = replace(fit_request("history", USER, model, level), system=SYSTEM, user=USER)
    return orjson.loads(_body(request.to_request(), ref))


def _pick(body: dict[str, Any]) -> dict[str, Any]:
    """The reasoning fields and output limit; Gemini's live in the SDK's ``config`` (the REST generationConfig)."""
    config = body.get("config") or body.get("generationConfig")
    if isinstance(config, dict):
        return {k: config[k] for k in ("thinkingConfig", "maxOutputTokens") if k in config}
    return {k: body[k] for k in FIELDS if k in body}


def test_reasoning_fields_match_pi(tmp_path: Path) -> None:
    jobs = [
        {"provider": p, "id": i, "level": lvl, "api": api, "system": SYSTEM, "user": USER} for p, i, lvl, api in CASES
    ]
    theirs = run_pi_script(tmp_path, "payload.mjs", SCRIPT, "package.json", jobs, "pi-ai's request builder")
    assert all(body is not None for body in theirs), "Pi 1.6 knows every model of CASES"
    mismatches = []
    for (provider, model_id, level, api), pi_body in zip(CASES, theirs, strict=True):
        mine = _pick(_ours(provider, model_id, level, api))
        if mine != _pick(pi_body):
            mismatches.append((provider, model_id, level, mine, _pick(pi_body)))
    assert mismatches == []


@pytest.mark.parametrize("level", ["off", "medium"])
def test_a_model_that_does_not_reason_gets_no_reasoning_fields(level: str) -> None:
    body = _ours("openai", "gpt-4.1-mini", level)
    assert not {"reasoning_effort", "reasoning", "thinking"} & set(body)
