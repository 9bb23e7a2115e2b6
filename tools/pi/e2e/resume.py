#!/usr/bin/env python3
"""Resume a session with the real Pi 1.6 CLI and report what Pi sends the model first.

    resume.py [--timeout SEC] [--compact] [--keep] SESSION.jsonl [PROMPT]      (PROMPT defaults to "continue")

SESSION is copied into a private Pi home (harness.PiHome); the copy's header cwd points at that home's empty work dir,
since Pi will not resume a session whose cwd is gone. Pi runs in print mode, without tools or extensions, against the
plain local model (model.py), and the first chat request it sends is reported as one JSON document on stdout:

- ``messages``: every request message (``i``, ``role``, ``text``) with the session entry it came from (``entry``:
  ``{"id", "type", "branchIndex"}``, ``{"id": null}`` when none matches, ``{"newPrompt": true}`` for the prompt);
- ``firstRequest`` (``roles``, ``tools``), ``firstNonSystemIndex``;
- ``compactionSummary``: where the latest compaction's summary is in the request (``messageIndex``), the text Pi wraps
  it in (``wrapperPrefix``, ``wrapperSuffix``) and ``textAsSent``; ``firstNonSystemIsCompactionSummary``;
- ``customMessages``: each custom_message entry on the branch, where it is in the request and whether its text is sent
  as it is (``exactText``); ``newPrompt`` (``foundInRequestAt``, ``isLast``);
- ``ok``: Pi exited 0 and sent a request; ``pi``: exit code and the end of stderr.

Exit status 0 when ``ok``, else 1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    PiHome,
    branch_of,
    check_installed,
    content_text,
    match_entries,
    read_jsonl,
    requests,
    run_logged,
    wire_text,
)
from model import ModelServer, PlainModel


def point_header_at(path: Path, cwd: Path) -> None:
    """Set the header's cwd in the copy; every other line stays byte for byte."""
    data = path.read_bytes()
    end = data.find(b"\n")
    end = len(data) if end < 0 else end
    try:
        header = json.loads(data[:end])
    except ValueError:
        return
    if isinstance(header, dict) and header.get("type") == "session":
        header["cwd"] = str(cwd)
        path.write_bytes(json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode() + data[end:])


def report(body: dict[str, Any] | None, entries: list[dict[str, Any]], prompt: str) -> dict[str, Any]:
    messages = list((body or {}).get("messages") or [])
    path = branch_of(entries)
    prompt_at = next(
        (
            i
            for i in range(len(messages) - 1, -1, -1)
            if messages[i].get("role") == "user" and wire_text(messages[i]) == prompt
        ),
        None,
    )
    mapped = match_entries([m for i, m in enumerate(messages) if i != prompt_at], path)
    if prompt_at is not None:
        mapped.insert(prompt_at, None)
    out_messages = []
    for i, (message, at) in enumerate(zip(messages, mapped, strict=True)):
        row: dict[str, Any] = {"i": i, "role": message.get("role"), "text": wire_text(message)}
        if i == prompt_at:
            row["entry"] = {"newPrompt": True}
        elif message.get("role") not in ("system", "developer"):
            entry = path[at] if at is not None else None
            row["entry"] = (
                {"id": None} if entry is None else {"id": entry.get("id"), "type": entry.get("type"), "branchIndex": at}
            )
        if message.get("tool_calls"):
            row["toolCalls"] = [c.get("id") for c in message["tool_calls"]]
        out_messages.append(row)
    first_non_system = next((i for i, m in enumerate(messages) if m.get("role") not in ("system", "developer")), None)
    compactions = [e for e in path if e.get("type") == "compaction"]
    summary: dict[str, Any] = {"inSession": bool(compactions)}
    if compactions:
        latest = compactions[-1]
        text = str(latest.get("summary") or "")
        at = next((i for i, m in enumerate(messages) if text and text in wire_text(m)), None)
        summary.update(entryId=latest.get("id"), firstKeptEntryId=latest.get("firstKeptEntryId"))
        summary.update(foundInRequest=at is not None, messageIndex=at)
        if at is not None:
            sent = wire_text(messages[at])
            cut = sent.index(text)
            summary.update(wrapperPrefix=sent[:cut], wrapperSuffix=sent[cut + len(text) :], textAsSent=sent)
    customs = []
    for position, entry in enumerate(path):
        if entry.get("type") == "custom_message":
            found = next((i for i, at in enumerate(mapped) if at == position), None)
            exact = None if found is None else wire_text(messages[found]) == content_text(entry.get("content"))
            customs.append(
                {
                    "entryId": entry.get("id"),
                    "customType": entry.get("customType"),
                    "foundInRequestAt": found,
                    "exactText": exact,
                }
            )
    return {
        "firstRequest": None
        if body is None
        else {
            "roles": [m.get("role") for m in messages],
            "tools": [t.get("function", {}).get("name") for t in body.get("tools") or []],
        },
        "firstNonSystemIndex": first_non_system,
        "firstNonSystemIsCompactionSummary": summary.get("messageIndex") is not None
        and summary.get("messageIndex") == first_non_system,
        "compactionSummary": summary,
        "customMessages": customs,
        "newPrompt": {"text": prompt, "foundInRequestAt": prompt_at, "isLast": prompt_at == len(messages) - 1},
        "messages": out_messages,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("session", type=Path)
    parser.add_argument("prompt", nargs="?", default="continue")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds Pi may take (default 120)")
    parser.add_argument("--compact", action="store_true", help="print the report on one line")
    parser.add_argument("--keep", action="store_true", help="keep the private Pi home (its path is in the report)")
    args = parser.parse_args(argv)
    check_installed()
    if not args.session.is_file():
        print(json.dumps({"ok": False, "error": f"no such file: {args.session}"}))
        return 1
    home = PiHome("picompact-resume.", keep=args.keep)
    try:
        name = args.session.name if args.session.name.endswith(".jsonl") else args.session.name + ".jsonl"
        copy = home.sessions / name
        shutil.copyfile(args.session, copy)
        point_header_at(copy, home.work)
        before = [e for e in read_jsonl(copy)[1:] if isinstance(e, dict)]
        log = home.run / "requests.jsonl"
        with ModelServer(PlainModel(), log) as server:
            home.configure(server.port, 1_000_000, {"compaction": {"enabled": False}})
            argv_pi = home.pi("-p", "--session", str(copy), "--session-dir", str(home.sessions), "--no-tools")
            run = run_logged([*argv_pi, "--", args.prompt], home, "pi", args.timeout)
        chat = requests(log)
        after = [e for e in read_jsonl(copy)[1:] if isinstance(e, dict)]
        # Pi rewrites a file it migrates (v1, v2): then its first entries are the originals, with Pi's ids.
        entries = after[: len(before)] if len(after) >= len(before) else before
        out: dict[str, Any] = {"ok": run["exitCode"] == 0 and bool(chat)}
        out["pi"] = {"exitCode": run["exitCode"], "stderrTail": run["stderr"].decode("utf-8", "replace")[-4000:]}
        out["chatRequestCount"] = len(chat)
        out.update(report(chat[0]["body"] if chat else None, entries, args.prompt))
        if args.keep:
            out["tempDir"] = str(home.root)
    finally:
        home.close()
    sys.stdout.write(json.dumps(out, indent=None if args.compact else 1) + "\n")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
