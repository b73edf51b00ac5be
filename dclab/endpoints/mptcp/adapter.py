"""Multipath TCP (RFC 8684) with the kernel's own implementation: the tcp stack's server
(Hypercorn, HTTP/2 over TLS 1.3) and client (curl 7.88), unmodified, on MPTCP sockets.

Neither asks for MPTCP itself (curl has ``--mptcp`` only from 8.9), so both run under
``mptcpize run`` (Debian's ``mptcpize``), which preloads a library turning every
``socket(AF_INET, SOCK_STREAM, IPPROTO_TCP)`` into ``IPPROTO_MPTCP``.

Paths. A flow on a ``paths`` bearer has an address per leg (``ClientSpec.paths``); curl
binds its connection to the first (``--interface``), so the initial subflow crosses leg 1,
and the client namespace's in-kernel path manager gets every other address as a
``subflow`` endpoint (``ip mptcp endpoint add ADDR subflow``): once the connection is
up, the kernel opens one subflow from each, each pinned by dcemu to its own leg. The
limits (``ip mptcp limits set subflows 8 add_addr_accepted 8``, the kernel's maxima)
are set in both namespaces (the server's through ``server_setup``), so the kernel's
default of 2 subflows never caps a flow. The server announces no address of its own.
Without paths (a DC or SC bearer) the connection is MPTCP with one subflow.

What the kernel does, recorded in ``extra["mptcp"]``: its packet scheduler
(``net.mptcp.scheduler``; this kernel offers only ``default``: the subflow with the
lowest estimated delivery time among those with room in their window, retransmitting on
another subflow after a stall) and the path manager (``net.mptcp.path_manager``). The
congestion control is per subflow and uncoupled: each subflow runs the namespace's TCP
controller (``--cc``, the server's, as for tcp) on its own; Linux has no coupled
controller (LIA, OLIA, BALIA), so a multipath flow may take more than one TCP's share
of a shared bottleneck. Counters, from the client namespace:

- ``subflows``: each subflow seen by ``ss -tni`` while the transfer ran (sampled every
  ``SAMPLE_S``; the last sample of each): local and remote address, the leg (index in
  ``paths``), ``bytes_received``, ``data_segs_in``, out-of-order segments received
  (``rcv_ooopack``, reordering *within* the subflow) and the receiver's RTT estimate.
  The sample closest to a subflow's end misses at most ``SAMPLE_S`` of its bytes;
  dcemu's per-path records are the exact split.
- ``counters``: the namespace's ``MPTcpExt`` counters (/proc/net/netstat) grown during
  the workload: joins (``MPJoinSynAckRx``), segments queued out of order at the data
  level (``OFOQueue``: reordering *across* subflows, what PDCP's reordering hides for
  DC), duplicate data (``DuplicateData``), fallbacks to TCP.

Refused, before anything starts, where the kernel lacks MPTCP (``net.mptcp.enabled``
absent or 0) or ``mptcpize`` is missing (``missing``, checked by ``dclab doctor``).
Resumption and 0-RTT are not offered (TCP Fast Open over MPTCP is not what the tcp stack
measures).
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from ...files import JsonObject
from ..base import MAX_CONNECTIONS, MAX_OBJECTS, Capabilities, ClientSpec, ServerSpec, TransferResult, run_bounded
from ..tcp.adapter import TcpStack, hypercorn_command, netstat_counters
from ..tcp.sockets import address, parse_ss

MAX_SUBFLOWS = 8  # the kernel's ceiling for both limits (MPTCP_PM_ADDR_MAX)
LIMITS = ["ip", "mptcp", "limits", "set", "subflows", str(MAX_SUBFLOWS), "add_addr_accepted", str(MAX_SUBFLOWS)]
SAMPLE_S = 0.1
MPTCP_SYSCTLS = Path("/proc/sys/net/mptcp")


def schedulers() -> list[str]:
    """The packet schedulers this kernel offers (``net.mptcp.available_schedulers``;
    empty without MPTCP)."""
    try:
        return (MPTCP_SYSCTLS / "available_schedulers").read_text().split()
    except OSError:
        return []


def parse_subflows(text: str) -> dict[str, JsonObject]:
    """``ss -tniH``'s MPTCP subflows (``tcp-ulp-mptcp``), by local endpoint: addresses and
    the receiving counters (0 when absent: ss omits zeros)."""
    return {s.local: {"local": address(s.local), "remote": address(s.remote),
                           "bytes_received": s.bytes_received or 0, "data_segs_in": s.data_segs_in or 0,
                           "rcv_ooopack": s.rcv_ooopack or 0, "segs_in": s.segs_in or 0, "rcv_rtt_ms": s.rcv_rtt}
            for s in parse_ss(text) if s.subflow}


class _Sampler(threading.Thread):
    """Samples the client namespace's subflows to the server's port until stopped."""

    def __init__(self, netns_exec: list[str], spec: ClientSpec) -> None:
        super().__init__(daemon=True, name="mptcp-subflows")
        self.cmd = [*netns_exec, "ss", "-tniH", "dst", spec.address, "dport", "=", f":{spec.port}"]
        self.seen: dict[str, JsonObject] = {}
        self.samples = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            p = subprocess.run(self.cmd, capture_output=True, text=True, timeout=5, check=False)
            if p.returncode == 0:
                self.seen.update(parse_subflows(p.stdout))
                self.samples += 1
            self.done.wait(SAMPLE_S)

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=6)


def _read(netns_exec: list[str], name: str) -> str | None:
    p = run_bounded([*netns_exec, "cat", str(MPTCP_SYSCTLS / name)], 5.0)
    return p.stdout.strip() if p.returncode == 0 else None


class MptcpStack(TcpStack):
    name = "mptcp"
    capabilities = Capabilities(
        max_connections=MAX_CONNECTIONS,
        max_objects=MAX_OBJECTS,
        streams=("parallel", "sequential"),
        multipath=True,
        ecn="sysctl",
    )

    def missing(self) -> list[str]:
        out = super().missing()
        enabled = MPTCP_SYSCTLS / "enabled"
        if not enabled.is_file():
            out.append("the kernel has no MPTCP (no net.mptcp.enabled): needs CONFIG_MPTCP (Linux 5.6 or newer)")
        elif enabled.read_text().strip() != "1":
            out.append("MPTCP is off: sysctl -w net.mptcp.enabled=1")
        if shutil.which("mptcpize") is None:
            out.append("mptcpize not found: apt-get install mptcpize")
        return out

    def server_sysctls(self, cc: str) -> dict[str, str]:
        return {"net.ipv4.tcp_congestion_control": self.resolve_cc(cc), "net.mptcp.enabled": "1"}

    def server_setup(self) -> list[list[str]]:
        return [LIMITS]

    def server_command(self, spec: ServerSpec) -> list[str]:
        self.resolve_cc(spec.cc)
        return ["mptcpize", "run", *hypercorn_command(spec)]

    def client_command(self, spec: ClientSpec, config: Path, n_objects: int) -> list[str]:
        curl, *rest = super().client_command(spec, config, n_objects)
        bind = ["--interface", spec.paths[0]] if spec.paths else []
        return ["mptcpize", "run", curl, *bind, *rest]

    def _run(self, spec: ClientSpec, netns_exec: list[str], tmp: Path) -> TransferResult:
        error = self._set_up_paths(spec, netns_exec)
        if error:
            return TransferResult.failed(f"mptcp: {error}")
        before = netstat_counters(netns_exec, "MPTcpExt")
        sampler = _Sampler(netns_exec, spec)
        sampler.start()
        try:
            result = super()._run(spec, netns_exec, tmp)
        finally:
            sampler.stop()
        after = netstat_counters(netns_exec, "MPTcpExt")
        grown = ({k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
                 if before is not None and after is not None else None)  # fmt: skip
        legs = {a: i for i, a in enumerate(spec.paths)}
        subflows = [{**s, "leg": legs.get(s["local"])} for s in sampler.seen.values()]
        result.extra["mptcp"] = {
            "paths": list(spec.paths), "subflows": subflows, "samples": sampler.samples, "counters": grown,
            "scheduler": _read(netns_exec, "scheduler"),
            "available_schedulers": (_read(netns_exec, "available_schedulers") or "").split(),
            "path_manager": _read(netns_exec, "path_manager"),
        }  # fmt: skip
        return result

    @staticmethod
    def _set_up_paths(spec: ClientSpec, netns_exec: list[str]) -> str | None:
        """The client namespace's limits and a subflow endpoint per further path; what
        failed, or None. Idempotent: several clients of one flow may set it up at once."""
        p = run_bounded([*netns_exec, *LIMITS], 10.0)
        if p.returncode != 0:
            return f"{' '.join(LIMITS)} failed: {p.stderr.strip()}"
        for addr in spec.paths[1:]:
            run_bounded([*netns_exec, "ip", "mptcp", "endpoint", "add", addr, "subflow"], 10.0)
        shown = run_bounded([*netns_exec, "ip", "mptcp", "endpoint", "show"], 10.0).stdout
        have = {line.split()[0] for line in shown.splitlines() if " subflow" in line}
        absent = [a for a in spec.paths[1:] if a not in have]
        if absent:
            return f"no subflow endpoint for {', '.join(absent)} after ip mptcp endpoint add (endpoints: {shown.strip()})"
        return None

    def version(self) -> str:
        p = run_bounded(["mptcpize", "--version"], 5.0)
        return f"{super().version()}, {p.stdout.strip() or 'mptcpize unknown'}"
