"""The bench's simulation section: how fast the simulation twin runs (`dcemu sim` through
`dclab`, modelled endpoints in virtual time, no root, no namespaces). One EN-DC run (TCP
through `endc:good,good` under `ddds`) gives the engine's events per second and the run's
wall time; a twentieth of the paper campaign at one repetition (`--shard 1/20`, the
campaign's own mix of experiments and sweeps), on both cores, gives runs per second. Each
writes only into the bench's temporary directory (its own results root)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.figures import detail, log, record_run
from dclab.paths import ROOT

ENDC = ["--link", "endc:good,good", "--x2-delay", "5", "--uplink-bw", "200", "--split-policy", "ddds",
        "--stack", "tcp", "--cc", "cubic", "--size", "500MB"]
PAPER_SHARD = "1/20"  # about 104 of the paper campaign's 2,089 runs at one repetition
TIMEOUT_S = 900  # per command: the shard takes about 20 s on two cores


def _dclab(args: list[str], results_root: Path) -> tuple[float, str]:
    """Runs ``dclab ARGS`` with its results under ``results_root``: (wall seconds, output)."""
    env = os.environ | {"DCLAB_RESULTS": str(results_root)}
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "dclab.cli", *args], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=TIMEOUT_S)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise RuntimeError(f"dclab {' '.join(args)} exited {p.returncode}: {(p.stdout + p.stderr).strip()[-800:]}")
    return wall, p.stdout


def sim_record(run_dir: Path) -> dict:
    """The last record of a simulated run's stats (``type`` "sim": events, wall time)."""
    with gzip.open(run_dir / "dcemu-stats.jsonl.gz", "rt") as f:
        last = None
        for line in f:
            last = line
    if last is None:
        raise RuntimeError(f"{run_dir}: no records")
    rec = json.loads(last)
    if rec.get("type") != "sim":
        raise RuntimeError(f"{run_dir}: the last record is {rec.get('type')!r}, not the simulation's")
    return rec


def runs_done(output: str) -> int:
    """The runs a campaign stored, from its last line ("done: N runs stored ok, ...")."""
    for line in reversed(output.splitlines()):
        if line.startswith("done:"):
            return int(line.split()[1])
    raise RuntimeError(f"no 'done:' line in the campaign's output: {output.strip()[-400:]}")


def section_sim(results: dict, tmp: Path) -> None:
    log(f"sim: one EN-DC run (TCP, 500 MB, ddds) and the paper campaign's shard {PAPER_SHARD} at one repetition, "
        "--jobs 2")
    for i in range(results["repeats"]):
        root = tmp / f"run-{i}"
        wall, _ = _dclab(["run", "throughput", "--backend", "sim", *ENDC, "--out", str(root / "endc")], root)
        rec = sim_record(root / "endc" / "rep-01")
        campaign_wall, out = _dclab(["campaign", "run", "paper", "--backend", "sim", "--reps", "1", "--shard",
                                     PAPER_SHARD, "--jobs", "2"], root)
        n = runs_done(out)
        detail(results, "sim_runs", {"endc_wall_s": wall, "endc_engine_wall_s": rec["wall_s"],
                                     "endc_instants": rec["instants"], "paper_runs": n, "paper_wall_s": campaign_wall})
        record_run(results, "sim", i, {
            "sim.endc_events_per_s": float(rec["events_per_s"]),
            "sim.endc_run_s": wall,
            "sim.paper_runs_per_s": n / campaign_wall,
        }, note=f"{n} paper runs in {campaign_wall:.1f} s")
