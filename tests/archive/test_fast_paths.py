"""The index's shortcuts give what the longer way gives: an entry's text as ``show`` renders it without the marker
lines, a -F string matched as ``regex`` matches it, a ranked search in the order of the one SQL statement (score,
session path, line), and a scope read from the rows of the freshness check as a second look reads it."""

from __future__ import annotations

from pathlib import Path
from random import Random

import orjson

from pi_compact.archive import Filters, Query, search, session_files
from pi_compact.archive.document import entry_text
from pi_compact.archive.query import _Literal, _ranked
from pi_compact.archive.scope import Scope, cover
from pi_compact.archive.store import temporary_store
from pi_compact.search.matching import compile_pattern
from pi_compact.search.render import render_entry
from pi_compact.session.entries import Entry

WORDS = ["alpha", "beta", "timeout", "retry", "café", "line\nbreak", "", "  ", "tab\there"]


def _entries(rng: Random) -> list[dict]:
    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))

    base = {"id": "e1", "parentId": None, "timestamp": "2025-01-01T00:00:00.000Z"}
    return [
        {**base, "type": "message", "message": {"role": "user", "content": text()}},
        {**base, "type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text()}]}},
        {
            **base,
            "type": "message",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": text()},
                    {"type": "text", "text": text()},
                    {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": text(), "n": 3}},
                    {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                ],
                "stopReason": rng.choice(["stop", "error"]),
                "errorMessage": text(),
            },
        },
        {
            **base,
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "bash",
                "content": [{"type": "text", "text": text()}, {"type": "other", "x": [text(), {"y": None}]}],
                "isError": True,
            },
        },
        {
            **base,
            "type": "message",
            "message": {"role": "bashExecution", "command": text(), "output": text(), "exitCode": 1},
        },
        {**base, "type": "compaction", "summary": text(), "firstKeptEntryId": "e0", "tokensBefore": 9},
        {**base, "type": "custom_message", "customType": "note", "content": text(), "display": True},
        {**base, "type": "custom", "customType": "x", "data": {"k": text(), "odd key": [1, text()]}},
        {**base, "type": "model_change", "provider": "p", "modelId": text()},
    ]


def test_entry_text_is_shows_lines_without_the_markers() -> None:
    rng = Random(5)
    for _ in range(200):
        for n, raw in enumerate(_entries(rng)):
            entry = Entry(raw, n + 2, n)
            rendered = render_entry(entry)
            expected = "\n".join(line for i, line in enumerate(rendered.lines) if i not in rendered.markers)
            assert entry_text(Entry(raw, n + 2, n)) == expected


def test_a_literal_matches_as_regex_matches_it_escaped() -> None:
    rng = Random(11)
    alphabet = "ab\nA.*é("
    for _ in range(5000):
        literal = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        ours, theirs = _Literal(literal), compile_pattern(literal, fixed=True, multiline=True)
        a, b = ours.search(text), theirs.search(text)
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.start(), a.end()) == (b.start(), b.end())
        start, end = sorted(rng.randint(0, len(text)) for _ in range(2))
        assert [(m.start(), m.end()) for m in ours.finditer(text, start, end)] == [
            (m.start(), m.end()) for m in theirs.finditer(text, start, end)
        ]


def _tree(root: Path, rng: Random) -> None:
    """Sessions whose entries repeat the same few texts: many entries of the same score, in many sessions."""
    for n in range(12):
        folder = root / f"--p{n % 3}--"
        folder.mkdir(exist_ok=True)
        lines = [{"type": "session", "version": 3, "id": f"s{n}", "cwd": f"/p{n % 3}"}]
        parent = None
        for i in range(rng.randint(1, 15)):
            text = rng.choice(["alpha beta", "alpha", "beta alpha alpha", "timeout alpha"])
            eid = f"{n:02d}{i:06x}"
            lines.append(
                {
                    "type": "message",
                    "id": eid,
                    "parentId": parent,
                    "timestamp": "2025-01-01T00:00:00.000Z",
                    "message": {"role": "user", "content": text},
                }
            )
            parent = eid
        (folder / f"{rng.getrandbits(32):08x}.jsonl").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


def test_a_ranked_search_is_in_the_order_of_the_one_statement(tmp_path: Path) -> None:
    _tree(tmp_path, Random(3))
    found = session_files([str(tmp_path)], include_default=False)
    with temporary_store() as store:
        scope = store.update(found.files)
        assert scope.complete
        for words in ("alpha", "beta", "alpha OR timeout", '"beta alpha"', "alp*"):
            fts = Query.parse(words).fts
            statement = store.conn.execute(
                "select e.id, e.file, e.line, e.entry_id, e.kind, e.ts, bm25(body) * body.weight as score "
                "from body join entries e on e.id = body.rowid join files f on f.id = e.file "
                "where body match ? order by score, f.path, e.line",
                (fts,),
            ).fetchall()
            assert len({row[6] for row in statement}) < len(statement)  # ties, to be ordered by path and line
            assert list(_ranked(store.conn, fts)) == statement
        # Pages through the shortcut and through a scope narrowed in SQL (a filter) agree as well.
        every = search(store, scope, Query.parse("alpha"), Filters(), limit=1000)
        narrowed = search(store, scope, Query.parse("alpha"), Filters(roles=frozenset({"user"})), limit=1000)
        assert [h.to_json() for h in every.hits] == [h.to_json() for h in narrowed.hits]


def test_the_scope_from_the_rows_already_read_is_the_scope_read_again(tmp_path: Path) -> None:
    _tree(tmp_path, Random(4))
    (tmp_path / "--p0--" / "notes.jsonl").write_bytes(b'{"type": "other"}\n')
    found = session_files([str(tmp_path)], include_default=False)
    with temporary_store() as store:
        store.update(found.files)
        fresh = store.update(found.files)  # nothing changed: the scope comes from the rows the check read
        again = Scope()
        cover(store.conn, again, {path for path, _ in found.files})
        assert fresh.files == again.files and fresh.complete and again.complete
        assert len(fresh.files) == 12
