"""The extension type-checks against Pi 1.6's own TypeScript declarations (`tsc --noEmit`), and ships in the
package. `make typecheck` (part of `make lint`) installs typescript into tools/ts and links Pi's package there."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pi_compact.pi.install import extension_source

ROOT = Path(__file__).resolve().parents[2]
TS = ROOT / "tools" / "ts"
TSC = TS / "node_modules" / ".bin" / "tsc"
PI_TYPES = TS / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "index.d.ts"


@pytest.mark.skipif(not (TSC.exists() and PI_TYPES.exists()), reason="typescript not set up: run `make typecheck`")
def test_extension_type_checks_against_pis_declarations() -> None:
    proc = subprocess.run([str(TSC), "-p", str(TS / "tsconfig.json")], capture_output=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode("utf-8", "replace")[-3000:]


def test_the_package_ships_the_extension() -> None:
    source = extension_source().decode("utf-8")
    assert 'pi.on("session_before_compact"' in source
    assert source == (ROOT / "pi_compact" / "pi" / "extension" / "index.ts").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"pi/extension/*.ts"' in pyproject
