"""What the kernel says of its TCP and MPTCP sockets: ``ss -tinmMH`` (iproute2's socket
statistics: TCP and MPTCP sockets, their internal TCP state, socket memory, no header) as
typed samples, one per socket.

A TCP socket whose info carries ``tcp-ulp-mptcp`` is an MPTCP subflow; an ``mptcp`` line is
an MPTCP connection (the socket the application reads and writes: its receive queue is the
connection-level receive buffer, shared by every subflow). On the sender the TCP fields say
how each subflow's congestion control ran (``cwnd``, ``rtt``, ``retrans``, and how long it
was limited by the peer's window, ``rwnd_limited``, or by its own send buffer,
``sndbuf_limited``); on the receiver what arrived (``bytes_received``, out-of-order
segments ``rcv_ooopack``, its receive space). ss omits a counter that is zero, and a field
the kernel does not have; both read as None here unless ss's own rule says zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# The head line: netid (shown only when ss lists more than one kind), state, Recv-Q,
# Send-Q, local, peer.
_HEAD = re.compile(r"^(?:(tcp|mptcp)\s+)?([A-Z][A-Z0-9-]*)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)")
_INT_FIELDS = ("cwnd", "ssthresh", "bytes_sent", "bytes_retrans", "bytes_acked", "bytes_received", "segs_out",
               "segs_in", "data_segs_out", "data_segs_in", "unacked", "rcv_space", "rcv_ssthresh", "notsent",
               "snd_wnd", "rcv_ooopack", "delivered", "mss")
_MS_FIELDS = ("rto", "rcv_rtt", "minrtt")
_LIMITED = re.compile(r"\b(busy|rwnd_limited|sndbuf_limited):(\d+)ms")
_SKMEM = re.compile(r"skmem:\(([^)]*)\)")
_RTT = re.compile(r"\brtt:([\d.]+)/([\d.]+)")
_RETRANS = re.compile(r"\bretrans:(\d+)/(\d+)")
_RATE = re.compile(r"\b(pacing_rate|delivery_rate) ([\d.]+)([kMG]?)bps")
_HEX = re.compile(r"\b(write_seq|snd_una|rcv_nxt):([0-9a-f]+)")
_SUBFLOWS = re.compile(r"\bsubflows:(\d+)")
_SCALE = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}

Side = Literal["client", "server"]


@dataclass(frozen=True)
class SocketSample:
    """One socket at one moment (``t_ms``: the sampler's clock, dcemu's when it runs)."""

    t_ms: float
    side: Side
    kind: Literal["tcp", "mptcp"]  # a TCP socket (a subflow when ``subflow``) or an MPTCP connection
    state: str
    local: str  # address:port
    remote: str
    subflow: bool
    recv_q: int  # bytes received, not yet read by the application
    send_q: int  # bytes the application wrote, not yet acknowledged
    rmem: int | None = None  # skmem r: receive queue memory
    rcvbuf: int | None = None  # skmem rb: its limit
    wmem: int | None = None  # skmem t: send queue memory (sent, not acknowledged)
    sndbuf: int | None = None  # skmem tb: its limit
    cwnd: int | None = None
    ssthresh: int | None = None
    mss: int | None = None
    rtt_ms: float | None = None  # the sender's smoothed RTT
    rttvar_ms: float | None = None
    minrtt: float | None = None
    rto: float | None = None
    rcv_rtt: float | None = None  # the receiver's RTT estimate (ms)
    bytes_sent: int | None = None
    bytes_retrans: int | None = None
    bytes_acked: int | None = None
    bytes_received: int | None = None
    segs_out: int | None = None
    segs_in: int | None = None
    data_segs_out: int | None = None
    data_segs_in: int | None = None
    retrans: int | None = None  # segments retransmitted in all (ss's retrans:now/total)
    unacked: int | None = None
    delivered: int | None = None
    rcv_space: int | None = None
    rcv_ssthresh: int | None = None
    notsent: int | None = None
    snd_wnd: int | None = None  # the peer's advertised window
    rcv_ooopack: int | None = None  # segments received out of order
    busy_ms: int | None = None
    rwnd_limited_ms: int | None = None  # sending limited by the peer's receive window
    sndbuf_limited_ms: int | None = None  # sending limited by this socket's send buffer
    pacing_rate_bps: float | None = None
    delivery_rate_bps: float | None = None
    subflows: int | None = None  # an MPTCP connection's subflows beside the first
    write_seq: int | None = None  # an MPTCP connection's data sequence numbers (64 bits)
    snd_una: int | None = None
    rcv_nxt: int | None = None


def parse_ss(text: str, t_ms: float = 0.0, side: Side = "client") -> list[SocketSample]:
    """``ss -tinmMH``'s sockets (or ``ss -tniH``'s, without the netid: TCP): a head line,
    then an indented info line for each."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head = _HEAD.match(line)
        if not head:
            continue
        info = lines[i + 1] if i + 1 < len(lines) and lines[i + 1][:1].isspace() else ""
        out.append(_sample(head, info, t_ms, side))
    return out


def _sample(head: re.Match[str], info: str, t_ms: float, side: Side) -> SocketSample:
    netid, state, recv_q, send_q, local, remote = head.groups()
    kind: Literal["tcp", "mptcp"] = "mptcp" if netid == "mptcp" else "tcp"
    f: dict[str, int | float | None] = {}
    for name in _INT_FIELDS:
        m = re.search(rf"\b{name}:(\d+)", info)
        f[name] = int(m.group(1)) if m else None
    for name in _MS_FIELDS:
        m = re.search(rf"\b{name}:([\d.]+)", info)
        f[name] = float(m.group(1)) if m else None
    for name, ms in _LIMITED.findall(info):
        f[f"{name}_ms"] = int(ms)
    if kind == "tcp" and "bytes_acked:" in info:  # ss shows these once the socket carried data, and omits zeros
        f.setdefault("rwnd_limited_ms", 0)
        f.setdefault("sndbuf_limited_ms", 0)
        f["bytes_retrans"] = f["bytes_retrans"] or 0
        f["rcv_ooopack"] = f["rcv_ooopack"] or 0
    if (m := _RTT.search(info)) is not None:
        f["rtt_ms"], f["rttvar_ms"] = float(m.group(1)), float(m.group(2))
    if (m := _RETRANS.search(info)) is not None:
        f["retrans"] = int(m.group(2))
    elif kind == "tcp" and "bytes_acked:" in info:
        f["retrans"] = 0
    for name, value, unit in _RATE.findall(info):
        f[f"{name}_bps"] = float(value) * _SCALE[unit]
    for name, value in _HEX.findall(info):
        f[name] = int(value, 16)
    if (m := _SUBFLOWS.search(info)) is not None:
        f["subflows"] = int(m.group(1))
    if (m := _SKMEM.search(info)) is not None:
        mem = dict(re.findall(r"([a-z]+)(\d+)", m.group(1)))
        f.update(rmem=_int(mem.get("r")), rcvbuf=_int(mem.get("rb")), wmem=_int(mem.get("t")),
                 sndbuf=_int(mem.get("tb")))
    return SocketSample(t_ms=t_ms, side=side, kind=kind, state=state,
                        local=_endpoint(local), remote=_endpoint(remote), subflow="tcp-ulp-mptcp" in info,
                        recv_q=int(recv_q), send_q=int(send_q), **f)  # type: ignore[arg-type]


def _int(v: str | None) -> int | None:
    return int(v) if v is not None else None


def _endpoint(text: str) -> str:
    """'198.18.0.3%dcemu-x:54278' -> '198.18.0.3:54278' (ss names the device a socket is bound to)."""
    if "%" not in text:
        return text
    addr, rest = text.split("%", 1)
    return f"{addr}:{rest.rsplit(':', 1)[1]}"


def address(endpoint: str) -> str:
    """'198.18.0.3:54278' -> '198.18.0.3'."""
    return endpoint.rsplit(":", 1)[0]
