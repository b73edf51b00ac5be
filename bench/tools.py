"""Measuring tools of the bench, run inside its own namespaces on 198.18.0.0/15, each
bounded in time: iperf3 (TCP, UDP), ping and an ICMP echo with microsecond resolution,
the rate error of one leg, per-namespace sysctls, scenarios and dcemu's summaries."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from dclab.dcemu.process import Emulator, topology_toml
from dclab.dcemu.records import Runtime, Stats
from dclab.paths import SERVER_ADDR as SERVER
from dclab.testbed.netns import Namespaces, sh

TCP_SECONDS = 8
UDP_SECONDS = 4
PING_COUNT = 300  # at 10 ms intervals
# Socket buffers large enough for TCP at Gbit/s over 10-20 ms (delay and dc5g sections).
# net.ipv4.tcp_rmem/tcp_wmem are per network namespace: set in the bench's own namespaces
# only. net.core.rmem_max/wmem_max are global on this kernel (6.18 shows them in a child
# namespace read-only; a write there fails), so they are not changed: they only cap
# SO_RCVBUF/SO_SNDBUF requests, and iperf3 (no -w) leaves TCP autotuning, which tcp_rmem
# and tcp_wmem bound.
LARGE_TCP_BUFFERS = {"net.ipv4.tcp_rmem": "4096 131072 67108864", "net.ipv4.tcp_wmem": "4096 131072 67108864"}


@contextmanager
def iperf_server(ns: Namespaces) -> Iterator[None]:
    p = subprocess.Popen(ns.exec(ns.server, "iperf3", "-s", "-B", SERVER), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        yield
    finally:
        p.kill()
        p.wait()


def iperf(ns: Namespaces, *args: str, seconds: int) -> dict:
    out = subprocess.run(
        ns.exec(ns.client, "iperf3", "-c", SERVER, "-J", "-t", str(seconds), *args),
        capture_output=True, text=True, timeout=seconds + 30,
    )
    data = json.loads(out.stdout or "{}")
    if "error" in data or "end" not in data:
        raise RuntimeError(f"iperf3 {' '.join(args)}: {data.get('error', out.stderr.strip() or 'no result')}")
    return data


def tcp_gbps(ns: Namespaces) -> float:
    d = iperf(ns, "-R", seconds=TCP_SECONDS)
    return d["end"]["sum_received"]["bits_per_second"] / 1e9


def udp_rate(ns: Namespaces, bitrate: str, length: int, *extra: str) -> dict:
    """UDP from server to client; receiver-side per-interval packets and bytes."""
    return iperf(ns, "-R", "-u", "-b", bitrate, "-l", str(length), "-i", "0.5", *extra, seconds=UDP_SECONDS)


def udp_kpps(ns: Namespaces) -> float:
    return udp_flood(ns)["kpps"]


def udp_flood(ns: Namespaces) -> dict[str, float]:
    """A UDP sender at unlimited rate (64-byte payload): the packets/s the receiver got, the
    flood's seconds, and how many datagrams the client's kernel dropped for a full socket
    buffer meanwhile (the receiving process not keeping up)."""
    before = udp_rcvbuf_errors(ns)
    s = udp_rate(ns, "0", 64)["end"]["sum"]
    return {"kpps": (s["packets"] - s["lost_packets"]) / s["seconds"] / 1e3, "seconds": s["seconds"],
            "rcvbuf_errors": udp_rcvbuf_errors(ns) - before}


def rtts_ms(ns: Namespaces, count: int = PING_COUNT) -> list[float]:
    out = subprocess.run(
        ns.exec(ns.client, "ping", "-c", str(count), "-i", "0.01", "-s", "56", SERVER),
        capture_output=True, text=True, timeout=60,
    ).stdout
    rtts = [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]
    if len(rtts) < count // 2:
        raise RuntimeError(f"ping: {len(rtts)} of {count} replies")
    return rtts


# ICMP echo as ping does it (56-byte payload, one every 10 ms, the send time taken just
# before sendto, the reply's time the kernel's receive timestamp), but printing every RTT
# in nanoseconds: ping prints 0.1 ms steps from 10 ms up, too coarse for a 0.2 ms target.
PINGER = r"""
import json, os, select, socket, struct, sys, time
dst, count, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
ident, payload = os.getpid() & 0xFFFF, bytes(56)
def csum(b):
    t = sum(struct.unpack(f"!{len(b) // 2}H", b))
    t = (t >> 16) + (t & 0xFFFF)
    return ~(t + (t >> 16)) & 0xFFFF
sent, rtts, seq, t_next, end = {}, {}, 0, time.monotonic(), None
while True:
    now = time.monotonic()
    if seq < count and now >= t_next:
        c = csum(struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload)
        pkt = struct.pack("!BBHHH", 8, 0, c, ident, seq) + payload
        sent[seq] = time.time_ns()
        s.sendto(pkt, (dst, 0))
        seq, t_next = seq + 1, t_next + interval
        if seq == count:
            end = now + 2.0
    if end is not None and (len(rtts) == count or now > end):
        break
    wait = (t_next if seq < count else end) - time.monotonic()
    if select.select([s], [], [], max(0.0, wait))[0]:
        data, anc, _, _ = s.recvmsg(2048, 256)
        ts = [struct.unpack("qq", d[:16]) for lvl, typ, d in anc if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS]
        ihl = (data[0] & 0x0F) * 4
        typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if typ == 0 and rid == ident and rseq in sent and rseq not in rtts and ts:
            rtts[rseq] = (ts[0][0] * 10**9 + ts[0][1] - sent[rseq]) / 1e6
print(json.dumps([rtts[k] for k in sorted(rtts)]))
"""


def icmp_rtts_ms(ns: Namespaces, count: int = PING_COUNT) -> list[float]:
    """RTTs in ms of ICMP echoes every 10 ms, with microsecond resolution (PINGER)."""
    out = subprocess.run(ns.exec(ns.client, sys.executable, "-c", PINGER, SERVER, str(count), "0.01"),
                         capture_output=True, text=True, timeout=count * 0.01 + 30)
    if out.returncode != 0:
        raise RuntimeError(f"ICMP echo: {out.stderr.strip()[-500:]}")
    rtts = json.loads(out.stdout)
    if len(rtts) < count // 2:
        raise RuntimeError(f"ICMP echo: {len(rtts)} of {count} replies")
    return rtts


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def udp_rcvbuf_errors(ns: Namespaces) -> int:
    """Datagrams the client's kernel dropped for a full socket buffer (Udp RcvbufErrors)."""
    lines = [ln.split() for ln in sh(*ns.exec(ns.client, "cat", "/proc/net/snmp")).stdout.splitlines() if ln.startswith("Udp:")]
    return int(lines[1][lines[0].index("RcvbufErrors")])


def rate_error(ns: Namespaces, configured_bps: float, length: int) -> dict:
    """Offers 20% more than the leg's rate; the client's iperf3 counts what arrives per
    half second. Bytes on the leg = payload + 28 (IP/UDP) + 2 (PDCP) per datagram."""
    before = udp_rcvbuf_errors(ns)
    # A 4 MB socket buffer, so a receiver the VM delays briefly does not drop.
    d = udp_rate(ns, str(int(configured_bps * 1.2)), length, "-w", "4M")
    socket_drops = udp_rcvbuf_errors(ns) - before
    intervals = d["intervals"][2:-1]  # skip start-up and the last partial interval
    bits = sum(i["sum"]["bytes"] * 8 + i["sum"]["packets"] * 30 * 8 for i in intervals)
    secs = sum(i["sum"]["seconds"] for i in intervals)
    measured = bits / secs
    return {"configured_mbps": configured_bps / 1e6, "measured_mbps": measured / 1e6,
            "error_pct": (measured - configured_bps) / configured_bps * 100, "receiver_socket_drops": socket_drops}


def large_tcp_buffers(ns: Namespaces) -> None:
    """LARGE_TCP_BUFFERS in both of the bench's namespaces (per-namespace sysctls)."""
    for n in (ns.server, ns.client):
        set_sysctls(ns, n, LARGE_TCP_BUFFERS)


def set_sysctls(ns: Namespaces, n: str, values: dict[str, str]) -> None:
    """Sets per-namespace sysctls in one of the bench's namespaces, read back: sysctl -w
    exits 0 on some refusals."""
    for name, value in values.items():
        sh(*ns.exec(n, "sysctl", "-q", "-w", f"{name}={value}"))
        got = " ".join(sh(*ns.exec(n, "sysctl", "-n", name)).stdout.split())
        if got != value:
            raise RuntimeError(f"{name} in {n} is {got!r} after setting {value!r}")


def scenario(ns: Namespaces, legs: list[tuple[str, str]], delay_ms: float = 0.0, ratio: str = "[1, 1]",
             batch: int = 100, queue: str = "queue_packets = 10000") -> str:
    text = topology_toml(ns.server, ns.client, ns.tag)
    text += f"[split]\nbatch = {batch}\nratio = {ratio}\n"
    for i, (name, rate) in enumerate(legs):
        text += (f'[[legs]]\nname = "{name}"\n[legs.downlink]\nrate = "{rate}"\n{queue}\n'
                 f'delay = {{ distribution = "constant", ms = {delay_ms} }}\n')
        if i == 0:
            text += (f'[legs.uplink]\nrate = "unlimited"\nqueue_packets = 10000\n'
                     f'delay = {{ distribution = "constant", ms = {delay_ms} }}\n')
    return text


def note_config(results: dict, name: str, scenario_text: str, extra_args: tuple[str, ...] = ()) -> None:
    """The dcemu options and scenario a section used (its namespace names aside)."""
    results["dcemu"]["configs"].setdefault(name, {"extra_args": list(extra_args), "scenario": scenario_text})


def summary_of(emu: Emulator) -> Stats:
    s = emu.summary()
    if s is None:
        raise RuntimeError(f"dcemu wrote no summary: {emu.log.read_text().strip()[-500:]}")
    return s


def runtime_of(s: Stats) -> Runtime:
    """The real-time runtime's figures of a summary (a real run always has them)."""
    if s.runtime is None:
        raise RuntimeError("dcemu's summary has no runtime figures")
    return s.runtime


def dcemu_losses(s: Stats) -> dict[str, int]:
    """dcemu's own losses in a summary: packets the kernel dropped on the TUN queue before
    dcemu read them, failed TUN writes, and arrivals dropped for want of a packet buffer."""
    rt = runtime_of(s)
    return {"tun_kernel_drops": rt.tun_kernel_drops, "tun_write_errors": rt.tun_write_errors,
            "dropped_no_buffer": s.engine.dropped_no_buffer}


def forwarded_bytes(s: Stats) -> int:
    return sum(leg.downlink.bytes_out + (leg.uplink.bytes_out if leg.uplink else 0) for leg in s.legs)
