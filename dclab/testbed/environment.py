"""What a run records about where it ran: host name, CPU model, memory, kernel, host
settings, versions, git commit."""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from pathlib import Path

from .. import __version__
from ..endpoints.base import Stack
from ..files import JsonObject
from ..paths import DCEMU, ROOT


def _out(*cmd: str) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10, cwd=ROOT)
        return (p.stdout or p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


@functools.cache
def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else platform.processor(), else ""."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor().strip()


@functools.cache
def memory_gb() -> float | None:
    """Total memory (MemTotal of /proc/meminfo) in GiB, one decimal; None if unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) * 1024 / 2**30, 1)  # the value is in kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def git_commit() -> str:
    """The checkout's commit ("" outside git)."""
    out = _out("git", "rev-parse", "HEAD")
    return out if len(out) == 40 else ""


@functools.cache
def _machine_and_code() -> JsonObject:
    """What stays the same for the life of a process: the machine, and the code it loaded
    (asked once; a simulated campaign runs thousands of runs in one process)."""
    commit = git_commit()
    dirty = bool(_out("git", "status", "--porcelain", "--untracked-files=no"))
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "memory_gb": memory_gb(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpus": _out("nproc"),
        "python": sys.version.split()[0],
        "dclab": __version__,
        "git_commit": commit + ("-dirty" if dirty and commit else ""),
        "dcemu": _out(str(DCEMU), "--version"),
    }


def environment(stacks: list[Stack], settings: dict[str, str]) -> JsonObject:
    return {**_machine_and_code(), "stacks": {s.name: s.version() for s in stacks},
            "ecn": {s.name: s.capabilities.ecn for s in stacks}, "host_settings": settings}
