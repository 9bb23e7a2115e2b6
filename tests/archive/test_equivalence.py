"""The index brought up to date incrementally gives the same results as one built from nothing (``--no-index``),
on seeded random trees of sessions after random appends, rewrites, truncations and deletions."""

from __future__ import annotations

import re
from pathlib import Path
from random import Random

import orjson
import pytest

from pi_compact.archive import Filters, Query, indexer, search, session_files
from pi_compact.archive.store import open_store, temporary_store

WORDS = [
    *("alpha", "beta", "gamma", "delta", "timeout", "retry", "connection", "reset", "parser", "token"),
    *("café", "naïve", "E_RARE_4711", "foo.bar"),
]
QUERIES = [
    Query.parse("alpha"),
    Query.parse("timeout retry"),
    Query.parse('"connection reset"'),
    Query.parse("ga*"),
    Query.parse("alpha OR cafe"),
    Query.parse("beta NOT delta"),
    Query.parse("(parser OR token) AND naive"),
    Query.parse("E_RARE_4711"),
    Query.parse("foo.bar"),
    Query.parse("RARE_4711", fixed=True),
    Query.parse("ALPHA", fixed=True, ignore_case=True),
    Query.parse(r"re(try|set) \w+", regex=True),
    Query.parse(r"\d{3}", regex=True),
]
FILTERS = [Filters(), Filters(branch="leaf"), Filters(roles=frozenset({"user"})), Filters(tool="bash", errors=True)]


def _text(rng: Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


def _entry(rng: Random, n: int, parent: str | None) -> dict:
    eid = f"{rng.getrandbits(32):08x}"
    base = {"id": eid, "parentId": parent, "timestamp": f"2025-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"}
    kind = rng.random()
    if kind < 0.4:
        return {**base, "type": "message", "message": {"role": "user", "content": _text(rng)}}
    if kind < 0.7:
        content = [
            {"type": "text", "text": _text(rng)},
            {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"c": _text(rng)}},
        ]
        return {**base, "type": "message", "message": {"role": "assistant", "content": content}}
    if kind < 0.9:
        msg = {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": rng.choice(["bash", "read"]),
            "content": [{"type": "text", "text": _text(rng) + f" {rng.randint(0, 9999)}"}],
            "isError": rng.random() < 0.3,
        }
        return {**base, "type": "message", "message": msg}
    return {**base, "type": "custom_message", "customType": "note", "content": _text(rng), "display": True}


class Tree:
    def __init__(self, root: Path, rng: Random) -> None:
        self.root, self.rng = root, rng
        self.count = 0

    def lines(self, n: int, ids: list[str]) -> list[bytes]:
        out = []
        for _ in range(n):
            self.count += 1
            parent = self.rng.choice(ids) if ids and self.rng.random() < 0.2 else (ids[-1] if ids else None)
            entry = _entry(self.rng, self.count, parent)
            ids.append(entry["id"])
            out.append(orjson.dumps(entry) + b"\n")
        return out

    def new(self) -> None:
        folder = self.root / f"--p{self.rng.randint(0, 2)}--"
        folder.mkdir(exist_ok=True)
        header = {
            "type": "session",
            "version": 3,
            "id": f"s{self.rng.getrandbits(24)}",
            "cwd": f"/p{self.rng.randint(0, 2)}",
        }
        body = [orjson.dumps(header) + b"\n", *self.lines(self.rng.randint(1, 8), [])]
        (folder / f"{self.rng.getrandbits(32):08x}.jsonl").write_bytes(b"".join(body))

    def files(self) -> list[Path]:
        return sorted(self.root.rglob("*.jsonl"))

    def mutate(self) -> None:
        rng, files = self.rng, self.files()
        action = rng.choice(
            ["append", "append", "append", "partial", "rewrite", "same-size", "truncate", "delete", "new", "junk"]
        )
        if not files or action == "new":
            self.new()
            return
        path = rng.choice(files)
        data = path.read_bytes()
        ids = [m.decode() for m in re.findall(rb'"id":"([0-9a-f]{8})"', data)]
        if action == "append":
            with path.open("ab") as fh:
                fh.write(b"".join(self.lines(rng.randint(1, 4), ids)))
        elif action == "partial":  # a line without its newline yet, then (maybe) the rest of it
            line = self.lines(1, ids)[0]
            cut = rng.randint(1, len(line) - 1)
            with path.open("ab") as fh:
                fh.write(line[:cut])
        elif action == "rewrite":
            path.write_bytes(data.splitlines(keepends=True)[0] + b"".join(self.lines(rng.randint(1, 6), [])))
        elif action == "same-size":  # an edit in place that keeps the length
            at = data.find(b"alpha")
            if at > 0:
                with path.open("r+b") as fh:
                    fh.seek(at)
                    fh.write(b"omega")
        elif action == "truncate":
            path.write_bytes(data[: rng.randint(0, len(data))])
        elif action == "delete":
            path.unlink()
        elif action == "junk":
            (path.parent / "notes.jsonl").write_bytes(b'{"type": "other"}\n' + data)


def _results(store, found, monkeypatch: pytest.MonkeyPatch, parallel: bool) -> list:
    # 0: every file is parsed in the thread ahead (new ones) or beside the inserts (appends); else never
    monkeypatch.setattr(indexer, "PARALLEL_BYTES", 0 if parallel else 1 << 60)
    scope = store.update(found.files)
    out = []
    for query in QUERIES:
        for filters in FILTERS:
            page = search(store, scope, query, filters, limit=50)
            out.append([h.to_json() for h in page.hits])
    return out


@pytest.mark.parametrize("seed", range(12))
def test_incremental_index_answers_as_a_fresh_scan(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Half the seeds index in the threaded pipeline, the fresh scan always serially."""
    rng = Random(seed)
    tree = Tree(tmp_path / "tree", rng)
    tree.root.mkdir()
    for _ in range(rng.randint(2, 5)):
        tree.new()
    with open_store() as store:
        for _step in range(8):
            for _ in range(rng.randint(1, 3)):
                tree.mutate()
            found = session_files([str(tree.root)], include_default=False)
            with temporary_store() as fresh:
                expected = _results(fresh, found, monkeypatch, parallel=False)
            assert _results(store, found, monkeypatch, parallel=seed % 2 == 0) == expected
    assert any(any(r) for r in expected) or seed  # the queries do find things


def test_the_index_covers_only_complete_lines(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    path = root / "s.jsonl"
    rng = Random(1)
    entry = orjson.dumps(_entry(rng, 1, None) | {"message": {"role": "user", "content": "zebra crossing"}})
    path.write_bytes(orjson.dumps({"type": "session", "version": 3, "id": "x", "cwd": "/"}) + b"\n" + entry[:10])
    with open_store() as store:
        found = session_files([str(root)], include_default=False)
        assert not search(store, store.update(found.files), Query.parse("zebra"), Filters()).hits
        with path.open("ab") as fh:
            fh.write(entry[10:] + b"\n")
        found = session_files([str(root)], include_default=False)
        assert [h.snippet for h in search(store, store.update(found.files), Query.parse("zebra"), Filters()).hits] == [
            "zebra crossing"
        ]
