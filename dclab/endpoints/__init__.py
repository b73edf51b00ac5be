"""Transport stacks behind one interface (base.Stack). Adding a stack means adding one
module here and one line to STACKS."""

from __future__ import annotations

import importlib

from .base import Stack

# name -> (module, class); imported on first use so one broken stack does not stop others.
STACKS: dict[str, tuple[str, str]] = {
    "aioquic": ("dclab.endpoints.aioquic_stack", "AioquicStack"),
    "ngtcp2": ("dclab.endpoints.ngtcp2_stack", "Ngtcp2Stack"),
    "tcp": ("dclab.endpoints.tcp_stack", "TcpStack"),
}


def get_stack(name: str) -> Stack:
    if name not in STACKS:
        raise ValueError(f"--stack: must be one of {', '.join(STACKS)} (got {name!r})")
    module, cls = STACKS[name]
    return getattr(importlib.import_module(module), cls)()
