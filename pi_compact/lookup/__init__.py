"""The lookup agent: a model answers a question about the raw history by calling the search tools
(``pi_compact.search``: list_entries, grep, show_entry) until it can quote its answer (``agent.run_lookup``)."""
