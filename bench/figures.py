"""The bench's figures: what each one is, every run kept and the median shown, and the
sections that measure them (bench/sections.py)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from dclab.dcemu.mode import TUN_OFFLOADS
from dclab.paths import DCEMU

SECTIONS = ("kernel", "unlimited", "delay", "lateness", "dc5g", "rate", "offload", "cells", "sim")
SECTION_HELP = {
    "kernel": "plain veth between the two namespaces: TCP goodput, UDP kpps, RTT p50/p99",
    "unlimited": "dcemu, two unlimited legs, no delay: TCP, UDP, added RTT, CPU s/GB, lateness, packets lost inside dcemu",
    "delay": "two unlimited legs, 10 ms each way: TCP goodput, error of a configured 20 ms RTT",
    "lateness": "default scenario, PDCP reordering on and off: departure lateness, timer, write cost, t-Reordering",
    "dc5g": "DC pair of 2 x 1 Gbit/s, 5 ms each way: TCP (iperf3) and ngtcp2 (dclab run throughput) goodput",
    "rate": "rate error of one leg at 20 Mbit/s and at 1 Gbit/s",
    "offload": "TUN offload modes all/read/write/none: TCP goodput, UDP kpps (skipped if dcemu lacks --tun-offload)",
    "cells": "TCP through the nr:good carrier against its model capacity, and through EN-DC (lte:good + nr:good): lateness",
    "sim": "the simulation twin: events per second of an EN-DC run, runs per second of a twentieth of the paper campaign",
}
OFFLOAD_MODES = TUN_OFFLOADS


def log(msg: str) -> None:
    print(f"[bench] {msg}", flush=True)


@dataclass(frozen=True)
class Fig:
    label: str  # short, for the progress log
    unit: str
    spec: str  # format of the median and of each run


FIGURES: dict[str, Fig] = {
    "kernel.tcp_gbps": Fig("TCP", "Gbit/s", ".2f"),
    "kernel.udp_kpps": Fig("UDP", "kpps", ".0f"),
    "kernel.rtt_p50_us": Fig("RTT p50", "us", ".0f"),
    "kernel.rtt_p99_us": Fig("RTT p99", "us", ".0f"),
    "unlimited.kernel_rtt_baseline_us": Fig("kernel veth RTT p50 (baseline)", "us", ".0f"),
    "unlimited.rtt_p50_us": Fig("RTT p50", "us", ".0f"),
    "unlimited.rtt_p99_us": Fig("RTT p99", "us", ".0f"),
    "unlimited.added_rtt_p50_us": Fig("added RTT p50", "us", ".0f"),
    "unlimited.added_rtt_p99_us": Fig("added RTT p99", "us", ".0f"),
    "unlimited.rtt_p50_us_busy_poll": Fig("RTT p50, --busy-poll", "us", ".0f"),
    "unlimited.rtt_p99_us_busy_poll": Fig("RTT p99, --busy-poll", "us", ".0f"),
    "unlimited.added_rtt_p50_us_busy_poll": Fig("added RTT p50, --busy-poll", "us", ".0f"),
    "unlimited.added_rtt_p99_us_busy_poll": Fig("added RTT p99, --busy-poll", "us", ".0f"),
    "unlimited.tcp_gbps": Fig("TCP", "Gbit/s", ".2f"),
    "unlimited.cpu_s_per_gb": Fig("CPU", "s/GB", ".2f"),
    "unlimited.lateness_p50_us": Fig("lateness p50", "us", ".1f"),
    "unlimited.lateness_p99_us": Fig("lateness p99", "us", ".1f"),
    "unlimited.lost_packets": Fig("lost inside dcemu (RTT + TCP runs)", "packets", ".0f"),
    "unlimited.udp_kpps": Fig("UDP", "kpps", ".0f"),
    "unlimited.udp_forwarded_kpps": Fig("UDP forwarded by dcemu", "kpps", ".0f"),
    "unlimited.udp_receiver_drops": Fig("UDP dropped at the receiving socket", "packets", ".0f"),
    "unlimited.lost_packets_udp": Fig("lost inside dcemu (UDP flood)", "packets", ".0f"),
    "delay.tcp_gbps": Fig("TCP", "Gbit/s", ".2f"),
    "delay.rtt_error_p50_ms": Fig("20 ms RTT error p50", "ms", ".3f"),
    "delay.rtt_error_p99_ms": Fig("20 ms RTT error p99", "ms", ".3f"),
    "delay.rtt_error_p50_ms_busy_poll": Fig("20 ms RTT error p50, --busy-poll", "ms", ".3f"),
    "delay.rtt_error_p99_ms_busy_poll": Fig("20 ms RTT error p99, --busy-poll", "ms", ".3f"),
    "dc5g.tcp_gbps": Fig("TCP", "Gbit/s", ".2f"),
    "dc5g.tcp_overflow_gbps": Fig("TCP, queues overflowing", "Gbit/s", ".2f"),
    "dc5g.t_reordering_expiries": Fig("t-Reordering expiries", "", ".0f"),
    "dc5g.ngtcp2_gbps": Fig("ngtcp2", "Gbit/s", ".2f"),
    "rate.error_pct_20mbit": Fig("rate error at 20 Mbit/s", "%", "+.3f"),
    "rate.error_pct_1gbit": Fig("rate error at 1 Gbit/s", "%", "+.3f"),
    "cells.nr_tcp_gbps": Fig("TCP through nr:good", "Gbit/s", ".3f"),
    "cells.nr_model_gbps": Fig("its model capacity", "Gbit/s", ".3f"),
    "cells.nr_share_of_model": Fig("share of the model", "", ".3f"),
    "cells.nr_lateness_p99_us": Fig("NR lateness p99", "us", ".1f"),
    "cells.endc_tcp_gbps": Fig("TCP through EN-DC", "Gbit/s", ".3f"),
    "cells.endc_lte_share": Fig("EN-DC: the LTE master's share of the bytes", "", ".3f"),
    "cells.endc_lateness_p50_us": Fig("EN-DC lateness p50", "us", ".1f"),
    "cells.endc_lateness_p99_us": Fig("EN-DC lateness p99", "us", ".1f"),
    "cells.endc_service_lateness_p99_us": Fig("EN-DC timer p99", "us", ".1f"),
    "cells.endc_paced_tcp_mbps": Fig("EN-DC, TCP paced", "Mbit/s", ".1f"),
    "cells.endc_paced_lateness_p50_us": Fig("paced lateness p50", "us", ".1f"),
    "cells.endc_paced_lateness_p99_us": Fig("paced lateness p99", "us", ".1f"),
    "cells.endc_paced_service_lateness_p50_us": Fig("paced timer p50", "us", ".1f"),
    "cells.plain_paced_service_lateness_p50_us": Fig("plain legs, paced timer p50", "us", ".1f"),
    "cells.plain_paced_service_lateness_p99_us": Fig("plain legs, paced timer p99", "us", ".1f"),
    "cells.endc_paced_service_lateness_p99_us": Fig("paced timer p99", "us", ".1f"),
    "cells.endc_paced_halt_service_lateness_p50_us": Fig("idle CPUs halting, paced timer p50", "us", ".1f"),
    "cells.endc_paced_halt_service_lateness_p99_us": Fig("idle CPUs halting, paced timer p99", "us", ".1f"),
    "sim.endc_events_per_s": Fig("EN-DC run: engine events", "per s", ".3g"),
    "sim.endc_run_s": Fig("EN-DC run: wall time of the command", "s", ".2f"),
    "sim.paper_runs_per_s": Fig("paper campaign (shard 1/20, --jobs 2)", "runs/s", ".2f"),
}
for _sfx, _how in (("", "reordering on"), ("_no_reordering", "reordering off"), ("_busy_poll", "reordering on, --busy-poll")):
    FIGURES |= {
        f"lateness.tcp_mbps{_sfx}": Fig(f"{_how}: TCP", "Mbit/s", ".1f"),
        f"lateness.lateness_p50_us{_sfx}": Fig("lateness p50", "us", ".1f"),
        f"lateness.lateness_p99_us{_sfx}": Fig("lateness p99", "us", ".1f"),
        f"lateness.service_lateness_p50_us{_sfx}": Fig("timer p50", "us", ".1f"),
        f"lateness.service_lateness_p99_us{_sfx}": Fig("timer p99", "us", ".1f"),
        f"lateness.write_cost_p50_us{_sfx}": Fig("write p50", "us", ".1f"),
        f"lateness.write_cost_p99_us{_sfx}": Fig("write p99", "us", ".1f"),
        f"lateness.t_reordering_expiries{_sfx}": Fig("t-Reordering expiries", "", ".0f"),
        f"lateness.reorder_buffer_high_water{_sfx}": Fig("reorder buffer high water", "SDUs", ".0f"),
    }
for _mode in OFFLOAD_MODES:
    FIGURES[f"offload.tcp_gbps_{_mode}"] = Fig(f"TCP, offload {_mode}", "Gbit/s", ".2f")
for _mode in ("all", "none"):
    FIGURES[f"offload.udp_kpps_{_mode}"] = Fig(f"UDP, offload {_mode}", "kpps", ".0f")


def median_runs(runs: list[float]) -> float:
    """The median of a figure's runs (the mean of the middle two for an even count)."""
    if not runs:
        raise ValueError("no runs")
    return float(statistics.median(runs))


def fmt_value(key: str, value: float) -> str:
    f = FIGURES[key]
    return f"{format(value, f.spec)} {f.unit}".rstrip()


def fmt_figure(key: str, fig: dict) -> str:
    """`2.41 Gbit/s (runs 2.38, 2.41, 2.50)`: the median, then every run in order."""
    spec = FIGURES[key].spec
    runs = ", ".join(format(x, spec) for x in fig["runs"])
    return f"{fmt_value(key, fig['median'])} (runs {runs})"


def new_results(repeats: int, sections: list[str]) -> dict[str, Any]:
    return {"repeats": repeats, "sections": sections, "figures": {}, "details": {}, "skipped": {},
            "dcemu": {"binary": str(DCEMU),
                      "command": "dcemu run SCENARIO --stats FILE --ready-file FILE EXTRA_ARGS (every other option at dcemu's default)",
                      "configs": {}}}


def add(results: dict, key: str, value: float) -> None:
    """One more run of a figure; its median follows every run (a partial result has it too)."""
    if key not in FIGURES:
        raise KeyError(f"unknown figure {key}")
    fig = results["figures"].setdefault(key, {"unit": FIGURES[key].unit, "runs": [], "median": None})
    fig["runs"].append(float(value))
    fig["median"] = median_runs(fig["runs"])


def record_run(results: dict, section: str, i: int, values: dict[str, float], note: str = "") -> None:
    """Adds one run's figures and logs one line with what it measured."""
    for k, v in values.items():
        add(results, k, v)
    what = ", ".join(f"{FIGURES[k].label} {fmt_value(k, v)}" for k, v in values.items())
    log(f"{section} run {i + 1}/{results['repeats']}: {what}{'; ' + note if note else ''}")


def detail(results: dict, name: str, value: Any) -> None:
    """Per-run extras (losses by counter, saturation, stalls, ...): a list per name."""
    results["details"].setdefault(name, []).append(value)
