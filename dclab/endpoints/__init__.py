"""Transport stacks behind one interface (base.Stack), one folder per stack. Adding a stack
means adding its folder with an ``adapter.py`` and one line to STACKS."""

from __future__ import annotations

import importlib

from ..files import clip
from .base import Stack, StackError

# name -> "module:Class"; imported on first use so that one broken stack does not stop others.
STACKS: dict[str, str] = {
    "aioquic": "dclab.endpoints.aioquic.adapter:AioquicStack",
    "aioquic-2020": "dclab.endpoints.aioquic2020.adapter:Aioquic2020Stack",
    "mptcp": "dclab.endpoints.mptcp.adapter:MptcpStack",
    "ngtcp2": "dclab.endpoints.ngtcp2.adapter:Ngtcp2Stack",
    "noq": "dclab.endpoints.noq.adapter:NoqStack",
    "quic-go": "dclab.endpoints.quicgo.adapter:QuicGoStack",
    "quinn": "dclab.endpoints.quinn.adapter:QuinnStack",
    "tcp": "dclab.endpoints.tcp.adapter:TcpStack",
}


# Variants an experiment uses by name but --stack does not offer (their controllers and
# options are those of one study): the mquic experiment's aioquic with the mQUIC engine.
VARIANTS: dict[str, str] = {
    "aioquic-mquic": "dclab.endpoints.aioquic.adapter:AioquicMquicStack",
    "aioquic-token": "dclab.endpoints.aioquic.adapter:AioquicTokenStack",
    # the capacity experiment's UDP load (--udp-mbps): iperf3 at a constant offered rate
    "iperf3-udp": "dclab.endpoints.iperf3.adapter:Iperf3UdpStack",
}


def get_stack(name: str) -> Stack:
    """The stack (or variant) called ``name``; StackError naming the valid stacks otherwise."""
    spec = STACKS.get(name) or VARIANTS.get(name)
    if spec is None:
        raise StackError(f"--stack: must be one of {', '.join(STACKS)} (got {clip(name)})")
    module, cls = spec.split(":")
    stack: Stack = getattr(importlib.import_module(module), cls)()
    return stack
