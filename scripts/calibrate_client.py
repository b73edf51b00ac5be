"""Measures the aioquic client's service time per packet while its socket is backlogged: the
figure of the simulation's client model (``AIOQUIC_CLIENT_US`` in dclab/testbed/sim_models.py). Runs 20 MB
downloads with the default UDP buffer at three of the study's points (the default scenario,
0.05 % loss, the delay ratio 3 at 150/50 ms), two repetitions each, with the client's receive
trace on (dclab/endpoints/aioquic/rx_trace.py), and prints the pooled service time less the
trace's own cost, and the same as a distribution for a workload file. Needs root and a quiet machine; takes about three minutes.

    .venv/bin/python scripts/calibrate_client.py [--reps N] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

from dclab.endpoints.aioquic import rx_trace

POINTS = {"default": [], "loss 0.05 %": ["--loss", "0.05,0.05"], "delay 150/50 ms": ["--delay", "150,50"]}


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
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="keep the runs and traces here")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="calibrate-client-"))
    dclab = Path(sys.executable).with_name("dclab")
    pooled: list[float] = []
    for name, opts in POINTS.items():
        tag = name.split()[0]
        env = dict(os.environ, **{rx_trace.ENV: str(out / f"trace-{tag}")})
        cmd = [str(dclab), "run", "throughput", "--stack", "aioquic", "--cc", "reno", "--udp-buffer", "default",
               "--size", "20MB", "--reps", str(args.reps), "--out", str(out / f"run-{tag}"), *opts]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        for path in sorted(out.glob(f"trace-{tag}.*")):
            gaps = rx_trace.backlogged_gaps_us(rx_trace.read(path))
            pooled += gaps
            s = rx_trace.summary(gaps)
            print(f"{name:16s} {path.name}: {s['n']} backlogged packets, mean {s['mean_us']:.1f} µs, "
                  f"p50 {s['p50_us']:.1f}, p99 {s['p99_us']:.1f}")
    cost = trace_cost_us()
    s = rx_trace.summary(pooled)
    print(f"pooled: {s['n']} packets, mean {s['mean_us']:.1f} µs (p50 {s['p50_us']:.1f}, p90 {s['p90_us']:.1f}, "
          f"p99 {s['p99_us']:.1f}); the trace costs {cost:.1f} µs per packet: "
          f"service time {s['mean_us'] - cost:.1f} µs")
    probs = [i / 20 for i in range(20)] + [0.99, 0.999]
    qs = statistics.quantiles(pooled, n=1000, method="inclusive")
    points = [[p, round((min(pooled) if p == 0 else qs[round(p * 1000) - 1]) - cost, 1)] for p in probs]
    print(f"as a distribution (dcemu sim's workload file): app_packet_quantiles_us = {points}")
    print(f"runs and traces: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
