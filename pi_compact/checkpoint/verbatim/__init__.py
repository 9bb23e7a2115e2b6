"""The verbatim checkpoint (no model): ``build`` (the checkpoint from Pi's cut), ``mode`` (the checkpoint mode),
and its parts: standing instructions, the ledger, facts from tool output, spans, the cap, the envelope."""
