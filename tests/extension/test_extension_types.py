"""The extension ships in the package, as the file in the source tree.

That it type-checks against Pi 1.6's own TypeScript declarations (`tsc --noEmit`) is `make typecheck`'s job (part of
`make lint`, which CI runs): it installs typescript into tools/ts, links Pi's package there and fails on any error."""

from __future__ import annotations

from pathlib import Path

from pi_compact.extension.install import extension_source

ROOT = Path(__file__).resolve().parents[2]


def test_the_package_ships_the_extension() -> None:
    source = extension_source().decode("utf-8")
    assert 'pi.on("session_before_compact"' in source
    assert source == (ROOT / "pi_compact" / "extension" / "index.ts").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"extension/*.ts"' in pyproject
