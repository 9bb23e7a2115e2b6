"""The library's verbs over one session or many: check, compact, audit, coverage, lint, forecast, rules, and
``open_session`` (``session_file``), one object over all of them."""
