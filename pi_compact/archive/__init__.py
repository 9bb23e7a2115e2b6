"""Searching every session at once: a full-text index of all the sessions Pi can find, kept up to date on each
search (``archive.store``, the database; ``archive.indexer``, bringing it up to date), the files it covers
(``archive.files``) and the queries it answers (``archive.query``).

from pi_compact.archive import Filters, Query, open_store, search, session_files

found = session_files()
with open_store() as store:
    scope = store.update(found.files)
    page = search(store, scope, Query.parse("TypeError undefined"), Filters(), limit=10)
for hit in page.hits:
    print(hit.session, hit.entry_id, hit.snippet)
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pi_compact.archive.files import FoundFiles, session_files
from pi_compact.archive.query import DEFAULT_LIMIT, Filters, Hit, Query, SearchPage, search
from pi_compact.archive.scope import Scope
from pi_compact.archive.store import Store, open_store, temporary_store


def search_sessions(
    query: str | Query,
    filters: Filters | None = None,
    *,
    dirs: Sequence[str | os.PathLike[str]] = (),
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
    index: bool = True,
) -> SearchPage:
    """``picompact search`` from Python: one page of the sessions Pi can find (and those under ``dirs``) that
    match ``query`` (words, phrases, prefixes, OR/AND/NOT; or a ``Query`` made with ``Query.parse(…, regex=True)``),
    best first. The index in the user's cache is brought up to date first (``index=False``: a throwaway one, the
    same results); unreadable sessions are left out (``SearchPage`` does not list them; the command names them)."""
    parsed = Query.parse(query) if isinstance(query, str) else query
    found = session_files([os.fspath(d) for d in dirs])
    store = open_store() if index else temporary_store()
    try:
        scope = store.run(lambda: store.update(found.files))
        return search(store, scope, parsed, filters or Filters(), limit=limit, cursor=cursor)
    finally:
        store.close()


__all__ = [
    "Filters",
    "FoundFiles",
    "Hit",
    "Query",
    "Scope",
    "SearchPage",
    "Store",
    "open_store",
    "search",
    "search_sessions",
    "session_files",
    "temporary_store",
]
