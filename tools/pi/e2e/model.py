#!/usr/bin/env python3
"""A local model for running the real Pi CLI in tests (stdlib only): OpenAI Chat Completions
(``…/chat/completions``) and the Gemini API (``…/models/ID:generateContent`` and ``:streamGenerateContent``, as
Pi's ``google-generative-ai`` API and picompact send it; a Gemini request is read as the Chat Completions request
it stands for, so both models below answer it).

Two kinds of model, served on 127.0.0.1 at a free port:

* ``PlainModel``: answers every request with one fixed text (``OK from fake model``); picompact's own summary
  requests (summary mode) get a checkpoint in its format that says it was written here (``PICOMPACT_SUMMARY_MARK``).
  Its one tool call: a request that ends with a prompt ``Call TOOL: VALUE`` and offers TOOL gets a call of it, each
  required string parameter filled with VALUE (``fill``); the request with the result gets the fixed text.
* ``ScriptedModel``: plays a coding agent from a plan the driver gives it (``drive.py``). A request whose last
  message is a prompt of the plan gets that prompt's first step; a request that ends with tool results gets the next
  step of the call it answers. Tool-call ids carry the prompt and step (``pc<P>s<S>k<K>…``), so the model finds its
  place from the request alone, whatever Pi compacted before it (over the Gemini API Pi sends them back only for
  Gemini 3 and later). Pi's summarization requests get a short structured
  summary. It counts a request's tokens the way a real tokenizer roughly would (ASCII characters / 4, every other
  character 1, 4 per message, the tool schemas too) while Pi estimates characters / 4 for all text: a file of CJK
  characters is therefore bigger for the model than Pi thinks, and a request over the context window is refused
  with OpenAI's ``context_length_exceeded`` error, which Pi answers by compacting and retrying.

Every request is appended to a JSON Lines log: ``{"seq", "t", "method", "path", "status", "body", "reply", "api",
"auth"}``; ``api`` is ``openai`` or ``google`` (``body`` is the request as sent), ``auth`` where the request carried a
credential and its SHA-256 (``{"via": "bearer" | "authorization" | "x-goog-api-key" | "x-api-key" | "key",
"sha256"}``, None without one): the credential itself is not logged. Streaming answers (``stream: true``,
``:streamGenerateContent``) are SSE chunks ending with the usage.

Run on its own (plain model): ``model.py --port-file FILE --log FILE [--lifetime SEC] [--text TEXT]``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SUMMARIZER = "You are a context summarization assistant"
PICOMPACT_SUMMARIZER = "You write context checkpoints"  # picompact's summary mode (checkpoint/summary/prompts.py)
PICOMPACT_SUMMARY_MARK = "Checkpoint written by the local test model for picompact"
GOOGLE_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
CALL_ID = re.compile(r"^pc(\d+)s(\d+)k(\d+)x[0-9a-f]+$")
ENTRY_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}(?![0-9a-f])")
CALL_PROMPT = re.compile(r"^Call (?P<tool>[A-Za-z0-9_]+): (?P<value>.+)$", re.S)  # the plain model's tool call


def text_of(content: Any) -> str:
    """The text parts of a request message's content, joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _tokens(text: str) -> float:
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars / 4 + (len(text) - ascii_chars)


def prompt_tokens(body: dict[str, Any]) -> int:
    """What this model counts for a request: every message's text, tool calls and the offered tool schemas."""
    total = 3.0
    for message in body.get("messages") or []:
        total += 4 + _tokens(text_of(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            total += 3 + _tokens(str(function.get("name", ""))) + _tokens(str(function.get("arguments", "")))
    if body.get("tools"):
        total += _tokens(json.dumps(body["tools"], separators=(",", ":")))
    return math.ceil(total)


def is_summarization(body: dict[str, Any]) -> bool:
    return any(
        m.get("role") in ("system", "developer") and SUMMARIZER in text_of(m.get("content"))
        for m in body.get("messages") or []
    )


def is_picompact_summary(body: dict[str, Any]) -> bool:
    """A summary request of picompact's summary mode (its own system prompt, not Pi's)."""
    return any(
        m.get("role") in ("system", "developer") and PICOMPACT_SUMMARIZER in text_of(m.get("content"))
        for m in body.get("messages") or []
    )


def picompact_summary(body: dict[str, Any]) -> str:
    """A checkpoint in the format picompact asks for: the history sections, or those of a turn prefix."""
    asked = "\n".join(text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user")
    if "## Original Request" in asked:
        sections = ["## Original Request", f"- {PICOMPACT_SUMMARY_MARK}", "", "## Early Progress", "- (none)"]
        return "\n".join([*sections, "", "## Context for Suffix", "- (none)"])
    lines = ["## Goal", f"- {PICOMPACT_SUMMARY_MARK}", "", "## Constraints & Preferences", "- (none)", ""]
    lines += ["## Progress", "### Done", "- [x] Discussed the request", "", "## Key Decisions", "- (none)", ""]
    return "\n".join(
        [*lines, "## Next Steps", "1. Continue with the latest request", "", "## Critical Context", "- (none)"]
    )


def offered(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The function tools a request offers: name -> JSON schema of the parameters."""
    out = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and function.get("name"):
            out[function["name"]] = function.get("parameters") or {}
    return out


def _calls_by_id(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    calls = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = function.get("arguments")
            calls[call.get("id")] = {"tool": function.get("name"), "arguments": arguments}
    return calls


def answered_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results at the end of the request (before any user messages after them), with their calls."""
    messages = body.get("messages") or []
    end = len(messages)
    while end and messages[end - 1].get("role") == "user":
        end -= 1
    start = end
    while start and messages[start - 1].get("role") == "tool":
        start -= 1
    calls = _calls_by_id(messages)
    return [
        {**calls.get(m.get("tool_call_id"), {"tool": None, "arguments": None}), "result": text_of(m.get("content"))}
        for m in messages[start:end]
    ]


def summary_for(body: dict[str, Any]) -> str:
    """A short structured summary of what Pi asks to be summarised (its serialized conversation)."""
    asked = "\n".join(text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user")
    requests = re.findall(r"^\[User\]: (.+)$", asked, re.M)
    goal = requests[0][:200] if requests else "continue the work in progress"
    reads = sorted(set(re.findall(r'"path":\s*"([^"]+)"', asked)))[:8]
    lines = ["## Goal", f"- {goal}", "", "## Progress", "### Done"]
    lines += [f"- [x] Looked at `{path}`" for path in reads] or ["- [x] Discussed the request"]
    lines += ["", "## Next Steps", "1. Continue with the latest request", "", "## Critical Context", "- (none)"]
    return "\n".join(lines)


def fill(schema: dict[str, Any], value: str) -> dict[str, Any]:
    """Arguments for a tool: each required string parameter gets ``value``, other required ones a neutral value."""
    properties = schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in schema.get("required") or []:
        spec = properties.get(name) or {}
        kinds = spec.get("type")
        kinds = set(kinds) if isinstance(kinds, list) else {kinds}
        if "string" in kinds or kinds == {None}:
            arguments[name] = value
        elif "default" in spec:
            arguments[name] = spec["default"]
        elif kinds & {"integer", "number"}:
            arguments[name] = spec.get("minimum", 0)
        elif "boolean" in kinds:
            arguments[name] = False
        else:
            arguments[name] = [value] if "array" in kinds else {}
    return arguments


# --------------------------------------------------------------------------------------------------------- models


class PlainModel:
    """Every answer is the same text, but for a prompt that asks for a tool call (``CALL_PROMPT``)."""

    def __init__(self, text: str = "OK from fake model") -> None:
        self.text = text

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if is_picompact_summary(body):
            return {"kind": "picompact-summary", "text": picompact_summary(body), "calls": []}
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        asked = CALL_PROMPT.match(text_of(last.get("content"))) if last.get("role") == "user" else None
        tools = offered(body)
        if asked and asked["tool"] in tools:
            arguments = fill(tools[asked["tool"]], asked["value"])
            tag = hashlib.sha256(json.dumps([asked["tool"], arguments]).encode()).hexdigest()[:8]
            call = {"id": f"call{tag}", "name": asked["tool"], "arguments": arguments}
            return {"kind": "tool-call", "text": "", "calls": [call]}
        return {"kind": "summary" if is_summarization(body) else "plain", "text": self.text, "calls": []}


class ScriptedModel:
    """Plays the driver's plan: ``plan`` is a list of prompts ``{"text", "steps"}``; a step is ``{"text", "calls":
    [{"name", "arguments"}]}`` or ``{"text", "context": {"tool", "value"}}`` (a call of a tool the request offers,
    ``value`` filling its required string parameters; ``{"idFrom": TOOL, "near": TEXT}`` is the first entry id on the
    line holding TEXT in the latest result of TOOL)."""

    def __init__(self, seed: int, context_window: int) -> None:
        self.seed = seed
        self.window = context_window
        self.plan: list[dict[str, Any]] = []
        self.overflows = 0

    def call_id(self, prompt: int, step: int, k: int) -> str:
        tag = hashlib.sha256(f"{self.seed}/{prompt}/{step}/{k}".encode()).hexdigest()[:8]
        return f"pc{prompt}s{step}k{k}x{tag}"

    def refuse(self, body: dict[str, Any], tokens: int) -> str | None:
        """OpenAI's overflow message when the request does not fit the window (summaries always fit)."""
        if tokens <= self.window or is_summarization(body):
            return None
        self.overflows += 1
        return (
            f"This model's maximum context length is {self.window} tokens. However, your messages resulted in "
            f"{tokens} tokens. Please reduce the length of the messages."
        )

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        if is_summarization(body):
            return {"kind": "summary", "text": summary_for(body), "calls": []}
        messages = [m for m in body.get("messages") or [] if m.get("role") not in ("system", "developer")]
        prompts = {p["text"]: n for n, p in enumerate(self.plan)}
        # User messages after the last tool result that are not a prompt (an extension's reminder, say) are skipped.
        i = len(messages) - 1
        while i >= 0 and messages[i].get("role") == "user":
            n = prompts.get(text_of(messages[i].get("content")))
            if n is not None:
                return self.step(n, 0, body)
            i -= 1
        if i >= 0 and messages[i].get("role") == "tool":
            for message in reversed(messages[:i]):
                calls = message.get("tool_calls") or []
                if calls:
                    match = CALL_ID.match(str(calls[0].get("id", "")))
                    if match:
                        return self.step(int(match[1]), int(match[2]) + 1, body)
                    break
        return {"kind": "idle", "text": "Nothing else to do for now.", "calls": []}

    def step(self, prompt: int, step: int, body: dict[str, Any]) -> dict[str, Any]:
        steps = self.plan[prompt]["steps"]
        if step >= len(steps):
            return {"kind": "chat", "text": "That is all for this task.", "calls": [], "at": [prompt, step]}
        spec = steps[step]
        calls = [
            {"id": self.call_id(prompt, step, k), "name": c["name"], "arguments": c["arguments"]}
            for k, c in enumerate(spec.get("calls") or [])
        ]
        out: dict[str, Any] = {"kind": "chat", "text": spec.get("text", ""), "calls": calls, "at": [prompt, step]}
        if spec.get("context"):
            want, value = spec["context"]["tool"], spec["context"].get("value", "")
            tools = offered(body)
            if isinstance(value, dict):
                value = self._id_from(body, value["idFrom"], value["near"])
            if want in tools:
                arguments = fill(tools[want], str(value))
                calls.append({"id": self.call_id(prompt, step, len(calls)), "name": want, "arguments": arguments})
                out["contextCall"] = {"tool": want, "arguments": arguments}
            else:
                out["text"] += f"\n\n(The tool {want} is not available here.)"
                out["contextCall"] = {"tool": want, "offered": False}
        return out

    @staticmethod
    def _id_from(body: dict[str, Any], tool: str, near: str) -> str:
        results = [r["result"] for r in _results(body) if r["tool"] == tool]
        text = results[-1] if results else ""
        for line in text.splitlines():
            found = ENTRY_ID.search(line) if near in line else None
            if found:
                return found[0]
        found = ENTRY_ID.search(text)
        return found[0] if found else "00000000"


def _results(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = body.get("messages") or []
    calls = _calls_by_id(messages)
    return [
        {**calls.get(m.get("tool_call_id"), {"tool": None}), "result": text_of(m.get("content"))}
        for m in messages
        if m.get("role") == "tool"
    ]


# --------------------------------------------------------------------------------------------------------- HTTP


class ModelServer:
    """``with ModelServer(model, log_path) as server: server.port`` serves ``model`` in a thread."""

    def __init__(self, model: PlainModel | ScriptedModel, log_path: str | os.PathLike[str] | None = None) -> None:
        self.model = model
        self.log_path = log_path
        self.seq = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)

    def record(self, **fields: Any) -> None:
        with self.lock:
            self.seq += 1
            if self.log_path:
                entry = {"seq": self.seq, "t": time.time(), **fields}
                with open(self.log_path, "a", encoding="utf-8") as log:
                    log.write(json.dumps(entry, separators=(",", ":")) + "\n")

    def __enter__(self) -> ModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _handler(server: ModelServer) -> Callable[..., BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:  # the JSON Lines log is the record
            pass

        def _send_json(self, status: int, document: dict[str, Any]) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            auth = credential(self.headers, self.path)
            server.record(method="GET", path=self.path, status=200, body=None, auth=auth)
            self._send_json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = None
            route = self.path.split("?")[0].rstrip("/")
            auth = credential(self.headers, self.path)
            google = GOOGLE_PATH.search(route)
            if not isinstance(body, dict) or not (google or route.endswith("/chat/completions")):
                server.record(method="POST", path=self.path, status=404, body=body, auth=auth)
                self._send_json(404, {"error": {"message": f"not here: {self.path}", "type": "not_found"}})
                return
            api = "google" if google else "openai"
            chat = google_as_chat(body, google["model"]) if google else body
            model = server.model
            tokens = prompt_tokens(chat)
            refusal = model.refuse(chat, tokens) if isinstance(model, ScriptedModel) else None
            if refusal and isinstance(model, ScriptedModel):
                overflow = {"kind": "overflow"}
                server.record(method="POST", path=self.path, status=400, body=body, reply=overflow, api=api, auth=auth)
                if google:
                    message = (
                        f"The input token count ({tokens}) exceeds the maximum number of tokens allowed "
                        f"({model.window})."
                    )
                    self._send_json(400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
                    return
                error = {"message": refusal, "type": "invalid_request_error", "code": "context_length_exceeded"}
                self._send_json(400, {"error": error})
                return
            reply = model.answer(chat)
            written = len(reply["text"]) + sum(len(c["name"]) + len(json.dumps(c["arguments"])) for c in reply["calls"])
            completion = max(1, math.ceil(written / 4))
            usage = {"prompt_tokens": tokens, "completion_tokens": completion, "total_tokens": tokens + completion}
            logged = {k: v for k, v in reply.items() if k != "text"}
            logged["calls"] = [c["name"] for c in reply["calls"]]
            logged = {**logged, "usage": usage}
            server.record(method="POST", path=self.path, status=200, body=body, reply=logged, api=api, auth=auth)
            if google:
                documents = _gemini(google["model"], reply, usage)
                if google["method"] == "streamGenerateContent":
                    self._send_events(documents, done=False)
                else:
                    self._send_json(200, _gemini_merged(documents))
            elif body.get("stream"):
                self._stream(body, reply, usage)
            else:
                self._send_json(200, _completion(body, reply, usage))

        def _send_events(self, events: list[dict[str, Any]], *, done: bool) -> None:
            """``events`` as Server-Sent Events (``data: …``), then ``data: [DONE]`` when ``done``."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            data = b"".join(b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events)
            try:
                self.wfile.write(data + (b"data: [DONE]\n\n" if done else b""))
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _stream(self, body: dict[str, Any], reply: dict[str, Any], usage: dict[str, int]) -> None:
            base = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": int(time.time())}
            base["model"] = body.get("model") or "fake-model"
            chunks: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
            text = reply["text"]
            chunks += [{"content": text[i : i + 400]} for i in range(0, len(text), 400)]
            for k, call in enumerate(reply["calls"]):
                function = {"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)}
                chunks.append(
                    {"tool_calls": [{"index": k, "id": call["id"], "type": "function", "function": function}]}
                )
            events = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in chunks]
            finish = "tool_calls" if reply["calls"] else "stop"
            events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            events.append({**base, "choices": [], "usage": usage})
            self._send_events(events, done=True)

    return Handler


def credential(headers: Any, path: str) -> dict[str, str] | None:
    """Where a request carried its credential and the credential's SHA-256 (never the credential): a Bearer token
    (``bearer``), another ``Authorization`` value (``authorization``, the whole value), ``x-goog-api-key``,
    ``x-api-key``, or the ``key`` query parameter; None without one."""
    found: tuple[str, str] | None = None
    authorization = headers.get("Authorization") or ""
    scheme, _, token = authorization.partition(" ")
    if authorization and scheme.lower() == "bearer" and token.strip():
        found = ("bearer", token.strip())
    elif authorization:
        found = ("authorization", authorization)
    else:
        for name in ("x-goog-api-key", "x-api-key"):
            if headers.get(name):
                found = (name, headers.get(name))
                break
    if found is None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query)
        if query.get("key"):
            found = ("key", query["key"][0])
    if found is None:
        return None
    return {"via": found[0], "sha256": hashlib.sha256(found[1].encode()).hexdigest()}


def google_as_chat(body: dict[str, Any], model: str) -> dict[str, Any]:
    """The Chat Completions request a Gemini ``generateContent`` request stands for: the system instruction, the
    contents (``model`` turns as assistant messages, function calls as tool calls, function responses as tool
    results) and the function declarations as tools."""

    def texts(parts: list[Any]) -> str:
        return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))

    messages: list[dict[str, Any]] = []
    system = (body.get("systemInstruction") or {}).get("parts") or []
    if texts(system):
        messages.append({"role": "system", "content": texts(system)})
    for content in body.get("contents") or []:
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict) and p.get("thought") is not True]
        if content.get("role") == "model":
            calls = [
                {
                    "id": p["functionCall"].get("id") or p["functionCall"].get("name"),
                    "type": "function",
                    "function": {
                        "name": p["functionCall"].get("name"),
                        "arguments": json.dumps(p["functionCall"].get("args") or {}),
                    },
                }
                for p in parts
                if isinstance(p.get("functionCall"), dict)
            ]
            message: dict[str, Any] = {"role": "assistant", "content": texts(parts)}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
            continue
        for part in parts:
            response = part.get("functionResponse")
            if isinstance(response, dict):
                result = response.get("response") or {}
                text = result.get("output", result.get("error")) if isinstance(result, dict) else result
                call_id = response.get("id") or response.get("name")
                messages.append({"role": "tool", "tool_call_id": call_id, "content": str(text)})
        if texts(parts):
            messages.append({"role": "user", "content": texts(parts)})
    tools = [
        {
            "type": "function",
            "function": {
                "name": declaration.get("name"),
                "description": declaration.get("description", ""),
                "parameters": declaration.get("parametersJsonSchema") or declaration.get("parameters") or {},
            },
        }
        for tool in body.get("tools") or []
        for declaration in (tool.get("functionDeclarations") or [] if isinstance(tool, dict) else [])
    ]
    chat: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        chat["tools"] = tools
    return chat


def _gemini(model: str, reply: dict[str, Any], usage: dict[str, int]) -> list[dict[str, Any]]:
    """The reply as the chunks of a Gemini stream: the text in pieces, then the calls, the finish and the usage."""
    text = reply["text"]
    pieces: list[list[dict[str, Any]]] = [[{"text": text[i : i + 400]}] for i in range(0, len(text), 400)]
    calls: list[dict[str, Any]] = [
        {"functionCall": {"id": c["id"], "name": c["name"], "args": c["arguments"]}} for c in reply["calls"]
    ]
    if calls or not pieces:
        pieces.append(calls or [{"text": ""}])
    metadata = {
        "promptTokenCount": usage["prompt_tokens"],
        "candidatesTokenCount": usage["completion_tokens"],
        "totalTokenCount": usage["total_tokens"],
    }
    out: list[dict[str, Any]] = [
        {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}], "modelVersion": model}
        for parts in pieces
    ]
    out[-1]["candidates"][0]["finishReason"] = "STOP"
    out[-1]["usageMetadata"] = metadata
    return out


def _gemini_merged(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The chunks of a Gemini stream as the one ``generateContent`` answer."""
    parts = [p for chunk in chunks for p in chunk["candidates"][0]["content"]["parts"]]
    merged: list[dict[str, Any]] = []
    for part in parts:
        if "text" in part and merged and "text" in merged[-1]:
            merged[-1] = {"text": str(merged[-1]["text"]) + str(part["text"])}
        else:
            merged.append(part)
    last = chunks[-1]
    candidate = {"content": {"role": "model", "parts": merged}, "finishReason": "STOP", "index": 0}
    return {"candidates": [candidate], "usageMetadata": last["usageMetadata"], "modelVersion": last["modelVersion"]}


def _completion(body: dict[str, Any], reply: dict[str, Any], usage: dict[str, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply["text"] or None}
    if reply["calls"]:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in reply["calls"]
        ]
    finish = "tool_calls" if reply["calls"] else "stop"
    return {
        "id": "chatcmpl-local",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Serve the plain model until --lifetime seconds have passed.")
    parser.add_argument("--port-file", required=True, help="written (atomically) with the port once listening")
    parser.add_argument("--log", help="JSON Lines log of the requests")
    parser.add_argument("--lifetime", type=float, default=600.0)
    parser.add_argument("--text", default="OK from fake model")
    args = parser.parse_args(argv)
    with ModelServer(PlainModel(args.text), args.log) as server:
        partial = args.port_file + ".part"
        with open(partial, "w") as f:
            f.write(f"{server.port}\n")
        os.replace(partial, args.port_file)
        with contextlib.suppress(KeyboardInterrupt):
            time.sleep(args.lifetime)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
