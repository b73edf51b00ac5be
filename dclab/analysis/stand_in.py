"""How a simulated run on a stand-in model shows its stack: with the model that stood in
for it, "ngtcp2 (aioquic model)", in every table, legend and line that names the stack.

A run records its stand-ins in its options (``stand_in``, e.g. ``{"ngtcp2": "aioquic"}``,
or ``{"tcp:bbr": "dclab-bbr"}`` for one controller; dcemu/sim_models.py). Emulated runs
and simulated runs of a stack's own model have none and keep the stack's plain name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def stack_label(stack: str, stand_in: Mapping[str, str] | None) -> str:
    """``stack`` (a stack, or per flow ``dc=ngtcp2,sc1=tcp``) with each stand-in's model
    after the stack it stood in for: ``dc=ngtcp2 (aioquic model),sc1=tcp``."""
    if not stand_in:
        return stack
    model = {subject.partition(":")[0]: name for subject, name in stand_in.items()}

    def one(part: str) -> str:
        name = part.rpartition("=")[2]
        return f"{part} ({model[name]} model)" if name in model else part

    return ",".join(one(p) for p in stack.split(","))


def stand_in_of(row: Mapping[str, Any]) -> dict[str, str]:
    """The stand-ins a stored run (a store row, or a record with its options) ran on."""
    return dict((row.get("options") or {}).get("stand_in") or {})


def row_stack(row: Mapping[str, Any]) -> str:
    """A stored run's stack as it is shown."""
    return stack_label(str(row.get("stack") or ""), stand_in_of(row))
