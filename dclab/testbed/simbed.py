"""A simulated testbed: the same interface experiments use on a real ``Testbed``
(``start_servers``, ``run_clients``, ``finish``, ``start_wall``, ``state``), backed by
``dcemu sim`` — the same scenario file and engine, in virtual time, with modelled endpoints
instead of real stacks. No root, no namespaces, no host settings; the run directory gets
the same records (``dcemu-stats.jsonl.gz``, compressed) and the workload dcemu simulated.

A flow runs on its stack's model, or on the stand-in its options name (``sim_models.py``).
The host configuration gives the client's receive buffer: ``rmem_default`` for QUIC (its
sockets keep the default), ``tcp_rmem``'s maximum for TCP.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomli_w

from ..analysis.records import StatsRecords
from ..endpoints.base import TransferResult, Workload
from ..flowplan import Flow, FlowPlan
from ..paths import CLIENT_ADDR, DCEMU, SERVER_ADDR
from ..scenario import Scenario
from .dcemu_config import to_dcemu
from .hostconfig import HostConfig
from .netns import die_with_parent
from .sim_models import SimError, model_for

# The models' version: part of a simulated run's key, so that runs stored before the models
# changed run again instead of standing for the new models. Raise it with any change to
# emu/src/model/ or emu/src/sim/ that changes results, or to a calibrated host cost
# (sim_models.py).
SIM_MODEL = 7
# What Linux charges a UDP socket's buffer per datagram of 700 to 1472 bytes that dcemu
# writes into the client's TUN device: 92 of aioquic's 1252-byte datagrams fill the default
# 212992 bytes (measured by tests/test_sim.py, test_the_host_model_charges_what_the_kernel_charges).
UDP_TRUESIZE = 2304
QUIC_DATAGRAM = 1252  # dclab's aioquic endpoints' max_datagram_size (endpoints/aioquic/h3_server.py)
TCP_TIMESTAMPS = 12  # the timestamp option in every segment: payload = the clamped MSS - 12


def rmem_for(host: HostConfig, transport: str) -> int:
    if transport == "tcp":
        return int(host.netns_sysctls.get("net.ipv4.tcp_rmem", "4096 131072 6291456").split()[-1])
    return int(host.global_sysctls.get("net.core.rmem_default", "212992"))


def workload_toml(plan: FlowPlan, flows: Sequence[Flow], host: HostConfig, workloads: dict[str, Workload],
                  duration_s: float, stand_in: Mapping[str, str] | None = None) -> str:
    """The workload file of ``dcemu sim`` for these flows (see emu/src/sim/workload.rs), each
    on its stack's model or the stand-in named for it (SimError when neither)."""
    out = []
    for f in flows:
        assert f.port is not None and f.cc is not None
        if plan.bearer(f.bearer).mode == "paths":
            raise SimError(f"flow {f.name}: the simulation has no model of a multipath transport (MPTCP, "
                           f"multipath QUIC) on bearer {f.bearer}: run it with --backend emu")
        r, m = model_for(f.stack, f.cc, stand_in or {})
        w = workloads.get(f.name) or f.workload
        if w.connections != 1 or len(w.objects) != 1:
            raise SimError(f"flow {f.name}: the simulation models one object on one connection "
                           f"(got {len(w.objects)} objects on {w.connections} connections)")
        out.append({
            "name": f.name, "transport": m.transport, "cc": f.cc, "server_port": f.port, "size": int(w.objects[0]),
            "datagram": plan.quic_datagram or QUIC_DATAGRAM, "quic": m.quic, "mss": plan.tcp_mss - TCP_TIMESTAMPS,
            "rmem": rmem_for(host, m.transport), "truesize": UDP_TRUESIZE, "app_packet_us": r.client_packet_us,
            "send_packet_us": r.server_packet_us,
        })
    return tomli_w.dumps({"duration_s": duration_s, "flow": out})


class SimBed:
    """Use like ``Testbed``: ``with SimBed(scenario, plan, host, dir) as tb: ...``; ``stand_in``
    names the model of each stack (or stack:cc) without one of its own (``sim_models.py``)."""

    __test__ = False

    def __init__(self, scenario: Scenario, plan: FlowPlan, host: HostConfig, workdir: Path,
                 stand_in: Mapping[str, str] | None = None):
        self.scenario, self.plan, self.host = scenario, plan, host
        self.stand_in = dict(stand_in or {})
        self.workdir = Path(workdir)
        self.state: dict[str, Any] = {}
        self.settings: dict[str, str] = {"backend": "sim"}
        self.recovered: list[str] = []
        self.stats = self.workdir / "dcemu-stats.jsonl.gz"  # a tenth of the size: campaigns keep thousands
        self._start_wall: float | None = None
        self.client_udp_drops: int | None = None  # as Testbed's: the modelled hosts' drops (QUIC flows)

    def __enter__(self) -> SimBed:
        self.workdir.mkdir(parents=True, exist_ok=True)
        topology = {"server_netns": "sim-server", "client_netns": "sim-client", "server_tun": "sim-s",
                    "client_tun": "sim-c", "server_addr": SERVER_ADDR, "client_addr": CLIENT_ADDR}
        (self.workdir / "scenario.toml").write_text(to_dcemu(self.scenario, self.plan, topology))
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pass

    def models(self) -> dict[str, str]:
        """Per stack of the plan, the model its flows run on ("ngtcp2": "aioquic (stand-in)"),
        for the run's environment record."""
        out = {}
        for f in self.plan.flows:
            assert f.cc is not None
            r, m = model_for(f.stack, f.cc, self.stand_in)
            out[f.stack] = m.name + (" (stand-in)" if r.model is None else "")
        return out

    @property
    def tag(self) -> str:
        return "sim-" + self.workdir.name

    def start_servers(self, qlog: bool = False) -> None:
        """The modelled servers need nothing started."""

    def dead_part(self) -> str | None:
        return None

    @property
    def start_wall(self) -> float | None:
        """The wall time that stands for virtual time 0: when the clients were started, so
        an experiment's own clock reads the clients' start as the stats' origin."""
        return self._start_wall

    def run_clients(self, timeout_s: float, qlog: bool = False, flows: list[str] | None = None,
                    workloads: dict[str, Workload] | None = None, persistent: bool = False) -> dict[str, TransferResult]:
        """Simulates every flow (or those named) from virtual time 0 for at most
        ``timeout_s``; their results by flow, as real clients would report them
        (``persistent`` means nothing here: no client process is started)."""
        chosen = [f for f in self.plan.flows if flows is None or f.name in flows]
        (self.workdir / "workload.toml").write_text(workload_toml(self.plan, chosen, self.host, workloads or {}, timeout_s,
                                                                  self.stand_in))
        self._start_wall = time.time()
        # It ends with this process, even a killed one, as an emulated run's processes do.
        p = subprocess.run(die_with_parent([str(DCEMU), "sim", str(self.workdir / "scenario.toml"), "--workload",
                                            str(self.workdir / "workload.toml"), "--stats", str(self.stats)]),
                           capture_output=True, text=True)
        (self.workdir / "dcemu.log").write_text(p.stderr)
        if p.returncode != 0:
            raise SimError(f"dcemu sim failed: {p.stderr.strip()[-400:]}")
        summary = json.loads(p.stdout.strip().splitlines()[-1])
        self.client_udp_drops = sum(r["host_drops"] for r in summary["flows"] if r["transport"] == "quic")
        results = {r["name"]: self._transfer(r) for r in summary["flows"]}
        return {f.name: results[f.name] for f in chosen}

    def _transfer(self, r: dict[str, Any]) -> TransferResult:
        start = r["start_ms"] / 1e3
        done = r["done_ms"] / 1e3 if r["done_ms"] is not None else None
        assert self._start_wall is not None
        return TransferResult(
            ok=done is not None, bytes=int(r["bytes"]), request_s=start, last_byte_s=done,
            error=None if done is not None else f"cut at the end of the simulated window ({r['bytes']} of {r['size']} bytes)",
            request_wall=self._start_wall + start,
            extra={"sim": {k: r[k] for k in ("packets_sent", "packets_lost", "host_drops", "host_max_used")}},
        )

    def finish(self) -> StatsRecords:
        """dcemu's records of the simulation (the engine's intervals and summary; not its
        own last line), parsed as they are looked at."""
        return StatsRecords.of_file(self.stats, drop_last_of_type="sim")
