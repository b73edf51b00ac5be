"""The aioquic client's receive timing, to calibrate the simulation's client model
(scripts/calibrate_client.py). With ``DCLAB_RX_TRACE=PREFIX`` in its environment the client
notes, for every datagram it reads, the time and whether another datagram was already
waiting in the socket; at exit it writes ``PREFIX.PID``. The gap after a datagram with one
waiting behind it is what the application spent before it read again, with the operating
system's interruptions: its service time while backlogged, which is what drains (or fails to
drain) a small UDP buffer."""

from __future__ import annotations

import fcntl
import os
import statistics
import struct
import termios
import time
from collections.abc import Sequence
from pathlib import Path

ENV = "DCLAB_RX_TRACE"


class RxTrace:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.rows: list[tuple[int, bool]] = []

    def note(self, fd: int) -> None:
        """A datagram was just read from socket ``fd``: now, and whether the next is waiting
        (FIONREAD on a UDP socket gives the size of the next datagram, 0 when none)."""
        waiting = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0] > 0
        self.rows.append((time.perf_counter_ns(), waiting))

    def write(self) -> Path:
        path = Path(f"{self.prefix}.{os.getpid()}")
        path.write_text("".join(f"{t} {int(w)}\n" for t, w in self.rows))
        return path


def from_environment() -> RxTrace | None:
    prefix = os.environ.get(ENV)
    return RxTrace(prefix) if prefix else None


def read(path: Path) -> list[tuple[int, bool]]:
    return [(int(t), w == "1") for t, w in (line.split() for line in path.read_text().splitlines())]


def backlogged_gaps_us(rows: Sequence[tuple[int, bool]]) -> list[float]:
    """The service times (µs) in a trace: each gap after a datagram that had another waiting."""
    return [(b[0] - a[0]) / 1e3 for a, b in zip(rows, rows[1:], strict=False) if a[1]]


def summary(gaps: Sequence[float]) -> dict[str, float]:
    q = statistics.quantiles(gaps, n=100, method="inclusive")
    return {"n": len(gaps), "mean_us": statistics.fmean(gaps), "p50_us": q[49], "p90_us": q[89], "p99_us": q[98]}
