"""What a run records about where it ran: kernel, host settings, versions, git commit."""

from __future__ import annotations

import platform
import subprocess
import sys
from typing import Any

from .. import __version__
from ..endpoints.base import Stack
from ..paths import DCEMU, ROOT


def _out(*cmd: str) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10, cwd=ROOT)
        return (p.stdout or p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def environment(stacks: list[Stack], settings: dict[str, str]) -> dict[str, Any]:
    commit = _out("git", "rev-parse", "HEAD")
    dirty = bool(_out("git", "status", "--porcelain", "--untracked-files=no"))
    return {
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpus": _out("nproc"),
        "python": sys.version.split()[0],
        "dclab": __version__,
        "git_commit": commit + ("-dirty" if dirty and commit else ""),
        "dcemu": _out(str(DCEMU), "--version"),
        "stacks": {s.name: s.version() for s in stacks},
        "host_settings": settings,
    }
