"""Transport stacks behind one interface (base.Stack), one folder per stack. Adding a stack
means adding its folder with an ``adapter.py`` and one line to STACKS."""

from __future__ import annotations

import importlib

from .base import Stack, StackError

# name -> "module:Class"; imported on first use so that one broken stack does not stop others.
STACKS: dict[str, str] = {
    "aioquic": "dclab.endpoints.aioquic.adapter:AioquicStack",
    "ngtcp2": "dclab.endpoints.ngtcp2.adapter:Ngtcp2Stack",
    "tcp": "dclab.endpoints.tcp.adapter:TcpStack",
}


def get_stack(name: str) -> Stack:
    """The stack called ``name``; StackError naming the valid ones otherwise."""
    if name not in STACKS:
        raise StackError(f"--stack: must be one of {', '.join(STACKS)} (got {name!r})")
    module, cls = STACKS[name].split(":")
    stack: Stack = getattr(importlib.import_module(module), cls)()
    return stack
