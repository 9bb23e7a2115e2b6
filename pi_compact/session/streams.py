"""Writing all of a buffer to a stream, whatever the stream takes at a time (shared by the session writer and the
command line's output, without importing either)."""

from __future__ import annotations

import errno
from typing import Any


def write_fully(stream: Any, data: bytes) -> None:
    """Write all of ``data`` to ``stream`` or raise OSError: a buffered stream can take only part of a write without
    an error (a file on a disk that fills up), so the rest is written until the error shows."""
    view = memoryview(data)
    while view:
        taken = stream.write(view)
        if not taken:
            raise OSError(errno.EIO, "the output took no more bytes")
        view = view[taken:]
