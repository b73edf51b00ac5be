"""noq behind the Stack interface: our Rust program ``dclab-noq`` (Cargo package in ``rs/``,
pinned by its Cargo.lock: noq 1.4.0, noq-proto 1.4.0, noq-udp 1.4.0, rustls 0.23 with the
ring provider, tokio; noq's features ``runtime-tokio``, ``rustls-ring`` and ``qlog``) with a
``server`` and a ``client`` that runs the whole workload in one process and prints one JSON
line (the contract of ``json_client.py``, which does the rest). noq is n0-computer's fork
of quinn implementing the QUIC multipath extension (draft-ietf-quic-multipath, the source
cites draft 21).

Build, from the repository root (the binary lands in ``build/bin/dclab-noq``)::

    cargo build --release --locked --manifest-path dclab/endpoints/noq/rs/Cargo.toml \\
        --target-dir build/noq-target && \\
        install -D -m755 build/noq-target/release/dclab-noq build/bin/dclab-noq

Application protocol: HTTP/0.9 style, not HTTP/3. No h3 binding for noq is on crates.io
(h3-quinn takes quinn's types; iroh-h3 binds iroh's endpoint, a whole peer-to-peer stack).
Each object is one bidirectional stream: the request line ``GET /<n>\\r\\n``, or ``GET /<n>
bytes=A-B\\r\\n`` for a byte range, then the client's FIN; the server answers the bytes (byte
k of a body is k % 256) and its FIN, or resets the stream (code 1: malformed request, 2:
range not satisfiable). ALPN ``hq-interop`` (the interop runner's HTTP/0.9, plus the range).
There is no status line: an object is ok when its stream ended with exactly its size and
every chunk began with its offset's byte.

Multipath (``capabilities.multipath``): with ``ClientSpec.paths`` the client gets ``--paths
A1,A2,...``; each connection's UDP socket is bound to the wildcard address (so it receives
on every address) and sends its first path's packets from A1 (noq's connect takes no local
address, so the socket fills it in); once the handshake is confirmed the client opens one
further path from each other address (``Connection::open_path`` with a ``FourTuple`` of the
server's address and that local address), retrying while the server has not yet issued the
path's connection ids, while the requests go on. Both ends send the ``initial_max_path_id``
transport parameter (``TransportConfig::max_concurrent_multipath_paths``): the server always
(a single-path client just does not negotiate it), the client only with ``--paths``.
Without ``paths`` the client is plain single-path QUIC.

noq has no selectable path scheduler. Its packet scheduling (noq-proto
``Connection::poll_transmit``/``scheduling_info``): paths are visited in path-id order, and
every validated path whose *sending end's own* status is ``available`` may carry data while
its congestion window and pacer allow; a ``backup`` path carries data only while no
validated available path is left. Each path has its own congestion controller of ``--cc``'s
kind (uncoupled: noq has no coupled controller such as LIA/OLIA). The status each path gets
is the client's ``--path-status`` for the further paths (path 0 stays available); the server
takes the status over from the client's PATH_STATUS frames (noq leaves that to the
application), so backup means backup for the download too, once the server's task has
handled the event: until then the new path is available to the server, and in 50 runs of
tests/test_endpoint_noq.py a backup path received 6.8-51.6 kB of a 5 MB download that way.

Knobs of the program (only ``--paths`` comes from the adapter; the others keep these
defaults): ``--path-status available|backup`` (client, default available);
``--max-paths N`` (both, default 8: paths allowed at once, the first included; server 0 =
multipath off; the client refuses fewer than its addresses); ``--path-idle-timeout S`` and
``--path-keep-alive S`` (both, noq's per-path idle timeout and keep-alive, default none);
``--ignore-peer-status`` (server: keep every path available for its sending).

The client's ``extra["stack"]``: ``multipath`` (the addresses, status and limits asked for)
and, per connection, ``connections[c]``: ``multipath`` (negotiated), totals, ``consistent``
(the totals and every path's counters are one snapshot: nothing arrived while they were
read, so the paths' counters sum to the totals) and ``paths``,
one entry per path (path 0 first): ``id``, ``local`` (address:port it leaves from),
``local_ip`` (noq's view), ``remote``, ``status``, ``established_s`` (further paths: seconds
after the request when validated), ``error`` (why a path did not open), and noq's
``PathStats``: ``rtt_ms``, ``cwnd``, ``current_mtu``, ``sent_packets``, ``sent_bytes``,
``lost_packets``, ``lost_bytes``, ``congestion_events``, ``udp_rx_bytes``/``_datagrams``
(what the client received on it: the download's share) and ``udp_tx_bytes``/``_datagrams``.

Flow control: 2 MiB per stream, not quinn's 64 MiB. noq-proto 1.4.0 ends a connection
("too many gaps in stream buffer") once a stream holds more than 2048 received frames not yet
read, in order or not (it lacks quinn-proto 0.11.19's merging of contiguous chunks); a
reader lagging on a fast veth, or a loss on a fast path, reach that well within 64 MiB. 2 MiB
stays below 2048 frames of 1200-byte datagrams, and caps a stream at 2 MiB per round trip
(about 16 Mbit/s at 1 s of RTT, 170 at 100 ms).

What else noq offers and does (read in the crates' source): congestion control Cubic
(``TransportConfig``'s default, so ``ccs[0]``), NewReno (``reno``) and BBRv3 (``bbr``);
datagrams, receive buffers, GSO/GRO, the pinned certificate, qlog (one JSON-SEQ
``*.sqlog`` per connection: the client's ``client-connN.sqlog``, the server's named after
the original destination connection id) and key log as the quinn stack (``quinn/adapter.py``);
workload: connections, assignment, parallel and sequential streams, byte ranges and
pre-established connections; no session resumption, 0-RTT or ``cc_options`` (refused).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...paths import ROOT
from ..base import ClientSpec
from ..json_client import BinaryStack

BINARY = ROOT / "build" / "bin" / "dclab-noq"
# noq's UDP payload bounds (as quinn's: noq-proto INITIAL_MTU, MAX_UDP_PAYLOAD); unfixed,
# the first datagrams are 1200 bytes and path MTU discovery raises them.
MIN_DATAGRAM, DEFAULT_DATAGRAM, MAX_DATAGRAM = 1200, 1200, 65527


class NoqStack(BinaryStack):
    name = "noq"
    ccs: tuple[str, ...] = ("cubic", "reno", "bbr")
    capabilities = dataclasses.replace(BinaryStack.capabilities, multipath=True)
    binary = BINARY
    tool = "cargo"
    build_hint = "needs cargo and a C compiler"
    datagrams = (MIN_DATAGRAM, DEFAULT_DATAGRAM, MAX_DATAGRAM)

    def client_command(self, spec: ClientSpec, workload_file: Path | None) -> list[str]:
        cmd = super().client_command(spec, workload_file)
        return [*cmd, "--paths", ",".join(spec.paths)] if spec.paths else cmd
