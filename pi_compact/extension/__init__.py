"""picompact inside Pi: the extension Pi loads (``index.ts``, package data), installing it, the tools it
registers, and what it asks of picompact (``hook``)."""
