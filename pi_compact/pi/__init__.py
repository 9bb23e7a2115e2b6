"""picompact inside Pi: the extension Pi loads (``extension/index.ts``, package data), installing it, its
settings, and what it asks of picompact (``hook``)."""
