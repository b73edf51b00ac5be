"""quinn behind the Stack interface: our Rust program ``dclab-quinn`` (Cargo package in
``rs/``, pinned by its Cargo.lock: quinn 0.11.12, quinn-proto 0.11.19, h3 0.0.8, h3-quinn
0.0.10, rustls 0.23 with the ring provider, tokio) with an HTTP/3 ``server`` and a
``client`` that runs the whole workload in one process and prints one JSON line (the
contract of ``json_client.py``, which does the rest).

Build, from the repository root (the binary lands in ``build/bin/dclab-quinn``)::

    cargo build --release --locked --manifest-path dclab/endpoints/quinn/rs/Cargo.toml \\
        --target-dir build/quinn-target && \\
        install -D -m755 build/quinn-target/release/dclab-quinn build/bin/dclab-quinn

What quinn offers and does (read in the crates' source):

- Congestion control: ``quinn::congestion`` Cubic (``TransportConfig``'s default, so
  ``ccs[0]``), NewReno (``reno``) and BBR (``bbr``), chosen per end for its own sending.
- Datagrams: quinn starts at 1200 bytes and finds up to 1452 by path MTU discovery
  (``MtuDiscoveryConfig``'s default upper bound); ``quic_datagram`` (1200 to 65527) fixes the
  size (initial and minimum MTU, discovery off).
- Flow control: 64 MiB per stream (as the aioquic stack), no connection limit; a sender
  keeps at most 16 MiB unacknowledged per connection; 128 concurrent request streams.
- Receive buffer: quinn leaves SO_RCVBUF alone (quinn-udp only offers setters), so each
  UDP socket keeps ``net.core.rmem_default``; the client's JSON line reports each socket's
  effective value before and after quinn took it (``extra["stack"]["sockets"]``) and
  ``quinn_changed_rcvbuf``.
- GSO/GRO: on where the kernel allows it (quinn-udp probes; a veth pair does);
  ``extra["stack"]["gso"]``.
- qlog: quinn-proto's ``qlog`` feature (compiled in): one JSON-SEQ file per connection
  (``*.sqlog``; packet sent/received/lost and recovery metrics events). Key log: rustls'
  KeyLog into the NSS key log file.
- Workload: connections, assignment, parallel and sequential streams, byte ranges and
  pre-established connections; session resumption, 0-RTT and ``cc_options`` are not
  implemented (the client refuses them, and so does ``check``).
- The client trusts the ``--ca`` certificate itself (webpki refuses dclab's self-signed
  CA:TRUE certificate as a server's, so the exact certificate is pinned; the handshake
  signature is verified as usual).
"""

from __future__ import annotations

from ...paths import ROOT
from ..json_client import BinaryStack

BINARY = ROOT / "build" / "bin" / "dclab-quinn"
# quinn's UDP payload bounds (quinn-proto INITIAL_MTU, MAX_UDP_PAYLOAD); unfixed, the first
# datagrams are 1200 bytes and path MTU discovery raises them.
MIN_DATAGRAM, DEFAULT_DATAGRAM, MAX_DATAGRAM = 1200, 1200, 65527


class QuinnStack(BinaryStack):
    name = "quinn"
    ccs: tuple[str, ...] = ("cubic", "reno", "bbr")
    binary = BINARY
    tool = "cargo"
    build_hint = "needs cargo and a C compiler"
    datagrams = (MIN_DATAGRAM, DEFAULT_DATAGRAM, MAX_DATAGRAM)
