"""A simulated testbed: the same interface experiments use on a real ``Testbed``
(``start_servers``, ``run_clients``, ``finish``, ``start_wall``, ``state``), backed by
``dcemu sim`` — the same scenario file and engine, in virtual time, with modelled endpoints
instead of real stacks. No root, no namespaces, no host settings; the run directory gets
the same records (``dcemu-stats.jsonl.gz``, compressed) and the workload dcemu simulated.

A flow runs on its stack's model, or on the stand-in its options name (``dcemu/sim_models.py``);
``dcemu/sim.py`` writes the workload file and runs ``dcemu sim``. The host configuration gives
the client's receive buffer (``rmem_for``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..dcemu.config import to_dcemu
from ..dcemu.records import StatsRecords
from ..dcemu.sim import SimFlow, simulate, workload_toml
from ..dcemu.sim_models import model_for
from ..endpoints.base import TransferResult, Workload
from ..flowplan import FlowPlan
from ..paths import CLIENT_ADDR, SERVER_ADDR
from ..scenario import Scenario
from .hostconfig import TCP_ECN, HostConfig
from .ping import Probe


def rmem_for(host: HostConfig) -> dict[str, int]:
    """The client's receive buffer per transport: ``rmem_default`` for QUIC (its sockets keep
    the default), ``tcp_rmem``'s maximum for TCP."""
    return {"tcp": int(host.netns_sysctls.get("net.ipv4.tcp_rmem", "4096 131072 6291456").split()[-1]),
            "quic": int(host.global_sysctls.get("net.core.rmem_default", "212992"))}


class SimBed:
    """Use like ``Testbed``: ``with SimBed(scenario, plan, host, dir) as tb: ...``; ``stand_in``
    names the model of each stack (or stack:cc) without one of its own (``dcemu/sim_models.py``)."""

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
        workload = self.workdir / "workload.toml"
        workload.write_text(workload_toml(self.plan, chosen, rmem_for(self.host), workloads or {}, timeout_s,
                                          self.stand_in, ecn=self.host.netns_sysctls.get(TCP_ECN) == "1"))
        self._start_wall = time.time()
        summary = simulate(self.workdir / "scenario.toml", workload, self.stats, self.workdir / "dcemu.log")
        self.client_udp_drops = sum(r.host_drops for r in summary.flows if r.transport == "quic")
        results = {r.name: self._transfer(r) for r in summary.flows}
        return {f.name: results[f.name] for f in chosen}

    def ping(self, interval_s: float) -> Probe:
        raise NotImplementedError("the simulation has no latency probe (an experiment that pings does not declare "
                                  "``simulates``)")

    def stop_clients(self) -> None:
        raise NotImplementedError("the simulation's clients run to their end in one call")

    def _transfer(self, r: SimFlow) -> TransferResult:
        start = r.start_ms / 1e3
        done = r.done_ms / 1e3 if r.done_ms is not None else None
        assert self._start_wall is not None
        return TransferResult(
            ok=done is not None, bytes=r.bytes, request_s=start, last_byte_s=done,
            error=None if done is not None else f"cut at the end of the simulated window ({r.bytes} of {r.size} bytes)",
            request_wall=self._start_wall + start,
            extra={"sim": r.model_dump(include={"packets_sent", "packets_lost", "host_drops", "host_max_used"})},
        )

    def finish(self) -> StatsRecords:
        """dcemu's records of the simulation (the engine's intervals and summary; not its
        own last line), parsed as they are looked at."""
        return StatsRecords.of_file(self.stats, drop_last_of_type="sim")
