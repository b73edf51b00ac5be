"""``dcemu sim``: the workload file it reads (emu/src/sim/workload.rs), the call, and the
summary line it ends with (``SimSummary``, emu/src/sim/driver.rs), typed. The simulated
testbed (testbed/simbed.py) runs experiments' flows through it."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import tomli_w
from pydantic import BaseModel, ConfigDict, ValidationError

from ..endpoints.base import Workload
from ..flowplan import Flow, FlowPlan
from ..paths import DCEMU
from .process import die_with_parent
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


def workload_toml(plan: FlowPlan, flows: Sequence[Flow], rmem: Mapping[str, int], workloads: dict[str, Workload],
                  duration_s: float, stand_in: Mapping[str, str] | None = None, ecn: bool = False) -> str:
    """The workload file of ``dcemu sim`` for these flows, each on its stack's model or the
    stand-in named for it (SimError when neither); ``rmem`` is the client's receive buffer
    per transport ("tcp", "quic"), and ``ecn`` whether TCP asks for ECN, from the host
    configuration."""
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
            "rmem": rmem[m.transport], "truesize": UDP_TRUESIZE, "app_packet_us": r.client_packet_us,
            "send_packet_us": r.server_packet_us, **({"ecn": True} if ecn and m.transport == "tcp" else {}),
        })
    return tomli_w.dumps({"duration_s": duration_s, "flow": out})


class SimFlow(BaseModel):
    """One flow's outcome (driver.rs ``FlowResult``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    transport: str
    cc: str
    server_port: int
    client_port: int
    size: int
    bytes: int  # the client application got in order
    start_ms: float
    done_ms: float | None  # the last byte at the client application; None: not done at the end
    goodput_mbps: float
    packets_sent: int
    packets_lost: int
    host_drops: int
    host_max_used: int
    # TCP with ECN (the workload's ``ecn``): data packets the client received marked CE, and
    # the sender's window reductions for their echo; absent before dcemu wrote them
    ce_marks: int = 0
    ecn_reductions: int = 0


class SimSummary(BaseModel):
    """The line ``dcemu sim`` ends with (driver.rs ``SimSummary``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    t_ms: float  # virtual time at the end
    ended: str  # "done", "duration" or "horizon"
    flows: list[SimFlow]
    packets: int
    instants: int
    wall_s: float
    events_per_s: float


def simulate(scenario: Path, workload: Path, stats: Path, log: Path) -> SimSummary:
    """Runs ``dcemu sim`` on the two files, its records into ``stats`` and what it says into
    ``log``; its summary. It ends with this process, even a killed one, as an emulated run's
    processes do. SimError when it fails or says something else than a summary."""
    p = subprocess.run(die_with_parent([str(DCEMU), "sim", str(scenario), "--workload", str(workload),
                                        "--stats", str(stats)]), capture_output=True, text=True)
    log.write_text(p.stderr)
    if p.returncode != 0:
        raise SimError(f"dcemu sim failed: {p.stderr.strip()[-400:]}")
    try:
        return SimSummary.model_validate_json(p.stdout.strip().splitlines()[-1])
    except (IndexError, ValidationError) as e:
        raise SimError(f"dcemu sim printed no summary dclab reads ({DCEMU}: the build may be stale): {e}") from None
