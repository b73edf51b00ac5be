"""The ``--link lte:LEVEL`` presets: one LTE cell (20 MHz, proportional fair) in place of
the legs, each flow's bearer one device at the level's mean SINR. The four levels are the
device distances of the study (Kyratzis & Cottis, QUIC vs TCP over LTE in ns-3 LENA: one
eNodeB at 46 dBm, 20 MHz, devices at 250, 750, 1500 and 2500 m).

Mean SINR (one cell: no interference, so SINR = SNR), computed by ``sinr_db``:

- transmit power 46 dBm (the study's eNodeB), antenna gains 0 dB (LENA's isotropic default);
- path loss: log-distance, 3GPP TR 36.942 §4.5.2 macro cell (2 GHz carrier, base station
  antenna 15 m above the rooftops): ``L = 128.1 + 37.6 log10(d / 1 km)`` dB, i.e. an
  exponent of 3.76 and a reference loss of 128.1 dB at 1 km;
- noise: thermal ``-174 dBm/Hz + 10 log10(20 MHz) = -101.0 dBm`` plus the device's noise
  figure of 9 dB (LENA's UE default): -92.0 dBm.

| level  | distance | path loss | mean SINR | mean capacity (all 100 RBs) |
|--------|----------|-----------|-----------|-----------------------------|
| good   | 250 m    | 105.5 dB  | 32.5 dB   | 64.1 Mbit/s                 |
| medium | 750 m    | 123.4 dB  | 14.6 dB   | 23.9 Mbit/s                 |
| poor   | 1500 m   | 134.7 dB  | 3.3 dB    | 4.05 Mbit/s                 |
| edge   | 2500 m   | 143.1 dB  | -5.1 dB   | 0.30 Mbit/s                 |

The mean capacity is the cell's own (``dcemu cell-capacity --sinr-db X --seconds 3600``:
Rayleigh fading at 5 Hz, PiroEW2010 CQI, 120 data REs per RB), averaged over 8 seeds of
one hour (the Rust test ``cell::capacity::tests::mean_capacity_of_the_lte_levels``
asserts it); one device alone gets it, N saturated devices about 1/N each under PF. At
the edge the channel is out of range (CQI 0) 87 % of the TTIs.

Doppler 5 Hz: a pedestrian (about 2.7 km/h at 2 GHz); the study's devices do not move, and
a few Hz keeps the channel changing. Queue: the study's 512 kB per device at the eNodeB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .files import clip

BANDWIDTH_MHZ = 20.0
SCHEDULER = "pf"
DOPPLER_HZ = 5.0
QUEUE_BYTES = 512_000
TX_DBM = 46.0
NOISE_FIGURE_DB = 9.0
REF_LOSS_DB = 128.1  # at 1 km
EXPONENT = 3.76

LEVELS: dict[str, int] = {"good": 250, "medium": 750, "poor": 1500, "edge": 2500}  # metres
# Mean capacity with all RBs, Mbit/s: the cell's own figure (see the module docs).
CAPACITY_MBPS: dict[str, float] = {"good": 64.1, "medium": 23.9, "poor": 4.05, "edge": 0.30}


def noise_dbm() -> float:
    return -174.0 + 10 * math.log10(BANDWIDTH_MHZ * 1e6) + NOISE_FIGURE_DB


def path_loss_db(distance_m: float) -> float:
    return REF_LOSS_DB + 10 * EXPONENT * math.log10(distance_m / 1000)


def sinr_db(distance_m: float) -> float:
    """Mean SINR at ``distance_m``, rounded to 0.1 dB."""
    return round(TX_DBM - path_loss_db(distance_m) - noise_dbm(), 1)


@dataclass(frozen=True)
class CellLink:
    """A parsed ``--link lte:LEVEL``: one LTE cell whose devices sit at ``level``'s
    distance. Parsed once (``parse_link``, into ``Scenario.link``); everything about the cell
    comes from here."""

    level: str  # a name of LEVELS

    @property
    def distance_m(self) -> float:
        return LEVELS[self.level]

    @property
    def capacity_mbps(self) -> float:
        """The mean capacity one device alone gets (the table above)."""
        return CAPACITY_MBPS[self.level]

    @property
    def queue_bytes(self) -> int:
        """Each device's queue at the cell."""
        return QUEUE_BYTES

    def device(self) -> dict[str, object]:
        """One device of the cell, as dcemu's [[legs.downlink.cell.devices]] entry."""
        return {"mean_sinr_db": sinr_db(self.distance_m), "doppler_hz": DOPPLER_HZ, "fading": "rayleigh",
                "queue_bytes": self.queue_bytes}

    def cell(self, devices: int) -> dict[str, object]:
        """dcemu's ``[legs.downlink.cell]`` with ``devices`` devices at this level."""
        return {"bandwidth_mhz": BANDWIDTH_MHZ, "scheduler": SCHEDULER,
                "devices": [self.device() for _ in range(devices)]}

    def __str__(self) -> str:
        return f"lte:{self.level}"


def parse_level(name: str) -> CellLink:
    """A level name or its distance (250m); ValueError listing the allowed ones."""
    aliases = {f"{d}m": n for n, d in LEVELS.items()}
    level = aliases.get(name, name)
    if level not in LEVELS:
        raise ValueError(f"LTE level one of {', '.join([*LEVELS, *aliases])} (got {clip(name)})")
    return CellLink(level)


def parse_link(link: str) -> CellLink:
    """``lte:LEVEL`` (a name or a distance such as 250m); ValueError naming --link otherwise."""
    kind, _, name = link.partition(":")
    if kind != "lte":
        raise ValueError(f"--link: expected lte:LEVEL (got {clip(link)})")
    try:
        return parse_level(name)
    except ValueError as e:
        raise ValueError(f"--link: {e}") from None
