"""Which process wrote a record, and whether it still lives: a pid and its start time name
one process, even after the pid is reused; and stopping a child's process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path


def process_start(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (clock ticks since boot), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def alive(pid: int, start: str | None) -> bool:
    """Whether that process still runs (not a zombie, not a reuse of its pid)."""
    now = process_start(pid)
    if now is None or (start is not None and now != start):
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_group(p: subprocess.Popen[bytes] | subprocess.Popen[str], grace_s: float) -> None:
    """Stops a child started in its own session, if it still runs: SIGTERM to its process
    group (so it can clean up), then SIGKILL after ``grace_s``; waits for it."""
    if p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGTERM)
    try:
        p.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
