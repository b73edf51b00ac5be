"""Kernel TCP and MPTCP over a run, from the samples ``--sockets`` kept (``sockets.jsonl``,
testbed/socket_sampler.py): each sending socket's window, RTT, retransmissions and what
held it back, and an MPTCP receiver's connection-level buffer. The evidence for why a
TCP or MPTCP transfer went as it did (docs/split-layer.md uses it)."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from ..endpoints.tcp.sockets import SocketSample, address

FILE = "sockets.jsonl"


def read_samples(run_dir: Path) -> list[SocketSample]:
    """The samples of a run directory (empty when it kept none); a torn last line is skipped."""
    path = Path(run_dir) / FILE
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(SocketSample(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return out


@dataclass(frozen=True)
class Sender:
    """One sending TCP socket (a subflow, or a plain TCP connection) over its samples."""

    local: str
    remote: str
    subflow: bool
    first_ms: float
    last_ms: float
    samples: int
    bytes_acked: int
    cwnd_median: float | None
    cwnd_max: int | None
    rtt_median_ms: float | None
    rtt_max_ms: float | None
    retrans: int  # segments retransmitted
    busy_ms: int
    rwnd_limited_ms: int  # of busy_ms: held back by the peer's receive window
    sndbuf_limited_ms: int  # of busy_ms: held back by its own send buffer

    @property
    def client_address(self) -> str:
        return address(self.remote)


def senders(samples: list[SocketSample], side: str = "server") -> list[Sender]:
    """Every socket that sent data on ``side`` (the server: a download's sender), in the
    order they first appeared; counters are the last sample's (the kernel's totals)."""
    by: dict[tuple[str, str], list[SocketSample]] = {}
    for s in samples:
        if s.side == side and s.kind == "tcp" and s.bytes_acked is not None:
            by.setdefault((s.local, s.remote), []).append(s)
    out = []
    for (local, remote), ss in by.items():
        if (ss[-1].bytes_acked or 0) <= 1:
            continue  # never sent data
        last = ss[-1]
        cwnds = [s.cwnd for s in ss if s.cwnd is not None]
        rtts = [s.rtt_ms for s in ss if s.rtt_ms is not None]
        out.append(Sender(local=local, remote=remote, subflow=last.subflow, first_ms=ss[0].t_ms, last_ms=last.t_ms,
                          samples=len(ss), bytes_acked=last.bytes_acked or 0,
                          cwnd_median=statistics.median(cwnds) if cwnds else None, cwnd_max=max(cwnds, default=None),
                          rtt_median_ms=statistics.median(rtts) if rtts else None, rtt_max_ms=max(rtts, default=None),
                          retrans=last.retrans or 0, busy_ms=last.busy_ms or 0,
                          rwnd_limited_ms=last.rwnd_limited_ms or 0, sndbuf_limited_ms=last.sndbuf_limited_ms or 0))
    return sorted(out, key=lambda x: x.first_ms)


@dataclass(frozen=True)
class ReceiveBuffer:
    """An MPTCP connection's receive side: how full its shared buffer ran (what arrived,
    in order or not, and the application has not read) against its limit."""

    samples: int
    rcvbuf_max: int
    rmem_max: int
    full_share: float  # of the samples, those with the buffer at least FULL of its limit


FULL = 0.9


def receive_buffer(samples: list[SocketSample], side: str = "client") -> ReceiveBuffer | None:
    """The MPTCP connection's receive buffer on ``side`` (None without an MPTCP connection)."""
    conn = [s for s in samples if s.side == side and s.kind == "mptcp" and s.rcvbuf and s.rmem is not None]
    if not conn:
        return None
    full = sum(1 for s in conn if (s.rmem or 0) >= FULL * (s.rcvbuf or 1))
    return ReceiveBuffer(samples=len(conn), rcvbuf_max=max(s.rcvbuf or 0 for s in conn),
                         rmem_max=max(s.rmem or 0 for s in conn), full_share=full / len(conn))
