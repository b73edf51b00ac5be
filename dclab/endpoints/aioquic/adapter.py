"""aioquic (Python QUIC) behind the Stack interface: our own HTTP/3 server and client
(``h3_server.py``, ``h3_client.py``) on aioquic's asyncio API. The client runs the whole
workload in one process; this module writes the workload to a file, starts the client in
the client namespace and reads back the JSON line it prints. ``quic_datagram`` of the specs
becomes both ends' ``--max-datagram-size`` (QuicConfiguration.max_datagram_size; their
default is ``h3_server.DEFAULT_DATAGRAM``).

The command-line contract and the JSON line are ``json_client.py``'s."""

from __future__ import annotations

import dataclasses
import sys

from ..base import Capabilities, ServerSpec
from ..json_client import JsonClientStack
from .mquic import OPTIONS as MQUIC_OPTIONS  # Workload.cc_options knobs of AioquicMquicStack

SERVER_MODULE = "dclab.endpoints.aioquic.h3_server"
MQUIC_LOG = "mquic.jsonl"  # in the server's workdir: the mQUIC groups' JSON lines
MQUIC_CCS = ("mquic-reno", "mquic-cubic", "mquic-bbr")
CLIENT_MODULE = "dclab.endpoints.aioquic.h3_client"


class AioquicStack(JsonClientStack):
    name = "aioquic"
    ccs: tuple[str, ...] = ("reno", "cubic", "bbr")  # bbr: our BBR v1 (bbr.py), registered by the server and client
    capabilities = Capabilities(
        max_connections=64,
        max_objects=10_000,
        streams=("parallel", "sequential"),
        resumption=True,
        zero_rtt=True,
        ranges=True,
        preconnect=True,
        serve=True,
    )

    def missing(self) -> list[str]:
        try:
            import aioquic  # noqa: F401
            from aioquic.h3.connection import H3Connection  # noqa: F401
        except ImportError as e:
            return [f"aioquic is not importable ({e}): pip install aioquic (version in requirements.lock)"]
        return []

    def program(self, role: str) -> list[str]:
        """The start of the command that runs our ``server`` or ``client`` (a subclass may
        run another interpreter and script)."""
        return [sys.executable, "-m", SERVER_MODULE if role == "server" else CLIENT_MODULE]

    def server_command(self, spec: ServerSpec) -> list[str]:
        cmd = super().server_command(spec)
        if self.resolve_cc(spec.cc).startswith("mquic-"):
            cmd += ["--mquic-log", str(spec.workdir / MQUIC_LOG)]
        return cmd

    def version(self) -> str:
        try:
            import aioquic

            return str(aioquic.__version__)
        except Exception:  # noqa: BLE001
            return "unknown"


class AioquicMquicStack(AioquicStack):
    """aioquic with mQUIC (docs/mquic-implementation.md, "The server"): the controllers ``mquic-reno``,
    ``mquic-cubic`` and ``mquic-bbr`` (the server runs them, the client the wrapped reno,
    cubic or bbr) and the per-connection ``cc_options`` ``mquic_group``, ``mquic_n``,
    ``mquic_sync`` (full|cwnd|off), ``mquic_params`` (aioquic|paper), ``mquic_iw``
    (packets), ``mquic_exit`` (aioquic|hystart) and ``mquic_merge`` (0|1). A variant (endpoints.VARIANTS), not offered by --stack, so that
    ``aioquic``'s advertised controllers and options stay as they were; the server
    appends its groups' lines to ``<server workdir>/mquic.jsonl``."""

    name = "aioquic-mquic"
    ccs = MQUIC_CCS
    capabilities = dataclasses.replace(AioquicStack.capabilities, cc_options=MQUIC_OPTIONS)


class AioquicTokenStack(AioquicStack):
    """aioquic whose server treats each client's address as validated from its first
    packet (``h3_server.py --validated-address``), as a server that accepts an
    address-validation token (NEW_TOKEN, RFC 9000 section 8.1.3) would: no
    anti-amplification limit before the handshake ends. aioquic issues no NEW_TOKEN, so
    this stands in for a client presenting one; used to show what that limit costs 0-RTT
    (``scripts/zero_rtt_phases.py``). A variant (endpoints.VARIANTS), not offered by
    --stack."""

    name = "aioquic-token"

    def server_command(self, spec: ServerSpec) -> list[str]:
        return [*super().server_command(spec), "--validated-address"]
