"""The pinned Python environment installs on the Python the README's Debian 12 ships: every
package of requirements.lock declares it supports 3.11.2 (Debian 12's python3). The
machines we develop on have a newer 3.11, so a pin that needs one (pymdown-extensions 13
needs 3.11.5) installs here and breaks `make demo` on a plain Debian 12. Read offline from
the installed packages' metadata."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
DEBIAN_12_PYTHON = "3.11.2"


def pins(lock: Path) -> list[tuple[str, str]]:
    return re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)", lock.read_text(), re.M)


def test_every_pin_supports_debian_12s_python():
    checked = []
    for name, version in pins(ROOT / "requirements.lock"):
        try:
            meta = metadata(name)
        except PackageNotFoundError:
            pytest.fail(f"{name}=={version} is pinned but not installed: make setup")
        assert meta["Version"] == version, f"{name}: {meta['Version']} installed, {version} pinned (make setup)"
        spec = meta.get("Requires-Python")
        if spec:
            assert SpecifierSet(spec).contains(DEBIAN_12_PYTHON), (
                f"{name}=={version} requires Python {spec}: Debian 12's {DEBIAN_12_PYTHON} cannot install it")
        checked.append(name)
    assert len(checked) >= 50
    assert not SpecifierSet(">=3.11.5").contains(DEBIAN_12_PYTHON)  # the check can refuse
