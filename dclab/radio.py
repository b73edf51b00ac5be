"""``--link``: cells in place of the legs.

- ``lte:LEVEL``: one leg, an LTE cell (dclab/lte.py);
- ``nr:LEVEL``: one leg, an NR carrier (dclab/nr.py);
- ``endc:LTE_LEVEL,NR_LEVEL``: EN-DC, two legs: leg 1 the LTE master cell (which carries
  the uplink), leg 2 the NR secondary; a DC bearer is a device on both (docs/endc.md).

Each cell has one device per bearer on its leg; the scenario's --delay and --loss per leg
follow the cell (the core network).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from . import lte, nr
from .files import clip

Cell = lte.CellLink | nr.NrLink
Kind = Literal["lte", "nr", "endc"]
FORMS = "lte:LEVEL, nr:LEVEL or endc:LTE_LEVEL,NR_LEVEL"


@dataclass(frozen=True)
class RadioLink:
    """A parsed ``--link``: its cells, leg by leg, and the text it was given as (what a
    scenario stores and shows, so that a run's key keeps the user's spelling: "lte:250m"
    is the cell "lte:good", stored as given)."""

    kind: Kind
    cells: tuple[Cell, ...]
    text: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        """The cells by their level names: "endc:good,poor" (``text`` may give distances)."""
        if self.kind == "endc":
            return f"endc:{self.cells[0].level},{self.cells[1].level}"
        return str(self.cells[0])

    @property
    def legs(self) -> int:
        return len(self.cells)

    @property
    def capacity_mbps(self) -> float:
        """The legs' mean capacities summed (one device alone on each cell)."""
        return round(sum(c.capacity_mbps for c in self.cells), 2)

    @property
    def capacities(self) -> list[float]:
        return [c.capacity_mbps for c in self.cells]

    def __str__(self) -> str:
        return self.text or self.name


def parse_link(link: str) -> RadioLink:
    """One of ``FORMS``; ValueError naming --link and what is allowed otherwise."""
    kind, _, rest = link.partition(":")
    try:
        if kind == "lte":
            return RadioLink("lte", (lte.parse_link(link),), link)
        if kind == "nr":
            return RadioLink("nr", (nr.parse_level(rest),), link)
        if kind == "endc":
            master, sep, secondary = rest.partition(",")
            if not sep:
                raise ValueError(f"expected endc:LTE_LEVEL,NR_LEVEL (got {clip(link)})")
            return RadioLink("endc", (lte.parse_level(master.strip()), nr.parse_level(secondary.strip())), link)
    except ValueError as e:
        raise ValueError(f"--link: {str(e).removeprefix('--link: ')}") from None
    raise ValueError(f"--link: expected {FORMS} (got {clip(link)})")
