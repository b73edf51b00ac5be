"""The throughput experiment: one client downloads a file through the DC bearer; per
repetition a fresh testbed, the goodput, timings, PDCP summary, dcemu's stats and a
link-utilization plot of the first seconds, all kept in the run directory."""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

from ..analysis.metrics import leg_series, mean_std, pdcp_summary
from ..analysis.plots import link_utilization
from ..endpoints import get_stack
from ..environment import environment
from ..hostconfig import host_config_for
from ..rundir import write_json
from ..scenario import DC_PORT, Scenario
from .repeat import run_reps
from ..testbed import Testbed


@dataclass(frozen=True)
class ThroughputOptions:
    stack: str = "aioquic"
    cc: str | None = None  # None: the stack's default
    udp_buffer: str = "default"  # QUIC host configuration: "default" or "large"
    size: int = 100_000_000
    reps: int = 1
    qlog: bool = False
    timeout_s: float | None = None  # None: derived from size and capacity


def default_timeout(s: Scenario, size: int) -> float:
    """Generous: ten times the transfer at the aggregate capacity (at least 2 Mbit/s
    assumed for traces), plus a minute."""
    capacity = 2.0 if s.trace else max(sum(s.bw), 0.1)
    return size * 8 / (capacity * 1e6) * 10 + 60


def throughput_rep(s: Scenario, o: ThroughputOptions, rep_dir: Path, on_wait: Callable[[], None] | None = None) -> dict:
    """One repetition in a fresh testbed; returns (and writes as result.json) its record:
    the download's result, PDCP summary, environment and `t0_ms` (dcemu time of the
    request)."""
    stack = get_stack(o.stack)
    cc = o.cc or stack.ccs[0]
    host = host_config_for(stack.transport, o.udp_buffer)
    timeout = o.timeout_s or default_timeout(s, o.size)
    tcp_ccs = (cc,) if stack.transport == "tcp" else ()
    with Testbed(s, host, rep_dir, "throughput", tcp_ccs=tcp_ccs, on_wait=on_wait) as tb:
        tb.start_server(stack, DC_PORT, cc, qlog=o.qlog)
        env = environment([stack], tb.settings)
        write_json(rep_dir / "environment.json", env)  # on disk before the download starts
        result = tb.download(stack, DC_PORT, o.size, cc, timeout, qlog=o.qlog)
        emu = tb.emulator
    records = emu.records() if emu else []
    shutil.rmtree(rep_dir / "certs", ignore_errors=True)  # a private key; nothing to keep
    rec = {**result.to_dict(), "stack": stack.name, "cc": cc, "host_config": host.name, "size": o.size,
           "pdcp": pdcp_summary(records), "environment": env, "t0_ms": None}
    if emu and emu.start_wall and result.request_wall:
        rec["t0_ms"] = (result.request_wall - emu.start_wall) * 1e3
        caps = [None] * s.legs if s.trace else list(s.bw)
        title = f"{stack.name} {cc}, {o.size / 1e6:g} MB, batch {s.batch}, split {':'.join(f'{x:g}' for x in s.split)}"
        link_utilization(leg_series(records, rec["t0_ms"]), caps, rep_dir / "link-utilization.png", title)
    write_json(rep_dir / "result.json", rec)
    return rec


def run_throughput(s: Scenario, o: ThroughputOptions, out: Path,
                   on_rep: Callable[[int, dict], None] | None = None,
                   on_wait: Callable[[], None] | None = None) -> dict:
    """Runs ``o.reps`` repetitions into ``out``; returns the summary (also results.json).
    Each repetition's result is on disk as soon as it ends."""
    return run_reps(s, asdict(o), o.reps, out, lambda d: throughput_rep(s, o, d, on_wait),
                    lambda runs: summarize(s, o, runs[0]["stack"], runs[0]["cc"], runs[0]["host_config"], runs),
                    "link-utilization.png", on_rep)


def summarize(s: Scenario, o: ThroughputOptions, stack: str, cc: str, host: str, runs: list[dict]) -> dict:
    goodputs = [r["goodput_mbps"] for r in runs if r["ok"]]
    ms = mean_std(goodputs)
    return {
        "goodput_mbps": {"mean": ms["mean"], "std": ms["std"], "runs": [r["goodput_mbps"] for r in runs]},
        "stack": stack,
        "cc": cc,
        "host_config": host,
        "size": o.size,
        "reps": len(runs),
        "failed": sum(1 for r in runs if not r["ok"]),
        "scenario": s.model_dump(mode="json"),
    }
