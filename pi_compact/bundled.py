"""The data files shipped inside the package (``pi_compact/data/``: Pi's model table, its thinking levels), read
by one loader for every module that needs them."""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"


def data_bytes(name: str) -> bytes:
    """The bytes of one bundled data file, read from the package folder (or, installed in a zip, through the
    import system). Callers that read a file often cache its parsed form."""
    try:
        return (DATA_DIR / name).read_bytes()
    except OSError:  # pragma: no cover - installed in a zip: ask the import system
        from importlib import resources

        return resources.files("pi_compact").joinpath("data", name).read_bytes()
