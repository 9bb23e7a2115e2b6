"""What the cross-session index holds, and how a database is known to be one of this format.

Per session file its identity and how far it was read (``files``), per entry its place and what the filters need
(``entries``: line, offset, id, parent id, role or type, time, tool names, whether it is a failed tool result), and
per entry the text ``picompact show`` renders, without the lines picompact writes itself (the ENTRY header, the
``[section]`` markers), in an FTS5 table (``body``) tokenized by ``unicode61 remove_diacritics 2`` (words, case and
accents folded): ``text``, that text; ``cjk``, its words of the scripts written without spaces, character by
character (``archive.words.cjk_text``; empty for most entries); and ``weight``, not indexed, what the entry's role
weighs in the ranking (``archive.document.weight``). ``trigram`` would match any substring, but measured on the
same documents it builds 6 times slower (18 against 110 MB of session a second) into a table 2.2 times larger
(``bench/RESULTS.md``); exact substrings are what ``--regex`` and ``-F`` are for, checked on the stored text after
the words narrowed, and words of the scripts without spaces are found by character in ``cjk``.

A database is this picompact's index when its application id and format version say so and its tables are all
there; an empty one is made one.
"""

from __future__ import annotations

import sqlite3

from pi_compact.version import __version__

FORMAT = 2  # 2: the cjk and weight columns (an index of format 1 is built again, with a warning)
APPLICATION_ID = 0x70635331  # "pcS1"
TOKENIZER = "unicode61 remove_diacritics 2"
AUTOMERGE = 16

_SCHEMA = f"""
create table meta(key text primary key, value);
create table files(
    id integer primary key,
    path blob unique not null,
    dev integer, ino integer, size integer, mtime_ns integer, ctime_ns integer,
    indexed_to integer not null default 0,
    crc integer not null default 0,
    lines integer not null default 0,
    entries integer not null default 0,
    status text not null,
    session_id text, cwd text,
    leaf text, no_leaf integer not null default 0
);
create table entries(
    id integer primary key,
    file integer not null,
    line integer not null, offset integer not null, length integer not null,
    entry_id text, parent_id text, kind text, ts text, ts_ms integer, tools text, error integer not null
);
create index entries_by_file on entries(file, line);
create virtual table body using fts5(text, cjk, weight unindexed, tokenize='{TOKENIZER}');
"""


def create_schema(conn: sqlite3.Connection) -> None:
    conn.execute("begin immediate")
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("insert into meta values ('picompact', ?), ('tokenizer', ?)", (__version__, TOKENIZER))
    # Merge segments 16 at a time (FTS5's default is 4): a tenth less CPU to build, queries as fast (bench/).
    conn.execute(f"insert into body(body, rank) values ('automerge', {AUTOMERGE})")
    conn.execute(f"pragma application_id = {APPLICATION_ID}")
    conn.execute(f"pragma user_version = {FORMAT}")
    conn.execute("commit")


def check_schema(conn: sqlite3.Connection) -> str | None:
    """None when ``conn`` is an index of this format (or empty, and now made one); else why it is not."""
    app, version = (
        conn.execute("pragma application_id").fetchone()[0],
        conn.execute("pragma user_version").fetchone()[0],
    )
    if app == 0 and version == 0:
        tables = conn.execute("select count(*) from sqlite_master").fetchone()[0]
        if tables:
            return "it is not picompact's search index"
        try:
            conn.execute("begin immediate")
        except sqlite3.OperationalError:
            raise
        # Another process may have made it between the checks: look again under the write lock.
        if conn.execute("select count(*) from sqlite_master").fetchone()[0] == 0:
            conn.execute("rollback")
            create_schema(conn)
        else:
            conn.execute("rollback")
            return check_schema(conn)
        return None
    if app != APPLICATION_ID:
        return "it is not picompact's search index"
    if version != FORMAT:
        return f"it is in format {version}, not {FORMAT}"
    names = {row[0] for row in conn.execute("select name from sqlite_master where type in ('table', 'index')")}
    if not {"meta", "files", "entries", "body", "entries_by_file"} <= names:
        return "tables are missing"
    return None
