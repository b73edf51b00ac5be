"""The fairness experiment: three servers (DC bearer on 4433, SC on leg 1 on 8000, SC on
leg 2 on 9000), three clients started together, each downloading a large file; measured
over the first `duration` seconds from dcemu's per-bearer delivered bytes. Reports each
flow's mean throughput and Jain's index over the flows' means."""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..analysis.figures import flows_over_time
from ..analysis.metrics import jain, mean_std
from ..endpoints import get_stack
from ..environment import environment
from ..hostconfig import HOST_CONFIGS, HostConfig, host_config_for
from ..rundir import write_json
from ..scenario import DC_PORT, SC1_PORT, SC2_PORT, Scenario, build
from .repeat import run_reps
from ..testbed import Testbed

FLOWS = {"dc": DC_PORT, "sc1": SC1_PORT, "sc2": SC2_PORT}
STATS_INTERVAL_MS = 100.0  # 180 s of 10 ms records would be tens of MB per run


@dataclass(frozen=True)
class FairnessOptions:
    stacks: dict[str, str] = field(default_factory=lambda: {f: "aioquic" for f in FLOWS})
    cc: str | None = None  # for every flow; None: each stack's default
    udp_buffer: str = "default"
    size: int = 1_000_000_000
    duration_s: float = 180.0
    reps: int = 1

    def stack_label(self) -> str:
        names = set(self.stacks.values())
        return names.pop() if len(names) == 1 else ",".join(f"{f}={self.stacks[f]}" for f in FLOWS)


def parse_stacks(stack: str | None, stacks: str | None) -> dict[str, str]:
    """--stack for all flows, or --stacks dc=aioquic,sc1=tcp,sc2=tcp (missing flows take
    --stack, default aioquic)."""
    out = {f: stack or "aioquic" for f in FLOWS}
    if stacks:
        for part in stacks.split(","):
            flow, _, name = part.partition("=")
            if flow.strip() not in FLOWS or not name.strip():
                raise ValueError(f"--stacks: expected dc=STACK,sc1=STACK,sc2=STACK (got {part!r})")
            out[flow.strip()] = name.strip()
    for name in out.values():
        get_stack(name)  # raises naming the valid stacks
    return out


def host_config(o: FairnessOptions) -> HostConfig:
    """The QUIC configuration when any flow is QUIC (plus TCP's namespace buffers when a
    flow is TCP); TCP's when all are."""
    transports = {get_stack(n).transport for n in o.stacks.values()}
    if transports == {"tcp"}:
        return HOST_CONFIGS["tcp"]
    quic = host_config_for("udp", o.udp_buffer)
    if "tcp" not in transports:
        return quic
    tcp = HOST_CONFIGS["tcp"]
    return HostConfig(f"{quic.name}+tcp", {**tcp.global_sysctls, **quic.global_sysctls}, dict(tcp.netns_sysctls))


def flow_ccs(o: FairnessOptions) -> dict[str, str]:
    ccs = {}
    for flow, name in o.stacks.items():
        st = get_stack(name)
        cc = o.cc or st.ccs[0]
        if cc not in st.ccs:
            raise ValueError(f"--cc: {name} (flow {flow}) offers {', '.join(st.ccs)} (got {cc!r})")
        ccs[flow] = cc
    tcp = {ccs[f] for f, n in o.stacks.items() if get_stack(n).transport == "tcp"}
    if len(tcp) > 1:
        raise ValueError("--cc: TCP flows share the server namespace's congestion control; give them one")
    return ccs


def window_means(records: list[dict], t0_ms: float, window_s: float) -> dict[str, float]:
    """Each bearer's mean Mbit/s over [t0, t0 + window] from cumulative delivered bytes."""
    intervals = [r for r in records if r.get("type") in ("interval", "summary")]
    end_ms = t0_ms + window_s * 1e3

    def delivered_at(t_ms: float) -> tuple[float, dict[str, int]]:
        best = min(intervals, key=lambda r: abs(r["t_ms"] - t_ms))
        return best["t_ms"], {b["name"]: b["delivered_bytes"] for b in best["bearers"]}

    (ta, a), (tb, b) = delivered_at(t0_ms), delivered_at(end_ms)
    span = max(tb - ta, 1e-9) / 1e3
    return {name: (b[name] - a.get(name, 0)) * 8 / span / 1e6 for name in b}


def fairness_rep(s: Scenario, o: FairnessOptions, rep_dir: Path, on_wait: Callable[[], None] | None = None) -> dict:
    """One repetition in a fresh testbed; returns (and writes as result.json) its record."""
    s = build(s, stats_interval_ms=max(s.stats_interval_ms, STATS_INTERVAL_MS))
    ccs = flow_ccs(o)
    host = host_config(o)
    tcp_ccs = tuple({ccs[f] for f, n in o.stacks.items() if get_stack(n).transport == "tcp"})
    results: dict[str, dict] = {}
    with Testbed(s, host, rep_dir, "fairness", tcp_ccs=tcp_ccs, on_wait=on_wait) as tb:
        stacks = {f: get_stack(n) for f, n in o.stacks.items()}
        for flow, port in FLOWS.items():
            tb.start_server(stacks[flow], port, ccs[flow], name=f"server-{flow}")
        env = environment(list({st.name: st for st in stacks.values()}.values()), tb.settings)
        write_json(rep_dir / "environment.json", env)

        def client(flow: str) -> None:
            # The client is stopped at the end of the window: a cut download is expected.
            r = tb.download(stacks[flow], FLOWS[flow], o.size, ccs[flow], timeout_s=o.duration_s + 2, name=f"client-{flow}")
            results[flow] = r.to_dict()

        start_wall = time.time()
        threads = [threading.Thread(target=client, args=(f,)) for f in FLOWS]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        emu = tb.emulator
    records = emu.records() if emu else []
    shutil.rmtree(rep_dir / "certs", ignore_errors=True)
    t0_ms = (start_wall - emu.start_wall) * 1e3 if emu and emu.start_wall else 0.0
    means = window_means(records, t0_ms, o.duration_s) if records else {}
    flows = {f: {"mean_mbps": means.get(f), "stack": o.stacks[f], "cc": ccs[f], "client": results.get(f)} for f in FLOWS}
    values = [means.get(f) for f in FLOWS]
    rec = {
        "ok": bool(records) and all(v is not None for v in values),
        "flows": flows,
        "jfi": jain(values) if all(v is not None for v in values) else None,
        "t0_ms": t0_ms,
        "window_s": o.duration_s,
        "host_config": host.name,
        "stack": o.stack_label(),
        "cc": ",".join(sorted(set(ccs.values()))),
        "environment": env,
    }
    if records:
        title = f"fairness: {o.stack_label()}, batch {s.batch}, split {':'.join(f'{x:g}' for x in s.split)}" \
                + (", duplication" if s.duplicate else "")
        flows_over_time(rep_dir, t0_ms, rep_dir / "flows.png", o.duration_s, title)
    write_json(rep_dir / "result.json", rec)
    return rec


def run_fairness(s: Scenario, o: FairnessOptions, out: Path, on_rep: Callable[[int, dict], None] | None = None,
                 on_wait: Callable[[], None] | None = None) -> dict:
    return run_reps(s, dict(o.__dict__), o.reps, out, lambda d: fairness_rep(s, o, d, on_wait),
                    lambda runs: summarize(s, o, runs), "flows.png", on_rep)


def summarize(s: Scenario, o: FairnessOptions, runs: list[dict]) -> dict:
    flows = {}
    for f in FLOWS:
        ms = mean_std([r["flows"][f]["mean_mbps"] for r in runs if r["ok"]])
        flows[f] = {"mean_mbps": ms["mean"], "std_mbps": ms["std"], "stack": o.stacks[f],
                    "runs": [r["flows"][f]["mean_mbps"] for r in runs]}
    j = mean_std([r["jfi"] for r in runs if r["ok"]])
    return {
        "flows": flows,
        "jfi": {"mean": j["mean"], "std": j["std"], "runs": [r["jfi"] for r in runs]},
        "host_config": runs[0]["host_config"] if runs else None,
        "cc": runs[0]["cc"] if runs else None,
        "duration_s": o.duration_s,
        "size": o.size,
        "reps": len(runs),
        "failed": sum(1 for r in runs if not r["ok"]),
        "scenario": s.model_dump(mode="json"),
    }
