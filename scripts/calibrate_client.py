"""Measures the aioquic client's service time per packet while its socket is backlogged: the
figure of the simulation's client model (``AIOQUIC_CLIENT_US`` in dclab/dcemu/sim_models.py).

Runs 20 MB downloads with the default UDP buffer at three points that are none of the
validation campaigns' points (batch 50, 0.1 % loss per leg, the delay ratio 2 at
133.33/66.67 ms), two repetitions each, with the client's receive trace on
(dclab/endpoints/aioquic/rx_trace.py); prints each run's statistics, the pooled service
time less the trace's own cost, and the same as a distribution for a workload file; and
writes the record of it all (dclab/campaign/calibration.py) to DIR/aioquic-client.json, and
with --keep to data/calibration/aioquic-client.json, the record the repository keeps:
a test then requires the constant in the code to be the value it gives, and `dclab
validate` judges the model on the points it was not calibrated on. Needs root and a quiet
machine; takes about three minutes.

    .venv/bin/python scripts/calibrate_client.py [--reps N] [--out DIR] [--keep]
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

from dclab.campaign.calibration import CLIENT, Calibration, CalibrationPoint, RunStats
from dclab.endpoints.aioquic import rx_trace
from dclab.paths import ROOT

SIZE = "20MB"
# Not points of campaigns/validate-study.toml or validate-smoke.toml, so that every point
# validation judges is one the model was not fitted to.
POINTS = [
    ("batch 50", ["--batch", "50"], {"batch": 50}),
    ("loss 0.1 %", ["--loss", "0.1,0.1"], {"loss": [0.1, 0.1]}),
    ("delay 133.33/66.67 ms", ["--delay", "133.33,66.67"], {"delay": [133.33, 66.67]}),
]


def trace_cost_us() -> float:
    """What noting one datagram costs (an ioctl, a clock read, an append), best of five."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    t = rx_trace.RxTrace("unused")
    cost = min(timeit.repeat(lambda: t.note(s.fileno()), number=10_000, repeat=5)) / 10_000 * 1e6
    s.close()
    return cost


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=2, help="repetitions per point (1-20, default 2)")
    ap.add_argument("--out", type=Path, default=None, help="keep the runs, traces and record here")
    ap.add_argument("--keep", action="store_true", help=f"also write the record to {CLIENT.relative_to(ROOT)}")
    args = ap.parse_args()
    if not 1 <= args.reps <= 20:
        ap.error("--reps: must be between 1 and 20")
    if os.geteuid() != 0:
        ap.error("needs root: the runs create namespaces and TUN devices")
    out = args.out or Path(tempfile.mkdtemp(prefix="calibrate-client-"))
    out.mkdir(parents=True, exist_ok=True)
    dclab = Path(sys.executable).with_name("dclab")
    pooled: list[float] = []
    points: list[CalibrationPoint] = []
    for name, opts, changes in POINTS:
        tag = name.split()[0]
        env = dict(os.environ, **{rx_trace.ENV: str(out / f"trace-{tag}")})
        cmd = [str(dclab), "run", "throughput", "--stack", "aioquic", "--cc", "reno", "--udp-buffer", "default",
               "--size", SIZE, "--reps", str(args.reps), "--out", str(out / f"run-{tag}"), *opts]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        runs = []
        for path in sorted(out.glob(f"trace-{tag}.*")):
            gaps = rx_trace.backlogged_gaps_us(rx_trace.read(path))
            pooled += gaps
            s = rx_trace.summary(gaps)
            runs.append(RunStats(path.name, int(s["n"]), round(s["mean_us"], 2), round(s["p50_us"], 2),
                                 round(s["p90_us"], 2), round(s["p99_us"], 2)))
            print(f"{name:22s} {path.name}: {s['n']} backlogged packets, mean {s['mean_us']:.1f} µs, "
                  f"p50 {s['p50_us']:.1f}, p99 {s['p99_us']:.1f}")
        points.append(CalibrationPoint(name, opts, "aioquic", "reno", "default", SIZE, changes, runs))
    cost = round(trace_cost_us(), 2)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    record = Calibration("AIOQUIC_CLIENT_US", shlex.join(["scripts/calibrate_client.py", *sys.argv[1:]]), commit,
                         datetime.datetime.now().isoformat(timespec="seconds"), cost, points)
    s = rx_trace.summary(pooled)
    print(f"pooled: {s['n']} packets, mean {record.pooled_mean_us():.1f} µs (p50 {s['p50_us']:.1f}, "
          f"p90 {s['p90_us']:.1f}, p99 {s['p99_us']:.1f}); the trace costs {cost:.2f} µs per packet: "
          f"AIOQUIC_CLIENT_US = {record.value()}")
    probs = [i / 20 for i in range(20)] + [0.99, 0.999]
    qs = statistics.quantiles(pooled, n=1000, method="inclusive")
    quantiles = [[p, round((min(pooled) if p == 0 else qs[round(p * 1000) - 1]) - cost, 1)] for p in probs]
    print(f"as a distribution (dcemu sim's workload file): app_packet_quantiles_us = {quantiles}")
    (out / "aioquic-client.json").write_text(record.to_json())
    if args.keep:
        CLIENT.parent.mkdir(parents=True, exist_ok=True)
        CLIENT.write_text(record.to_json())
        print(f"kept: {CLIENT.relative_to(ROOT)}")
    print(f"runs, traces and record: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
