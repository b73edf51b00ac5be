"""Campaigns: the matrix of experiments x stack configurations x sweeps x repetitions,
described in a data file (campaigns/NAME.toml), planned with a time estimate, and run
resumably: a run whose key is in the store is skipped, and a run enters the store only
once it has finished. `--shard i/n` splits the plan over machines; `dclab results merge`
joins their stores.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .endpoints import get_stack
from .experiments.fairness import FLOWS, FairnessOptions
from .experiments.throughput import ThroughputOptions
from .scenario import Scenario, ScenarioError, build
from .store import RunRecord, Store, campaign_dir
from .traces import trace_mean_mbps
from .sweep import SWEEPS, expand, frange

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGNS = ROOT / "campaigns"
OVERHEAD_S = 4.0  # testbed setup and teardown per run, measured on the 2-core VM


@dataclass(frozen=True)
class StackConfig:
    stack: str
    cc: str
    udp_buffer: str = "default"

    @property
    def label(self) -> str:
        return f"{self.stack} {self.cc}" + (f" {self.udp_buffer}-buffer" if get_stack(self.stack).transport == "udp" else "")


@dataclass(frozen=True)
class PlannedRun:
    key: str
    experiment: str
    config: StackConfig
    sweep: str
    value: float
    rep: int
    scenario: Scenario
    size: int
    duration_s: float | None
    estimate_s: float


@dataclass
class Campaign:
    name: str
    description: str = ""
    reps: int = 10
    throughput_size: int = 100_000_000
    fairness_size: int = 1_000_000_000
    fairness_duration_s: float = 180.0
    groups: list[dict] = field(default_factory=list)


def parse_config(spec: str | dict) -> StackConfig:
    """"aioquic:reno:large" or {stack, cc, udp_buffer}."""
    if isinstance(spec, str):
        parts = spec.split(":")
        spec = {"stack": parts[0], **({"cc": parts[1]} if len(parts) > 1 else {}),
                **({"udp_buffer": parts[2]} if len(parts) > 2 else {})}
    st = get_stack(spec["stack"])
    cc = spec.get("cc") or st.ccs[0]
    if cc not in st.ccs:
        raise ScenarioError(f"config {spec}: {st.name} offers {', '.join(st.ccs)} (got {cc!r})")
    buf = spec.get("udp_buffer", "default")
    if buf not in ("default", "large"):
        raise ScenarioError(f"config {spec}: udp_buffer must be default or large (got {buf!r})")
    return StackConfig(st.name, cc, buf if st.transport == "udp" else "default")


def size_bytes(v: object) -> int:
    from .cli_options import parse_size

    return v if isinstance(v, int) else parse_size(str(v))


def load(name_or_path: str) -> Campaign:
    """A campaign by name (campaigns/NAME.toml) or path; errors name the file and key."""
    path = Path(name_or_path)
    if not path.suffix:
        path = CAMPAIGNS / f"{name_or_path}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CAMPAIGNS.glob("*.toml")))
        raise ScenarioError(f"no campaign {name_or_path!r} (known: {known})")
    try:
        d = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"{path}: {e}") from None
    c = Campaign(name=d.get("name", path.stem), description=d.get("description", ""), reps=int(d.get("reps", 10)))
    c.throughput_size = size_bytes(d.get("throughput", {}).get("size", "100MB"))
    c.fairness_size = size_bytes(d.get("fairness", {}).get("size", "1GB"))
    c.fairness_duration_s = float(d.get("fairness", {}).get("duration", 180))
    c.groups = d.get("group", [])
    if not c.groups:
        raise ScenarioError(f"{path}: no [[group]] tables")
    for i, g in enumerate(c.groups):
        for k in ("configs", "sweeps"):
            if not g.get(k):
                raise ScenarioError(f"{path}: group[{i}] needs '{k}'")
        for s in g["sweeps"]:
            sname = s if isinstance(s, str) else s.get("name")
            if sname not in SWEEPS:
                raise ScenarioError(f"{path}: group[{i}]: unknown sweep {sname!r}; one of {', '.join(SWEEPS)}")
        for e in g.get("experiments", ["throughput", "fairness"]):
            if e not in ("throughput", "fairness"):
                raise ScenarioError(f"{path}: group[{i}]: unknown experiment {e!r}")
    return c


def run_key(experiment: str, cfg: StackConfig, sweep: str, value: float, rep: int, s: Scenario, size: int,
            duration: float | None) -> str:
    blob = json.dumps([experiment, cfg.stack, cfg.cc, cfg.udp_buffer, sweep, value, rep, s.model_dump(mode="json"),
                       size, duration], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def estimate(experiment: str, cfg: StackConfig, s: Scenario, size: int, duration: float | None) -> float:
    """Seconds one run takes: setup plus the transfer at a plausible goodput (three
    quarters of the aggregate capacity; aioquic's receiver tops out near 50 Mbit/s here)."""
    if experiment == "fairness":
        return OVERHEAD_S + 2 + (duration or 180)
    capacity = trace_mean_mbps(s.trace) * s.legs if s.trace else sum(s.bw)
    goodput = 0.75 * capacity
    if cfg.stack == "aioquic":
        goodput = min(goodput, 50.0)
    return OVERHEAD_S + size * 8 / (max(goodput, 0.5) * 1e6)


def plan(c: Campaign, reps: int | None = None, base: Scenario | None = None) -> list[PlannedRun]:
    """Every run of the campaign in a fixed order (groups, experiments, configs, sweeps,
    values, repetitions); a run that two groups share (same key) is planned once."""
    runs = []
    seen: set[str] = set()
    for g in c.groups:
        changes = dict(g.get("scenario", {}))
        if changes.get("trace") and not Path(changes["trace"]).is_absolute():
            changes["trace"] = str(ROOT / changes["trace"])  # relative to the repository
        group_base = build(base, **changes)
        configs = [parse_config(x) for x in g["configs"]]
        for experiment in g.get("experiments", ["throughput", "fairness"]):
            for cfg in configs:
                for sw in g["sweeps"]:
                    name = sw if isinstance(sw, str) else sw["name"]
                    if experiment not in SWEEPS[name].experiments:
                        continue
                    values = SWEEPS[name].defaults if isinstance(sw, str) or "values" not in sw and "range" not in sw else (
                        [float(x) for x in sw["values"]] if "values" in sw else frange(*[float(x) for x in sw["range"]]))
                    for p in expand(name, values, group_base):
                        size = p.size or (c.throughput_size if experiment == "throughput" else c.fairness_size)
                        duration = c.fairness_duration_s if experiment == "fairness" else None
                        for rep in range(1, (reps or c.reps) + 1):
                            key = run_key(experiment, cfg, name, p.value, rep, p.scenario, size, duration)
                            if key in seen:
                                continue
                            seen.add(key)
                            runs.append(PlannedRun(key, experiment, cfg, name, p.value, rep, p.scenario, size, duration,
                                                   estimate(experiment, cfg, p.scenario, size, duration)))
    return runs


def shard(runs: list[PlannedRun], spec: str | None) -> list[PlannedRun]:
    """'i/n': every n-th run starting at the i-th (1-based), so shards balance."""
    if not spec:
        return runs
    try:
        i, n = (int(x) for x in spec.split("/"))
        assert 1 <= i <= n
    except (ValueError, AssertionError):
        raise ScenarioError(f"--shard: expected i/n with 1 <= i <= n (got {spec!r})") from None
    return runs[i - 1 :: n]


def calibration(store: Store) -> dict[str, float]:
    """Actual / estimated run time per experiment, from runs already stored."""
    ratios: dict[str, list[float]] = {}
    for r in store.rows():
        m = r["metrics"]
        if m.get("elapsed_s") and m.get("estimate_s"):
            ratios.setdefault(r["experiment"], []).append(m["elapsed_s"] / m["estimate_s"])
    return {e: sum(v) / len(v) for e, v in ratios.items()}


def pending(c: Campaign, store: Store, reps: int | None, shard_spec: str | None) -> tuple[list[PlannedRun], list[PlannedRun]]:
    """The campaign's runs (this shard's) and those of them not yet in the store."""
    runs = shard(plan(c, reps), shard_spec)
    done = store.keys()
    return runs, [r for r in runs if r.key not in done]


def execute(c: Campaign, run: PlannedRun, store: Store, on_wait: Callable[[], None] | None = None) -> dict:
    """Runs one planned run in a fresh directory and stores it once it has finished."""
    from .experiments.fairness import fairness_rep
    from .experiments.throughput import throughput_rep

    run_dir = campaign_dir(c.name) / "runs" / run.key
    if run_dir.exists():
        shutil.rmtree(run_dir)  # a run that was interrupted: start it again
    run_dir.mkdir(parents=True)
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    t0 = time.monotonic()
    if run.experiment == "throughput":
        o = ThroughputOptions(stack=run.config.stack, cc=run.config.cc, udp_buffer=run.config.udp_buffer, size=run.size)
        rec = throughput_rep(run.scenario, o, run_dir, on_wait)
    else:
        o = FairnessOptions(stacks={f: run.config.stack for f in FLOWS}, cc=run.config.cc,
                            udp_buffer=run.config.udp_buffer, size=run.size, duration_s=run.duration_s or 180)
        rec = fairness_rep(run.scenario, o, run_dir, on_wait)
    elapsed = time.monotonic() - t0
    env = rec.pop("environment", {})
    metrics = {**rec, "elapsed_s": elapsed, "estimate_s": run.estimate_s}
    flows = rec.get("flows", {})
    store.add(RunRecord(
        run_key=run.key, campaign=c.name, experiment=run.experiment, sweep=run.sweep, param=run.sweep,
        value=f"{run.value:g}", value_num=run.value, stack=rec.get("stack", run.config.stack), cc=run.config.cc,
        host_config=rec.get("host_config", ""), rep=run.rep, size=run.size, duration_s=run.duration_s,
        ok=bool(rec.get("ok")), error=rec.get("error"), goodput_mbps=rec.get("goodput_mbps"), jfi=rec.get("jfi"),
        dc_mbps=(flows.get("dc") or {}).get("mean_mbps"), sc1_mbps=(flows.get("sc1") or {}).get("mean_mbps"),
        sc2_mbps=(flows.get("sc2") or {}).get("mean_mbps"), scenario=run.scenario.model_dump(mode="json"),
        metrics=metrics, environment=env, run_dir=str(run_dir), machine=platform.node(), started_at=started,
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%S"),
    ))
    return metrics

