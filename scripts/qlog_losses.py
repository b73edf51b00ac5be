"""Counts, in QUIC qlog files, the packets declared lost and the congestion-window
reductions (a ``metrics_updated`` whose window is below the one before), for aioquic 1.x
(qlog 0.3: ``name``, ``data``) and aioquic 0.8 (draft-01: ``event_fields`` lists).
docs/fidelity.md uses it on the servers' qlogs of ``dclab run throughput --qlog``:

    python scripts/qlog_losses.py RUN/rep-01/server/qlog-server/*.qlog
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def events(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(category:event, data) of every event in the file."""
    doc = json.loads(path.read_text())
    for trace in doc.get("traces", []):
        fields = trace.get("event_fields")
        for e in trace.get("events", []):
            if fields:
                d = dict(zip(fields, e, strict=False))
                yield f"{d.get('category', '')}:{d.get('event') or d.get('event_type', '')}", d.get("data") or {}
            else:
                yield e.get("name", ""), e.get("data") or {}


def count(path: Path) -> dict[str, int | None]:
    lost = reductions = 0
    cwnd: int | None = None
    lowest: int | None = None
    for name, data in events(path):
        if name.endswith("packet_lost"):
            lost += 1
        window = data.get("congestion_window", data.get("cwnd"))
        if name.endswith("metrics_updated") and window is not None:
            if cwnd is not None and int(window) < cwnd:
                reductions += 1
            cwnd = int(window)
            lowest = cwnd if lowest is None else min(lowest, cwnd)
    return {"packets_lost": lost, "cwnd_reductions": reductions, "lowest_cwnd": lowest}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for arg in sys.argv[1:]:
        print(arg, json.dumps(count(Path(arg))))
