"""What a multipath QUIC sender did per path, from its qlog (``--qlog``; noq writes one
JSON-SEQ file per connection under ``server/qlog-server``): packets and STREAM bytes sent on
each path, the bytes it sent more than once, its loss declarations by trigger (RFC 9002's
packet threshold ``reordering_threshold`` or time threshold), and on which path each
path's acknowledgments came back. The evidence docs/split-layer.md names mechanisms with
(spurious losses under reordering, every path's ACKs on path 0).

Read: the qlog draft's ``quic:`` events as noq 1.4 writes them (``header.path_id`` on
packets, ``path_ack`` frames with their ``path_id``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .qlog_flight import read_traces


@dataclass
class PathSend:
    """One sender's qlog, per path id."""

    packets: Counter[int] = field(default_factory=Counter)
    stream_bytes: Counter[int] = field(default_factory=Counter)
    resent_bytes: Counter[int] = field(default_factory=Counter)  # STREAM bytes at an offset sent before
    losses: Counter[str] = field(default_factory=Counter)  # declared lost, by trigger
    acks: Counter[tuple[int, int]] = field(default_factory=Counter)  # (path it arrived on, path it acknowledges)

    @property
    def resent_share(self) -> float:
        """Of every STREAM byte sent, the share that repeated bytes sent before."""
        total = sum(self.stream_bytes.values())
        return sum(self.resent_bytes.values()) / total if total else 0.0


def path_sends(qlog: Path) -> PathSend:
    """The per-path counts of one sender's qlog file."""
    out = PathSend()
    # A sender sends a stream's new data in offset order, so every byte below the highest
    # offset sent so far was sent before: a frame's bytes below it are a repeat.
    sent_to: dict[int, int] = {}  # stream id -> highest offset sent
    for trace in read_traces(qlog):
        for e in trace.get("events") or []:
            name, data = e.get("name"), e.get("data") or {}
            path = int((data.get("header") or {}).get("path_id") or 0)
            if name == "quic:packet_sent":
                out.packets[path] += 1
                for f in data.get("frames") or []:
                    if f.get("frame_type") != "stream":
                        continue
                    start = int(f.get("offset") or 0)
                    length = int(f.get("length") or (f.get("raw") or {}).get("length") or 0)  # noq: raw.length
                    stream = int(f.get("stream_id") or 0)
                    high = sent_to.get(stream, 0)
                    out.stream_bytes[path] += length
                    out.resent_bytes[path] += max(0, min(start + length, high) - start)
                    sent_to[stream] = max(high, start + length)
            elif name == "quic:packet_lost":
                out.losses[str(data.get("trigger") or "unknown")] += 1
            elif name == "quic:packet_received":
                for f in data.get("frames") or []:
                    if f.get("frame_type") == "path_ack":
                        out.acks[(path, int(f.get("path_id") or 0))] += 1
                    elif f.get("frame_type") == "ack":
                        out.acks[(path, path)] += 1
    return out
