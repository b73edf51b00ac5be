"""`make demo`: a bulk TCP transfer (iperf3) from the server namespace to the client
namespace through dcemu's default DC scenario (two 20 Mbit/s legs, 10 ms +- 1 ms, batch
100 at 1:1, PDCP reordering); prints goodput and per-leg utilization."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .emulator import Emulator, require_root, topology_toml
from .netns import Namespaces

SECONDS = 10


def main() -> int:
    require_root()
    with tempfile.TemporaryDirectory(prefix="dclab-demo-") as tmp, Namespaces() as ns:
        scenario = topology_toml(ns.server, ns.client, ns.tag)
        with Emulator(scenario, Path(tmp)) as emu:
            server = subprocess.Popen(ns.exec(ns.server, "iperf3", "-s", "-1", "-B", "198.18.0.1"), stdout=subprocess.DEVNULL)
            try:
                subprocess.run(ns.exec(ns.client, "sleep", "0.3"), check=True)
                print(f"TCP bulk download through the default DC scenario for {SECONDS} s ...", flush=True)
                out = subprocess.run(
                    ns.exec(ns.client, "iperf3", "-c", "198.18.0.1", "-R", "-t", str(SECONDS), "-J", "-M", "1280"),
                    capture_output=True, text=True, timeout=SECONDS + 30,
                )
            finally:
                server.kill()
                server.wait()
        if out.returncode != 0:
            print(f"iperf3 failed: {out.stderr or out.stdout}", file=sys.stderr)
            return 1
        result = json.loads(out.stdout)
        goodput = result["end"]["sum_received"]["bits_per_second"] / 1e6
        summary = emu.summary()
        print(f"goodput: {goodput:.2f} Mbit/s (two 20 Mbit/s legs: 40 Mbit/s of link capacity, PDCP header included)")
        if summary:
            duration_s = summary["t_ms"] / 1e3
            for leg in summary["legs"]:
                d = leg["downlink"]
                util = d["bytes_out"] * 8 / duration_s / 20e6 * 100
                print(f"  {leg['name']}: {d['bytes_out'] / 1e6:.1f} MB out, {util:.0f}% of 20 Mbit/s over {duration_s:.1f} s, "
                      f"{d['dropped_queue_packets']} queue drops")
            rx = summary["bearers"][0].get("rx") or {}
            print(f"  PDCP: {rx.get('delivered', 0)} SDUs delivered, {rx.get('timer_expiries', 0)} t-Reordering expiries, "
                  f"{rx.get('counts_given_up', 0)} COUNTs given up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
