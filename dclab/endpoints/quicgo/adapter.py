"""quic-go behind the Stack interface: our Go program ``dclab-quicgo`` (module in ``go/``,
pinned by its go.mod and go.sum) with an HTTP/3 ``server`` and a ``client`` that runs the
whole workload in one process and prints one JSON line (the contract of
``json_client.py``, which does the rest).

Build, from the repository root (the binary lands in ``build/bin/dclab-quicgo``)::

    cd dclab/endpoints/quicgo/go && go build -trimpath -o ../../../../build/bin/dclab-quicgo .

What quic-go offers and does (read in its v0.65.0 source):

- Congestion control: NewReno only, hard-wired (its sent-packet handler makes every
  sender with ``congestion.NewCubicSender(..., true /* use Reno */, ...)``, an internal
  package, and ``quic.Config`` has nothing to choose another), so ``ccs`` is ``reno``.
- Datagrams: quic-go starts at 1280 bytes and finds up to 1452 by path MTU discovery;
  ``quic_datagram`` (1200 to 1452) fixes the size and turns discovery off.
- Receive buffer: quic-go sizes each UDP socket itself (``setReceiveBuffer``), whatever
  ``net.core.rmem_default`` says, unless that default already reaches 7 MiB: it asks for
  7 MiB with SO_RCVBUF (the kernel caps it at ``net.core.rmem_max`` and reports double)
  and, when that stays below 7 MiB, forces 7 MiB with SO_RCVBUFFORCE (root). So
  getsockopt shows 2 x min(7 MiB, rmem_max) when rmem_max >= 3.5 MiB, else 14 MiB
  (SO_SNDBUF likewise with ``net.core.wmem_*``). Kept, as deployments get it; the client's JSON line reports each
  socket's effective value in ``extra["stack"]["so_rcvbuf"]``.
- Flow control: quic-go's receive windows, auto-tuned from 512 KiB up to 6 MiB per stream
  and 15 MiB per connection (its defaults, kept).
- GSO: on where the kernel and interface allow it (a veth pair does); the environment
  variable ``QUIC_GO_DISABLE_GSO=1`` turns it off. ``extra["stack"]["gso"]`` says, per
  connection, whether the client's sending side uses it.
- Workload: connections, assignment, parallel and sequential streams, byte ranges and
  pre-established connections; session resumption, 0-RTT and ``cc_options`` are not
  implemented (the client refuses them, and so does ``check``).
"""

from __future__ import annotations

from ...paths import ROOT
from ..json_client import BinaryStack

BINARY = ROOT / "build" / "bin" / "dclab-quicgo"
GO_NEEDED = "1.26"  # go.mod's go line (quic-go v0.65.0 needs it)
# quic-go's packet sizes (its protocol constants MinInitialPacketSize, InitialPacketSize,
# MaxPacketBufferSize): the fixed size may be 1200 to 1452; without one it starts at 1280.
MIN_DATAGRAM, DEFAULT_DATAGRAM, MAX_DATAGRAM = 1200, 1280, 1452


class QuicGoStack(BinaryStack):
    name = "quic-go"
    ccs: tuple[str, ...] = ("reno",)
    binary = BINARY
    tool = "go"
    build_hint = f"needs Go >= {GO_NEEDED}: from go.dev (Debian 12's golang-go is 1.19, too old)"
    datagrams = (MIN_DATAGRAM, DEFAULT_DATAGRAM, MAX_DATAGRAM)
