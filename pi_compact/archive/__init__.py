"""Searching every session at once: a full-text index of all the sessions Pi can find, kept up to date on each
search (``archive.store``), the files it covers (``archive.files``) and the queries it answers (``archive.query``).

from pi_compact.archive import Filters, Query, open_store, search, session_files

found = session_files()
with open_store() as store:
    scope = store.update(found.files)
    page = search(store, scope, Query.parse("TypeError undefined"), Filters(), limit=10)
for hit in page.hits:
    print(hit.session, hit.entry_id, hit.snippet)
"""

from pi_compact.archive.files import FoundFiles, session_files
from pi_compact.archive.query import Filters, Hit, Query, SearchPage, search
from pi_compact.archive.store import Scope, Store, open_store, temporary_store

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
    "session_files",
    "temporary_store",
]
