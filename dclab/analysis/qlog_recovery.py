"""The QUIC sender's loss declarations and probe timeouts, from the server's qlog of a run
(``--qlog`` keeps them under ``server/``): ``recovery:packet_lost`` events, and
``recovery:loss_timer_updated`` events that say a PTO timer expired (qlog 0.3's
``event_type`` "expired" with ``timer_type`` "pto"). aioquic writes the first and not the
second (its PTO is not logged), so a run of it shows losses and no PTO marks.

Read: aioquic's JSON qlog (one file per connection, ``traces`` with absolute times in Unix
ms). Counted per BIN_S, as dcemu counts its events per interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .qlog_flight import is_server, read_traces

BIN_S = 0.01  # dcemu's stats interval
MAX_BYTES = 512 * 1024 * 1024  # a qlog larger than this is not read (a long run's: parse time and memory)


@dataclass(frozen=True)
class SenderEvent:
    """``count`` events of ``kind`` in the bin of ``BIN_S`` starting at ``t_s`` (s after the
    request)."""

    t_s: float
    kind: Literal["loss", "pto"]
    count: int


def _kind(event: dict[str, object]) -> Literal["loss", "pto"] | None:
    name = event.get("name")
    if name == "recovery:packet_lost":
        return "loss"
    data = event.get("data")
    if name == "recovery:loss_timer_updated" and isinstance(data, dict) and data.get("event_type") == "expired" \
            and data.get("timer_type") == "pto":
        return "pto"
    return None


def sender_events(run_dir: Path, request_wall: float) -> list[SenderEvent] | None:
    """Losses and PTOs of every server trace under ``run_dir/server`` (None: no qlog
    there), per bin, times in seconds after ``request_wall`` (Unix time)."""
    files = sorted(p for p in (Path(run_dir) / "server").rglob("*.qlog") if p.stat().st_size <= MAX_BYTES) \
        if (Path(run_dir) / "server").is_dir() else []
    bins: dict[tuple[int, Literal["loss", "pto"]], int] = {}
    read = False
    for path in files:
        try:
            traces = read_traces(path)
        except (OSError, ValueError):  # unreadable, or not a JSON qlog
            continue
        for trace in traces:
            if not is_server(trace):
                continue
            read = True
            for e in trace.get("events") or []:
                kind = _kind(e) if isinstance(e, dict) else None
                if kind is None or not isinstance(e.get("time"), (int, float)):
                    continue
                k = (math.floor((float(e["time"]) / 1e3 - request_wall) / BIN_S), kind)
                bins[k] = bins.get(k, 0) + 1
    if not read:
        return None
    return [SenderEvent((b + 1) * BIN_S, kind, n) for (b, kind), n in sorted(bins.items())]
