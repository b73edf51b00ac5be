"""The mQUIC study's network (Qian, Wang, Tafazolli, IEEE Access 2018; docs/mquic-fidelity.md,
"The study's network and the scaling"), as scenario changes, and how it is scaled to what aioquic can
carry on this machine.

The paper's LTE-A cell measured a radio RTT of 21.2 ms (std 3.46 ms), 65.9 Mbit/s and
0.09 % loss; a middlebox added 25 ms RTT and 0.05 % loss ("domestic") or 150 ms and
0.05 % ("international"), or the same RTTs with 1 % loss ("high loss"). Radio conditions
of 35.4, 65.9 and 94.1 Mbit/s. What the paper leaves open, and what we chose:

- Each RTT is split evenly over downlink and uplink (one-way delay = RTT / 2 each way).
- The radio RTT's std is jitter in both directions: each direction draws a normal delay
  with std 3.46 / sqrt(2) ms (the RTT's std is then 3.46 ms), order-preserving (an LTE
  link delivers in order; its jitter comes from scheduling, not from reordering).
- The radio loss is on the downlink only; the middlebox's loss is in both directions.
  Two independent losses combine as 1 - (1 - a)(1 - b).
- A deep eNodeB buffer: 1000 packets in the downlink's rate stage.
- Single connectivity: one leg, PDCP reordering off. The DC extension splits the same
  rate over two legs (half each, 50:50) with PDCP reordering on.

Scaling: aioquic (Python) cannot fill 65.9 Mbit/s on the 2-core machine. The radio rate
and the file sizes are multiplied by one factor ``scale``, the RTTs are kept: a file's
size in bandwidth-delay products, its transfer time at the link rate and the number of
RTTs a congestion-avoidance transfer takes stay those of the paper. What changes is the
initial window relative to the BDP (IW is 10 packets at every scale), so slow start
reaches the BDP in log2(1 / scale) fewer rounds; the experiment reports the scale with
every result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

RADIO_RTT_MS = 21.2
RADIO_RTT_STD_MS = 3.46
RADIO_LOSS_PCT = 0.09
RADIO_MBPS = 65.9
RADIO_CONDITIONS_MBPS = (35.4, 65.9, 94.1)  # the paper's weak, medium and strong cell
QUEUE_PACKETS = 1000  # a deep eNodeB buffer
PAPER_SIZES = (500_000, 2_400_000, 6_000_000)  # the paper's files: 500, 2400 and 6000 KB

PresetName = Literal["domestic-low-loss", "domestic-high-loss", "international-low-loss", "international-high-loss"]


@dataclass(frozen=True)
class Preset:
    """A location (the middlebox's RTT) and its loss."""

    name: str
    middlebox_rtt_ms: float
    middlebox_loss_pct: float


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("domestic-low-loss", 25.0, 0.05),
        Preset("domestic-high-loss", 25.0, 1.0),
        Preset("international-low-loss", 150.0, 0.05),
        Preset("international-high-loss", 150.0, 1.0),
    )
}


def combined_loss(*percents: float) -> float:
    """Independent losses in percent, combined."""
    keep = 1.0
    for p in percents:
        keep *= 1 - p / 100
    return (1 - keep) * 100


def scenario_changes(preset: str, radio_mbps: float, scale: float, dc: bool = False) -> dict[str, Any]:
    """The scenario fields (scenario.Scenario) of ``preset`` at ``radio_mbps`` scaled by
    ``scale``; over two legs with PDCP reordering when ``dc``."""
    p = PRESETS[preset]
    one_way = (RADIO_RTT_MS + p.middlebox_rtt_ms) / 2
    std = RADIO_RTT_STD_MS / math.sqrt(2)
    rate = round(radio_mbps * scale, 4)
    down_loss = round(combined_loss(RADIO_LOSS_PCT, p.middlebox_loss_pct), 6)
    legs = 2 if dc else 1
    return {
        "bw": [round(rate / legs, 4)] * legs,
        "split": [50.0, 50.0] if dc else [100.0],
        "delay": [one_way] * legs,
        "delay_cov": round(std / one_way, 6),
        "loss": [down_loss] * legs,
        "jitter_reorders": False,
        "uplink_delay": one_way,
        "uplink_loss": p.middlebox_loss_pct,
        "queue_packets": QUEUE_PACKETS,
        "reordering": dc,
    }


def scaled_sizes(sizes: tuple[int, ...], scale: float) -> tuple[int, ...]:
    """File sizes scaled with the rate (at least one byte each)."""
    return tuple(max(1, round(s * scale)) for s in sizes)
