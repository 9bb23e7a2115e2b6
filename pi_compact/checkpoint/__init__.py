"""Compaction checkpoints: the verbatim checkpoint (no model) and the entries a compaction appends.

The verbatim names (``pi_compact.checkpoint.verbatim.build.__all__``) are re-exported lazily, so that
importing one submodule, e.g. ``pi_compact.checkpoint.entry``, does not load the verbatim builder.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_compact.checkpoint.verbatim.build import *  # noqa: F403


def __getattr__(name: str) -> Any:
    # Not `from pi_compact.checkpoint.verbatim import build`: that asks this hook for the name again.
    if not name.startswith("_") and name != "verbatim":
        build = importlib.import_module(f"{__name__}.verbatim.build")
        if name in build.__all__:
            return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
