"""A long-lived download measured over a window rather than to completion: the clients run
for the window (and a margin), dcemu's records are read, and each bearer's mean over the
window after its warm-up comes from its delivered bytes. Shared by ``capacity``,
``fairness``, ``flows`` (and ``simult_flows`` through it) and ``split_layer``'s fairness runs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.metrics import leg_window_means, window_means
from ..dcemu.records import Stats
from ..endpoints.base import TransferResult
from ..testbed import Bed, stats_ms

# Seconds the clients may run past the window before they are stopped, so that the
# window's end falls inside their transfers (the value the four experiments used before).
MARGIN_S = 2


@dataclass(frozen=True)
class Window:
    transfers: dict[str, TransferResult]  # by flow: cut at the window's end, as expected
    records: Sequence[Stats]  # dcemu's, the whole run
    t0_ms: float  # the clients' start on dcemu's stats clock
    means: dict[str, float]  # Mbit/s by bearer over [warm-up, window]; empty without records
    legs: dict[str, float]  # Mbit/s out of each downlink leg (PDCP headers too), same window


def run_window(bed: Bed, duration_s: float, warmup_s: float) -> Window:
    """Runs every client of ``bed`` for ``duration_s`` (seconds; ``warmup_s`` of them left
    out of the means), ends the bed and measures."""
    start_wall = time.time()
    transfers = bed.run_clients(duration_s + MARGIN_S)
    records = bed.finish()
    t0_ms = stats_ms(bed, start_wall) or 0.0
    if not records:
        return Window(transfers, records, t0_ms, {}, {})
    return Window(transfers, records, t0_ms, window_means(records, t0_ms, duration_s, warmup_s),
                  leg_window_means(records, t0_ms, duration_s, warmup_s))
