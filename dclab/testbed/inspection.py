"""What a run keeps for inspection on request (``--pcap``, ``--keylog``, ``--qlog``), and
the guide it leaves in the run directory saying how to open each file.

- pcap: dcemu captures at both of its ends (``client-end.pcap``: what the client sent and
  what dcemu delivered to it; ``server-end.pcap``: what the server sent and what dcemu
  delivered to it), stamped at the hand-over to or from the kernel; the same packet in
  both files gives its delay, and a packet missing from one its loss. ``legs/<leg>.pcap``
  holds every downlink packet as it left that leg, before the PDCP receiver reordered it.
- keylog: every end whose stack can write one appends its TLS secrets to
  ``<end>/tls-keys.log`` (NSS key log format), which Wireshark and tshark read to decrypt
  QUIC and TLS.
- qlog: the QUIC stacks that write qlog put one file per connection in ``<end>/qlog-<role>``.
- sockets: every TCP and MPTCP socket in both namespaces, sampled by ``ss`` every 100 ms
  while the clients run, into ``sockets.jsonl`` (socket_sampler.py): kernel TCP's and
  MPTCP's window, RTT, retransmissions and buffers over time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from ..analysis.socket_series import FILE as SOCKETS_FILE
from ..endpoints.base import KEYLOG_FILE

CLIENT_PCAP = "client-end.pcap"
SERVER_PCAP = "server-end.pcap"
LEGS_DIR = "legs"
GUIDE = "INSPECT.txt"


@dataclass(frozen=True)
class Inspection:
    pcap: bool = False
    keylog: bool = False
    qlog: bool = False
    sockets: bool = False

    def __bool__(self) -> bool:
        return bool(self.asked())

    def asked(self) -> list[str]:
        """The options asked for, as given on the command line (``--pcap``, ...)."""
        return [f"--{f.name}" for f in fields(self) if getattr(self, f.name)]

    def emulator_args(self, workdir: Path) -> tuple[str, ...]:
        """dcemu's capture options, into ``workdir``."""
        if not self.pcap:
            return ()
        return ("--pcap", str(workdir / CLIENT_PCAP), "--pcap-server", str(workdir / SERVER_PCAP),
                "--pcap-legs", str(workdir / LEGS_DIR))


def decode_as(ports: Iterable[int]) -> list[str]:
    """tshark's arguments that read the servers' ``ports`` as QUIC (UDP) and TLS (TCP).
    tshark picks a dissector by port before it tries QUIC's heuristic, so a client port it
    knows hides the flow (34980, EtherCAT's, once turned a whole HTTP/3 capture into
    "ecatf"); naming the servers' ports leaves nothing to chance."""
    return [x for port in sorted(set(ports)) for x in ("-d", f"udp.port=={port},quic", "-d", f"tcp.port=={port},tls")]


def guide(run_dir: Path, ports: Sequence[int] = ()) -> str | None:
    """How to open what inspection left in ``run_dir`` (and its subdirectories, one level:
    the ends' ``client``/``server`` folders); None when it left nothing. ``ports``: the
    run's server ports, which the tshark command decodes as QUIC and TLS."""
    run_dir = Path(run_dir)
    pcaps = [p for p in (run_dir / CLIENT_PCAP, run_dir / SERVER_PCAP) if p.is_file()]
    legs = sorted((run_dir / LEGS_DIR).glob("*.pcap"))
    keylogs = sorted(p for p in [*run_dir.glob(f"*/{KEYLOG_FILE}"), *run_dir.glob("*tls-keys.log")] if p.stat().st_size > 0)
    qlogs = sorted(p for p in run_dir.glob("*/qlog-*/*") if p.is_file())
    sockets = run_dir / SOCKETS_FILE
    if not (pcaps or keylogs or qlogs or sockets.is_file()):
        return None
    rel = [str(p.relative_to(run_dir)) for p in keylogs]
    lines = [f"What this run kept for inspection ({run_dir}), and how to open it.", ""]
    if pcaps:
        lines += ["Captures (dcemu's, both directions, stamped at the hand-over to or from the kernel):"]
        lines += [f"  {p.name}" for p in pcaps] + [f"  {p.relative_to(run_dir)}" for p in legs]
        lines += ["  client-end.pcap is what the client saw; server-end.pcap what the server saw. The same",
                  "  packet in both gives its delay through dcemu; a packet in one only was lost there.",
                  f"  {LEGS_DIR}/LEG.pcap: each downlink packet as it left that leg, before PDCP reordering.", ""]
    if keylogs:
        lines += ["TLS key logs (NSS key log format):"] + [f"  {r}" for r in rel]
        if pcaps:
            k = rel[0]
            tshark = ["tshark", "-r", pcaps[0].name, "-o", f"tls.keylog_file:{k}", *decode_as(ports), "-Y", "http3"]
            lines += ["  Decrypt the QUIC and TLS packets of a capture with one of them:",
                      f"    wireshark -o tls.keylog_file:{k} {pcaps[0].name}",
                      "    " + " ".join(tshark),
                      "    (or -Y http2 for TCP; the -d options read the servers' ports as QUIC and TLS, so",
                      "    tshark does not read a flow as whatever it knows the client's port by, e.g.",
                      "    EtherCAT on 34980; in Wireshark: Decode As)"]
        lines += [""]
    if qlogs:
        lines += [f"qlog files ({len(qlogs)}):"] + [f"  {p.relative_to(run_dir)}" for p in qlogs[:20]]
        if len(qlogs) > 20:
            lines += [f"  ... and {len(qlogs) - 20} more"]
        lines += ["  Open them in qvis (https://qvis.quictools.info, 'Load a file'), or read them as JSON.", ""]
    if sockets.is_file():
        lines += [f"Kernel sockets ({SOCKETS_FILE}): every TCP and MPTCP socket of both namespaces as ss saw it",
                  "  every 100 ms, one JSON object per socket and sample (t_ms on dcemu's clock, side, local,",
                  "  remote, cwnd, rtt_ms, retrans, rwnd_limited_ms, sndbuf_limited_ms, recv_q, rcvbuf, ...).",
                  "  Read them with dclab.analysis.socket_series.read_samples, or pandas.read_json(lines=True).", ""]
    return "\n".join(lines)


def write_guide(run_dir: Path, ports: Sequence[int] = ()) -> Path | None:
    """Writes ``GUIDE`` into ``run_dir`` when inspection left anything; returns its path."""
    text = guide(run_dir, ports)
    if text is None:
        return None
    path = Path(run_dir) / GUIDE
    path.write_text(text + "\n")
    return path
