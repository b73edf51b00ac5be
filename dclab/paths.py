"""Where things are: the repository's folders, the dcemu binary, result and state
directories, and the emulated network's addresses. One place, read by every level."""

from __future__ import annotations

import os
from ipaddress import IPv4Network
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DCEMU = ROOT / "emu" / "target" / "release" / "dcemu"
CAMPAIGNS = ROOT / "campaigns"
RUNS = ROOT / "runs"

# The benchmarking range (RFC 2544): emulated hosts never use anything else.
EMULATED_NET = IPv4Network("198.18.0.0/15")
SERVER_ADDR, CLIENT_ADDR = "198.18.0.1", "198.18.0.2"


def results_dir() -> Path:
    """Where campaigns keep their stores: results/, or $DCLAB_RESULTS (read at call time)."""
    return Path(os.environ.get("DCLAB_RESULTS", ROOT / "results"))


def state_dir() -> Path:
    """Journals of live runs and the host lock: /run/dclab, or $DCLAB_STATE_DIR."""
    return Path(os.environ.get("DCLAB_STATE_DIR", "/run/dclab"))
