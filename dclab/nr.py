"""The ``--link nr:LEVEL`` presets (and the secondary cell of ``endc:``): one NR carrier in
band n78 (3.5 GHz, TDD), as many operators run it, each flow's bearer one device at the
level's mean SINR. The carrier and its model are dcemu's (``emu/src/cell/nr/``,
docs/endc.md):

- numerology 1 (30 kHz, 0.5 ms slots), 100 MHz: 273 PRBs (TS 38.101-1 Table 5.3.2-1);
- the 256QAM MCS and CQI tables of TS 38.214; 4 MIMO layers (a 4x4 device);
- TDD pattern DDDSU (2.5 ms: three downlink slots, a special one with 8 PDSCH symbols, one
  uplink); 12 PDSCH symbols in a downlink slot, one DMRS symbol;
- HARQ at the CQI's block error rate of 0.1, a retransmission 4 slots later, up to 4
  transmissions;
- proportional fair scheduling by RBGs of 16 PRBs; 3 MB queue per device (a 1.5 Gbit/s
  carrier drains it in 16 ms, as 512 kB take an LTE cell at 64 Mbit/s 64 ms).

Mean SINR (one cell: SINR = SNR), computed by ``sinr_db``:

- transmit power 46 dBm over the 100 MHz, antenna gains 0 dB;
- path loss: 3GPP TR 38.901 Table 7.4.1-1, urban macro (UMa) at 3.5 GHz, base station 25 m
  high, device 1.5 m: LOS ``28.0 + 22 log10(d3D) + 20 log10(fc)`` for the good level,
  NLOS ``max(LOS, 13.54 + 39.08 log10(d3D) + 20 log10(fc))`` for the others;
- noise: ``-174 dBm/Hz + 10 log10(100 MHz) = -94.0 dBm`` plus a noise figure of 9 dB.

| level  | distance | path  | path loss | mean SINR | mean capacity (all PRBs, sent) |
|--------|----------|-------|-----------|-----------|--------------------------------|
| good   | 150 m    | LOS   | 86.9 dB   | 44.1 dB   | 1553.4 Mbit/s                  |
| medium | 200 m    | NLOS  | 114.5 dB  | 16.5 dB   | 504.0 Mbit/s                   |
| poor   | 400 m    | NLOS  | 126.1 dB  | 4.9 dB    | 87.2 Mbit/s                    |
| edge   | 700 m    | NLOS  | 135.6 dB  | -4.6 dB   | 8.5 Mbit/s                     |

The mean capacity is the carrier's own, the bits sent in every slot with all PRBs
(``dcemu cell-capacity --rat nr --bandwidth-mhz 100 --layers 4 --tdd DDDSU --doppler 10
--sinr-db X --seconds 3600``, the mean of seeds 1 to 8; the Rust test
``cell::nr_cell_tests::mean_capacity_of_the_nr_levels`` asserts it). The peak is
1566.6 Mbit/s (CQI 15 in every slot); the edge device is out of range (CQI 0) in 67 % of
its downlink slots (the 0.866 of ``outage`` less the uplink slots' 0.2). HARQ resends about a tenth of the blocks, so a
device gets about 90 % of it (``capacity_mbps``). Rayleigh fading at 10 Hz (a pedestrian
at 3.5 GHz) for every level, the LOS one included (no Rician K-factor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .files import clip

CARRIER_GHZ = 3.5
NUMEROLOGY = 1
BANDWIDTH_MHZ = 100.0
LAYERS = 4
TDD = "DDDSU"
SCHEDULER = "pf"
DOPPLER_HZ = 10.0
QUEUE_BYTES = 3_000_000
TX_DBM = 46.0
NOISE_FIGURE_DB = 9.0
BS_HEIGHT_M = 25.0
UE_HEIGHT_M = 1.5
BLER = 0.1  # dcemu's HARQ default (emu/src/config/schema.rs, HarqFile)

# metres, and whether the path is line of sight
LEVELS: dict[str, tuple[int, bool]] = {"good": (150, True), "medium": (200, False), "poor": (400, False),
                                       "edge": (700, False)}
# Mean capacity sent with all PRBs, Mbit/s: the carrier's own figure (see the module docs).
SENT_MBPS: dict[str, float] = {"good": 1553.4, "medium": 504.0, "poor": 87.2, "edge": 8.5}


def noise_dbm() -> float:
    return -174.0 + 10 * math.log10(BANDWIDTH_MHZ * 1e6) + NOISE_FIGURE_DB


def path_loss_db(distance_m: float, los: bool) -> float:
    """TR 38.901 UMa path loss at ``distance_m`` (2D) from the base station."""
    d3 = math.hypot(distance_m, BS_HEIGHT_M - UE_HEIGHT_M)
    pl_los = 28.0 + 22 * math.log10(d3) + 20 * math.log10(CARRIER_GHZ)
    if los:
        return pl_los
    return max(pl_los, 13.54 + 39.08 * math.log10(d3) + 20 * math.log10(CARRIER_GHZ) - 0.6 * (UE_HEIGHT_M - 1.5))


def sinr_db(distance_m: float, los: bool) -> float:
    """Mean SINR at ``distance_m``, rounded to 0.1 dB."""
    return round(TX_DBM - path_loss_db(distance_m, los) - noise_dbm(), 1)


@dataclass(frozen=True)
class NrLink:
    """A parsed NR level: one NR carrier whose devices sit at ``level``'s distance."""

    level: str  # a name of LEVELS

    @property
    def distance_m(self) -> int:
        return LEVELS[self.level][0]

    @property
    def capacity_mbps(self) -> float:
        """What one device alone gets, about: the carrier's mean less HARQ's resent tenth."""
        return round(SENT_MBPS[self.level] * (1 - BLER), 1)

    @property
    def queue_bytes(self) -> int:
        """Each device's queue at the cell."""
        return QUEUE_BYTES

    def device(self) -> dict[str, object]:
        d, los = LEVELS[self.level]
        return {"mean_sinr_db": sinr_db(d, los), "doppler_hz": DOPPLER_HZ, "fading": "rayleigh",
                "queue_bytes": self.queue_bytes}

    def cell(self, devices: int) -> dict[str, object]:
        """dcemu's ``[legs.downlink.cell]`` with ``devices`` devices at this level."""
        return {"rat": "nr", "bandwidth_mhz": BANDWIDTH_MHZ, "scheduler": SCHEDULER,
                "nr": {"numerology": NUMEROLOGY, "layers": LAYERS, "tdd": TDD},
                "devices": [self.device() for _ in range(devices)]}

    def __str__(self) -> str:
        return f"nr:{self.level}"


def parse_level(name: str) -> NrLink:
    """A level name or its distance (150m); ValueError listing the allowed ones."""
    aliases = {f"{d}m": n for n, (d, _) in LEVELS.items()}
    name = aliases.get(name, name)
    if name not in LEVELS:
        raise ValueError(f"NR level one of {', '.join([*LEVELS, *aliases])} (got {clip(name)})")
    return NrLink(name)
