"""How a simulated run on a stand-in model shows its stack: with the model that stood in
for it, "ngtcp2 (aioquic model)", in every table, legend and line that names the stack.

A run records its stand-ins in its options (``stand_in``, e.g. ``{"ngtcp2": "aioquic"}``,
or ``{"tcp:bbr": "dclab-bbr"}`` for one controller; dcemu/sim_models.py). Emulated runs
and simulated runs of a stack's own model have none and keep the stack's plain name.
"""

from __future__ import annotations

from collections.abc import Mapping


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
