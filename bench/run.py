#!/usr/bin/env python3
"""`make bench`: dcemu side by side with the kernel path (the same two namespaces joined
by a plain veth pair), against the targets of issue 12.

A run writes only under bench/out/ (gitignored): results-<YYYYmmdd-HHMMSS>.json,
latest.json and table.md, and prints the table. `--update-readme` (for maintainers) also
rewrites README.md between the bench markers and the tracked bench/results.json. A run
that fails or is interrupted (Ctrl-C, SIGTERM) keeps what it measured in
bench/out/results.partial.json and removes its namespaces and processes.

Every figure is measured `--repeats` times; the table shows the median and every run.
Everything runs inside namespaces this script creates, on 198.18.0.0/15, and every
traffic generator runs for a bounded time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dclab.paths import DCEMU  # noqa: E402
from dclab.testbed.emulator import Emulator, require_root, topology_toml  # noqa: E402
from dclab.testbed.netns import Namespaces, sh, veth_link  # noqa: E402
from dclab.testbed.procs import stop_group  # noqa: E402

SERVER, CLIENT = "198.18.0.1", "198.18.0.2"
TCP_SECONDS = 8
UDP_SECONDS = 4
PING_COUNT = 300  # at 10 ms intervals
SECTIONS = ("kernel", "unlimited", "delay", "lateness", "dc5g", "rate", "offload")
SECTION_HELP = {
    "kernel": "plain veth between the two namespaces: TCP goodput, UDP kpps, RTT p50/p99",
    "unlimited": "dcemu, two unlimited legs, no delay: TCP, UDP, added RTT, CPU s/GB, lateness, packets lost inside dcemu",
    "delay": "two unlimited legs, 10 ms each way: TCP goodput, error of a configured 20 ms RTT",
    "lateness": "default scenario, PDCP reordering on and off: departure lateness, timer, write cost, t-Reordering",
    "dc5g": "DC pair of 2 x 1 Gbit/s, 5 ms each way: TCP (iperf3) and ngtcp2 (dclab run throughput) goodput",
    "rate": "rate error of one leg at 20 Mbit/s and at 1 Gbit/s",
    "offload": "TUN offload modes all/read/write/none: TCP goodput, UDP kpps (skipped if dcemu lacks --tun-offload)",
}
REPEATS_DEFAULT, REPEATS_MIN, REPEATS_MAX = 3, 1, 20
OFFLOAD_MODES = ("all", "read", "write", "none")
# Socket buffers large enough for TCP at Gbit/s over 10-20 ms (delay and dc5g sections).
# net.ipv4.tcp_rmem/tcp_wmem are per network namespace: set in the bench's own namespaces
# only. net.core.rmem_max/wmem_max are global on this kernel (6.18 shows them in a child
# namespace read-only; a write there fails), so they are not changed: they only cap
# SO_RCVBUF/SO_SNDBUF requests, and iperf3 (no -w) leaves TCP autotuning, which tcp_rmem
# and tcp_wmem bound.
LARGE_TCP_BUFFERS = {"net.ipv4.tcp_rmem": "4096 131072 67108864", "net.ipv4.tcp_wmem": "4096 131072 67108864"}
# The dc5g capacity run caps the client's receive buffer at 8 MB: with tcp_adv_win_scale 1
# the window stays under 4 MB, the pair's BDP (2 Gbit/s x 10 ms = 2.5 MB) plus part of
# its 2 x 1000-packet queues, so TCP fills both legs without overflowing them. Overflow
# is measured too (large buffers): every drop holds the PDCP receiver for t-Reordering
# (200 ms), which is the DC behaviour the emulator exists to show, not its own cost.
DC5G_CLIENT_RMEM = {"net.ipv4.tcp_rmem": "4096 131072 8388608"}
NGTCP2_SIZE = "1250MB"  # about 5 s at 2 Gbit/s
NGTCP2_TIMEOUT_S = 60  # per download; the bench's wait on the whole dclab run is bounded too


def log(msg: str) -> None:
    print(f"[bench] {msg}", flush=True)


# -- figures: every run kept, the median shown ----------------------------------------------


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


# -- the table -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    op: str  # ">=", "<=", "abs<=", "=="
    value: float
    text: str  # as shown, e.g. ">= 4 Gbit/s"

    def met(self, x: float) -> bool:
        return {">=": x >= self.value, "<=": x <= self.value, "abs<=": abs(x) <= self.value, "==": x == self.value}[self.op]


@dataclass(frozen=True)
class Row:
    label: str
    dcemu: str | None = None
    kernel: str | None = None
    target: Target | None = None
    # TCP unlimited: also >= this share of the kernel veth figure of the same run, percent.
    min_pct_of_kernel: float | None = None
    note: Callable[[dict], str] | None = field(default=None, compare=False)


def _rate_note(key: str) -> Callable[[dict], str]:
    def note(r: dict) -> str:
        sat = r["details"].get(f"rate_{key}_saturated", [])
        short = sum(1 for s in sat if not s)
        return f" ({short} of {len(sat)} runs could not saturate the leg)" if short else ""
    return note


def _baseline_note(r: dict) -> str:
    f = r["figures"]
    if "kernel.rtt_p50_us" in f:
        return f" (kernel veth median {f['kernel.rtt_p50_us']['median']:.0f} us, kernel section)"
    if "unlimited.kernel_rtt_baseline_us" in f:
        return f" (kernel veth median {f['unlimited.kernel_rtt_baseline_us']['median']:.0f} us, measured for this)"
    return ""


ROWS: list[Row] = [
    Row("TCP goodput (iperf3 -R 8 s), MTU 1500; dcemu: two unlimited legs, no delay", "unlimited.tcp_gbps", "kernel.tcp_gbps",
        Target(">=", 4.0, ">= 4 Gbit/s"), min_pct_of_kernel=40.0),
    Row("UDP packets/s (64-byte payload, iperf3 -R 4 s, sender at unlimited rate) the receiver got; dcemu: two unlimited legs",
        "unlimited.udp_kpps", "kernel.udp_kpps", Target(">=", 200.0, ">= 200 kpps")),
    Row("  packets/s dcemu forwarded in that flood (the packets it wrote to the client / the flood's seconds)",
        "unlimited.udp_forwarded_kpps", None, Target(">=", 200.0, ">= 200 kpps")),
    Row("  datagrams the client's kernel dropped in that flood for a full socket buffer (the receiving "
        "process, sharing 2 CPUs with the sender and dcemu, not keeping up)", "unlimited.udp_receiver_drops"),
    Row("RTT p50 at zero delay (ping 300 x 10 ms)", "unlimited.rtt_p50_us", "kernel.rtt_p50_us"),
    Row("RTT p99 at zero delay (ping 300 x 10 ms)", "unlimited.rtt_p99_us", "kernel.rtt_p99_us"),
    Row("RTT added by dcemu, p50 (dcemu's p50 minus the kernel veth median RTT)", "unlimited.added_rtt_p50_us", None,
        Target("<=", 50.0, "<= 50 us"), note=_baseline_note),
    Row("RTT added by dcemu, p99 (dcemu's p99 minus the kernel veth median RTT)", "unlimited.added_rtt_p99_us", None,
        Target("<=", 150.0, "<= 150 us"), note=_baseline_note),
    Row("  RTT p50 with `dcemu run --busy-poll` (polls instead of sleeping: one core)", "unlimited.rtt_p50_us_busy_poll"),
    Row("  RTT p99 with --busy-poll", "unlimited.rtt_p99_us_busy_poll"),
    Row("  RTT added by dcemu with --busy-poll, p50", "unlimited.added_rtt_p50_us_busy_poll", None,
        Target("<=", 50.0, "<= 50 us"), note=_baseline_note),
    Row("  RTT added by dcemu with --busy-poll, p99", "unlimited.added_rtt_p99_us_busy_poll", None,
        Target("<=", 150.0, "<= 150 us"), note=_baseline_note),
    Row("CPU seconds per GB forwarded (dcemu user + sys, TCP run)", "unlimited.cpu_s_per_gb", None, Target("<=", 2.0, "<= 2 s/GB")),
    Row("Departure lateness at the highest rate (TCP, unlimited legs), p50", "unlimited.lateness_p50_us"),
    Row("Departure lateness at the highest rate (TCP, unlimited legs), p99", "unlimited.lateness_p99_us"),
    Row("Packets lost inside dcemu (TUN kernel drops + TUN write errors + no-buffer drops), RTT and TCP runs", "unlimited.lost_packets", None,
        Target("==", 0.0, "0 packets")),
    Row("  same during the UDP flood (a sender at unlimited rate)", "unlimited.lost_packets_udp"),
    Row("TCP goodput, two unlimited legs, 10 ms each way (large TCP buffers)", "delay.tcp_gbps", None, Target(">=", 2.0, ">= 2 Gbit/s")),
    Row("Error of a configured 20 ms RTT (10 ms each way; ICMP echo 300 x 10 ms as ping, RTT - 20 ms in us steps), p50", "delay.rtt_error_p50_ms"),
    Row("Error of a configured 20 ms RTT, p99", "delay.rtt_error_p99_ms", None, Target("<=", 0.2, "<= 0.2 ms")),
    Row("  same with --busy-poll, p50", "delay.rtt_error_p50_ms_busy_poll"),
    Row("  same with --busy-poll, p99", "delay.rtt_error_p99_ms_busy_poll", None, Target("<=", 0.2, "<= 0.2 ms")),
    Row("Departure lateness at 40 Mbit/s aggregate (default scenario, PDCP reordering on), p50", "lateness.lateness_p50_us"),
    Row("Departure lateness at 40 Mbit/s aggregate (default scenario, PDCP reordering on), p99", "lateness.lateness_p99_us", None,
        Target("<=", 200.0, "<= 200 us")),
    Row("  earliest packet of each write batch (timer precision), p50", "lateness.service_lateness_p50_us"),
    Row("  earliest packet of each write batch (timer precision), p99", "lateness.service_lateness_p99_us"),
    Row("  time one TUN write takes (runs the client's stack inline), p50", "lateness.write_cost_p50_us"),
    Row("  time one TUN write takes (runs the client's stack inline), p99", "lateness.write_cost_p99_us"),
    Row("  t-Reordering expiries (each releases every SDU held at one instant)", "lateness.t_reordering_expiries"),
    Row("  most SDUs held at once by the reorder buffer", "lateness.reorder_buffer_high_water"),
    Row("  same with PDCP reordering off (no release bursts), p50", "lateness.lateness_p50_us_no_reordering"),
    Row("  same with PDCP reordering off (no release bursts), p99", "lateness.lateness_p99_us_no_reordering"),
    Row("  same with reordering off, timer precision p99", "lateness.service_lateness_p99_us_no_reordering"),
    Row("  same with reordering on and --busy-poll, p50", "lateness.lateness_p50_us_busy_poll"),
    Row("  same with reordering on and --busy-poll, p99", "lateness.lateness_p99_us_busy_poll", None,
        Target("<=", 200.0, "<= 200 us")),
    Row("TCP goodput, DC 2 x 1 Gbit/s, 5 ms each way, split 50:50, queue 1000 (iperf3 -R 8 s; client receive "
        "buffer <= 8 MB, so the window fits the legs and their queues)", "dc5g.tcp_gbps", None,
        Target(">=", 1.8, ">= 1.8 Gbit/s")),
    Row("  same with 64 MB buffers: TCP overflows the leg queues and each drop holds PDCP for t-Reordering "
        "(200 ms), the DC effect under study", "dc5g.tcp_overflow_gbps"),
    Row("  t-Reordering expiries in that run", "dc5g.t_reordering_expiries"),
    Row("ngtcp2 goodput, same DC pair (dclab run throughput, 1250 MB, --udp-buffer large)", "dc5g.ngtcp2_gbps"),
    Row("Rate error at 20 Mbit/s", "rate.error_pct_20mbit", None, Target("abs<=", 1.0, "within 1 %"), note=_rate_note("20mbit")),
    Row("Rate error at 1 Gbit/s", "rate.error_pct_1gbit", None, Target("abs<=", 1.0, "within 1 %"), note=_rate_note("1gbit")),
    *[Row(f"TCP goodput, two unlimited legs, TUN offload `{m}`", f"offload.tcp_gbps_{m}") for m in OFFLOAD_MODES],
    *[Row(f"UDP packets/s (64-byte payload), TUN offload `{m}`", f"offload.udp_kpps_{m}") for m in ("all", "none")],
]


def target_cell(row: Row, figs: dict) -> str:
    """The target and, from the measured median, whether it is met."""
    if row.target is None:
        return "-"
    d = figs.get(row.dcemu) if row.dcemu else None
    if d is None:
        return row.target.text
    ok = row.target.met(d["median"])
    text = row.target.text
    if row.min_pct_of_kernel is not None:
        text += f" and >= {row.min_pct_of_kernel:.0f} % of kernel veth"
        k = figs.get(row.kernel) if row.kernel else None
        if k is not None and k["median"] > 0:
            pct = d["median"] / k["median"] * 100
            text += f" (this run: {pct:.0f} %)"
            ok = ok and pct >= row.min_pct_of_kernel
        else:
            text += " (kernel veth not measured: judged on the first part only)"
    return f"{text}: {'met' if ok else 'not met'}"


def render_table(r: dict) -> str:
    """The markdown table of what was measured (rows without a measured figure are left out)."""
    figs = r["figures"]
    lines = ["| measure | dcemu | kernel veth | target |", "|---|---|---|---|"]
    for row in ROWS:
        d = figs.get(row.dcemu) if row.dcemu else None
        k = figs.get(row.kernel) if row.kernel else None
        if d is None and k is None:
            continue
        label = row.label + (row.note(r) if row.note else "")
        lines.append(f"| {label} | {fmt_figure(row.dcemu, d) if d else '-'} | {fmt_figure(row.kernel, k) if k else '-'} | "
                     f"{target_cell(row, figs)} |")
    env = r.get("environment", {})
    only = "" if r.get("sections") == list(SECTIONS) else f" (sections: {', '.join(r.get('sections', []))})"
    lines.append(f"\nEach figure: the median of {r['repeats']} run(s), every run in brackets. Measured {env.get('measured_at', '?')} "
                 f"on {env.get('cpus', '?')} cores, kernel {env.get('kernel', '?')}, commit {env.get('git_commit', '?')}, "
                 f"by `bench/run.py`{only}.")
    for section, why in r.get("skipped", {}).items():
        lines.append(f"\nSkipped `{section}`: {why}.")
    return "\n".join(lines)


# -- outputs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paths:
    out_dir: Path = ROOT / "bench" / "out"
    readme: Path = ROOT / "README.md"
    tracked_json: Path = ROOT / "bench" / "results.json"


START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def replace_between_markers(text: str, table: str) -> str:
    if START not in text or END not in text or text.index(START) > text.index(END):
        raise ValueError(f"README has no {START} ... {END} markers")
    a, b = text.index(START) + len(START), text.index(END)
    return text[:a] + "\n" + table + "\n" + text[b:]


def write_outputs(results: dict, table: str, paths: Paths, update_readme: bool, stamp: str) -> list[Path]:
    """bench/out/results-STAMP.json, latest.json, table.md; with update_readme also the
    README's table and the tracked results.json. Returns what it wrote."""
    paths.out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(results, indent=2) + "\n"
    written = []
    for p, content in ((paths.out_dir / f"results-{stamp}.json", text), (paths.out_dir / "latest.json", text),
                       (paths.out_dir / "table.md", table + "\n")):
        p.write_text(content)
        written.append(p)
    if update_readme:
        paths.readme.write_text(replace_between_markers(paths.readme.read_text(), table))
        paths.tracked_json.write_text(text)
        written += [paths.readme, paths.tracked_json]
    return written


def write_partial(results: dict, paths: Paths) -> Path:
    paths.out_dir.mkdir(parents=True, exist_ok=True)
    p = paths.out_dir / "results.partial.json"
    p.write_text(json.dumps(results, indent=2) + "\n")
    return p


# -- arguments -------------------------------------------------------------------------------


def _repeats(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = None
    if n is None or not REPEATS_MIN <= n <= REPEATS_MAX:
        raise argparse.ArgumentTypeError(f"must be an integer from {REPEATS_MIN} to {REPEATS_MAX} (got {text!r})")
    return n


def _only(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",")]
    bad = [s for s in names if s not in SECTIONS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown section(s) {', '.join(repr(s) for s in bad)}; "
                                         f"valid sections: {', '.join(SECTIONS)}")
    return [s for s in SECTIONS if s in names]  # the bench's own order (kernel first)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="bench/run.py",
        description="Measure dcemu against the kernel path (issue 12).\n"
                    "Writes bench/out/results-TIME.json, bench/out/latest.json and bench/out/table.md and prints\n"
                    "the table; changes no tracked file unless --update-readme is given. An interrupted or failed\n"
                    "run keeps what it measured in bench/out/results.partial.json. Needs root and a built dcemu.",
        epilog="sections (for --only; the default runs all, in this order):\n" + "\n".join(f"  {s:<10} {h}" for s, h in SECTION_HELP.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--repeats", type=_repeats, default=REPEATS_DEFAULT, metavar="N",
                   help=f"runs per figure, {REPEATS_MIN} to {REPEATS_MAX}; the table shows the median and every run "
                        f"[default {REPEATS_DEFAULT}]")
    p.add_argument("--only", type=_only, default=list(SECTIONS), metavar="SECTION[,SECTION]",
                   help="run only these sections (comma-separated; names below); the table then shows only what was "
                        "measured [default: all]")
    p.add_argument("--update-readme", action="store_true",
                   help="for maintainers: also rewrite README.md's table (between the bench markers) and the tracked "
                        "bench/results.json; needs the full bench (no --only)")
    args = p.parse_args(argv)
    if args.update_readme and args.only != list(SECTIONS):
        p.error("--update-readme needs the full bench: the README table must not lose rows (drop --only)")
    return args


# -- running ---------------------------------------------------------------------------------


def environment() -> dict[str, Any]:
    def out(*cmd: str) -> str:
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=10, cwd=ROOT)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return p.stdout.strip() if p.returncode == 0 else ""

    return {"measured_at": time.strftime("%Y-%m-%d %H:%M:%S"), "kernel": out("uname", "-r") or "unknown",
            "cpus": os.cpu_count(), "git_commit": out("git", "rev-parse", "--short", "HEAD") or "unknown",
            "dcemu_version": out(str(DCEMU), "--version") or "unknown",
            "net.core.rmem_max": out("sysctl", "-n", "net.core.rmem_max"), "net.core.wmem_max": out("sysctl", "-n", "net.core.wmem_max")}


def preflight() -> None:
    require_root()
    missing = [t for t in ("iperf3", "ping", "setpriv") if shutil.which(t) is None]
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)} (make setup)")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None, paths: Paths | None = None) -> int:
    paths = paths or Paths()
    args = parse_args(argv)
    preflight()
    results = new_results(args.repeats, args.only)
    results["environment"] = environment()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    # Ctrl-C and SIGTERM unwind every context manager: namespaces, dcemu and iperf3 go.
    old = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            measure_sections(results, args.only)
        except BaseException as e:
            partial = write_partial(results, paths)
            if results["figures"]:
                print(render_table(results))
            why = "interrupted" if isinstance(e, KeyboardInterrupt) else f"{type(e).__name__}: {e}"
            log(f"stopped early ({why}); what was measured is in {partial}")
            if isinstance(e, KeyboardInterrupt):
                return 130
            raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    table = render_table(results)
    print(table)
    for p in write_outputs(results, table, paths, args.update_readme, stamp):
        log(f"wrote {p}")
    return 0


def measure_sections(results: dict, sections: list[str]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dclab-bench-"))
    log(f"dcemu logs and stats of this run: {tmp} (removed if the bench completes)")
    for s in sections:
        t0 = time.monotonic()
        SECTION_FUNCS[s](results, tmp / s)
        log(f"section {s} took {time.monotonic() - t0:.0f} s")
    shutil.rmtree(tmp, ignore_errors=True)


# -- measuring tools -------------------------------------------------------------------------


@contextmanager
def iperf_server(ns: Namespaces) -> Iterator[None]:
    p = subprocess.Popen(ns.exec(ns.server, "iperf3", "-s", "-B", SERVER), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    try:
        yield
    finally:
        p.kill()
        p.wait()


def iperf(ns: Namespaces, *args: str, seconds: int) -> dict:
    out = subprocess.run(
        ns.exec(ns.client, "iperf3", "-c", SERVER, "-J", "-t", str(seconds), *args),
        capture_output=True, text=True, timeout=seconds + 30,
    )
    data = json.loads(out.stdout or "{}")
    if "error" in data or "end" not in data:
        raise RuntimeError(f"iperf3 {' '.join(args)}: {data.get('error', out.stderr.strip() or 'no result')}")
    return data


def tcp_gbps(ns: Namespaces) -> float:
    d = iperf(ns, "-R", seconds=TCP_SECONDS)
    return d["end"]["sum_received"]["bits_per_second"] / 1e9


def udp_rate(ns: Namespaces, bitrate: str, length: int, *extra: str) -> dict:
    """UDP from server to client; receiver-side per-interval packets and bytes."""
    return iperf(ns, "-R", "-u", "-b", bitrate, "-l", str(length), "-i", "0.5", *extra, seconds=UDP_SECONDS)


def udp_kpps(ns: Namespaces) -> float:
    return udp_flood(ns)["kpps"]


def udp_flood(ns: Namespaces) -> dict[str, float]:
    """A UDP sender at unlimited rate (64-byte payload): the packets/s the receiver got, the
    flood's seconds, and how many datagrams the client's kernel dropped for a full socket
    buffer meanwhile (the receiving process not keeping up)."""
    before = udp_rcvbuf_errors(ns)
    s = udp_rate(ns, "0", 64)["end"]["sum"]
    return {"kpps": (s["packets"] - s["lost_packets"]) / s["seconds"] / 1e3, "seconds": s["seconds"],
            "rcvbuf_errors": udp_rcvbuf_errors(ns) - before}


def rtts_ms(ns: Namespaces, count: int = PING_COUNT) -> list[float]:
    out = subprocess.run(
        ns.exec(ns.client, "ping", "-c", str(count), "-i", "0.01", "-s", "56", SERVER),
        capture_output=True, text=True, timeout=60,
    ).stdout
    rtts = [float(m) for m in re.findall(r"time=([\d.]+) ms", out)]
    if len(rtts) < count // 2:
        raise RuntimeError(f"ping: {len(rtts)} of {count} replies")
    return rtts


# ICMP echo as ping does it (56-byte payload, one every 10 ms, the send time taken just
# before sendto, the reply's time the kernel's receive timestamp), but printing every RTT
# in nanoseconds: ping prints 0.1 ms steps from 10 ms up, too coarse for a 0.2 ms target.
PINGER = r"""
import json, os, select, socket, struct, sys, time
dst, count, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
ident, payload = os.getpid() & 0xFFFF, bytes(56)
def csum(b):
    t = sum(struct.unpack(f"!{len(b) // 2}H", b))
    t = (t >> 16) + (t & 0xFFFF)
    return ~(t + (t >> 16)) & 0xFFFF
sent, rtts, seq, t_next, end = {}, {}, 0, time.monotonic(), None
while True:
    now = time.monotonic()
    if seq < count and now >= t_next:
        c = csum(struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload)
        pkt = struct.pack("!BBHHH", 8, 0, c, ident, seq) + payload
        sent[seq] = time.time_ns()
        s.sendto(pkt, (dst, 0))
        seq, t_next = seq + 1, t_next + interval
        if seq == count:
            end = now + 2.0
    if end is not None and (len(rtts) == count or now > end):
        break
    wait = (t_next if seq < count else end) - time.monotonic()
    if select.select([s], [], [], max(0.0, wait))[0]:
        data, anc, _, _ = s.recvmsg(2048, 256)
        ts = [struct.unpack("qq", d[:16]) for lvl, typ, d in anc if lvl == socket.SOL_SOCKET and typ == SO_TIMESTAMPNS]
        ihl = (data[0] & 0x0F) * 4
        typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if typ == 0 and rid == ident and rseq in sent and rseq not in rtts and ts:
            rtts[rseq] = (ts[0][0] * 10**9 + ts[0][1] - sent[rseq]) / 1e6
print(json.dumps([rtts[k] for k in sorted(rtts)]))
"""


def icmp_rtts_ms(ns: Namespaces, count: int = PING_COUNT) -> list[float]:
    """RTTs in ms of ICMP echoes every 10 ms, with microsecond resolution (PINGER)."""
    out = subprocess.run(ns.exec(ns.client, sys.executable, "-c", PINGER, SERVER, str(count), "0.01"),
                         capture_output=True, text=True, timeout=count * 0.01 + 30)
    if out.returncode != 0:
        raise RuntimeError(f"ICMP echo: {out.stderr.strip()[-500:]}")
    rtts = json.loads(out.stdout)
    if len(rtts) < count // 2:
        raise RuntimeError(f"ICMP echo: {len(rtts)} of {count} replies")
    return rtts


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def udp_rcvbuf_errors(ns: Namespaces) -> int:
    """Datagrams the client's kernel dropped for a full socket buffer (Udp RcvbufErrors)."""
    lines = [ln.split() for ln in sh(*ns.exec(ns.client, "cat", "/proc/net/snmp")).stdout.splitlines() if ln.startswith("Udp:")]
    return int(lines[1][lines[0].index("RcvbufErrors")])


def rate_error(ns: Namespaces, configured_bps: float, length: int) -> dict:
    """Offers 20% more than the leg's rate; the client's iperf3 counts what arrives per
    half second. Bytes on the leg = payload + 28 (IP/UDP) + 2 (PDCP) per datagram."""
    before = udp_rcvbuf_errors(ns)
    # A 4 MB socket buffer, so a receiver the VM delays briefly does not drop.
    d = udp_rate(ns, str(int(configured_bps * 1.2)), length, "-w", "4M")
    socket_drops = udp_rcvbuf_errors(ns) - before
    intervals = d["intervals"][2:-1]  # skip start-up and the last partial interval
    bits = sum(i["sum"]["bytes"] * 8 + i["sum"]["packets"] * 30 * 8 for i in intervals)
    secs = sum(i["sum"]["seconds"] for i in intervals)
    measured = bits / secs
    return {"configured_mbps": configured_bps / 1e6, "measured_mbps": measured / 1e6,
            "error_pct": (measured - configured_bps) / configured_bps * 100, "receiver_socket_drops": socket_drops}


def large_tcp_buffers(ns: Namespaces) -> None:
    """LARGE_TCP_BUFFERS in both of the bench's namespaces (per-namespace sysctls)."""
    for n in (ns.server, ns.client):
        set_sysctls(ns, n, LARGE_TCP_BUFFERS)


def set_sysctls(ns: Namespaces, n: str, values: dict[str, str]) -> None:
    """Sets per-namespace sysctls in one of the bench's namespaces, read back: sysctl -w
    exits 0 on some refusals."""
    for name, value in values.items():
        sh(*ns.exec(n, "sysctl", "-q", "-w", f"{name}={value}"))
        got = " ".join(sh(*ns.exec(n, "sysctl", "-n", name)).stdout.split())
        if got != value:
            raise RuntimeError(f"{name} in {n} is {got!r} after setting {value!r}")


def scenario(ns: Namespaces, legs: list[tuple[str, str]], delay_ms: float = 0.0, ratio: str = "[1, 1]",
             batch: int = 100, queue: str = "queue_packets = 10000") -> str:
    text = topology_toml(ns.server, ns.client, ns.tag)
    text += f"[split]\nbatch = {batch}\nratio = {ratio}\n"
    for i, (name, rate) in enumerate(legs):
        text += (f'[[legs]]\nname = "{name}"\n[legs.downlink]\nrate = "{rate}"\n{queue}\n'
                 f'delay = {{ distribution = "constant", ms = {delay_ms} }}\n')
        if i == 0:
            text += (f'[legs.uplink]\nrate = "unlimited"\nqueue_packets = 10000\n'
                     f'delay = {{ distribution = "constant", ms = {delay_ms} }}\n')
    return text


def note_config(results: dict, name: str, scenario_text: str, extra_args: tuple[str, ...] = ()) -> None:
    """The dcemu options and scenario a section used (its namespace names aside)."""
    results["dcemu"]["configs"].setdefault(name, {"extra_args": list(extra_args), "scenario": scenario_text})


def summary_of(emu: Emulator) -> dict:
    s = emu.summary()
    if s is None:
        raise RuntimeError(f"dcemu wrote no summary: {emu.log.read_text().strip()[-500:]}")
    return s


def dcemu_losses(s: dict) -> dict[str, int]:
    """dcemu's own losses in a summary: packets the kernel dropped on the TUN queue before
    dcemu read them, failed TUN writes, and arrivals dropped for want of a packet buffer."""
    rt, eng = s["runtime"], s.get("engine", {})
    return {"tun_kernel_drops": int(rt.get("tun_kernel_drops", 0)), "tun_write_errors": int(rt.get("tun_write_errors", 0)),
            "dropped_no_buffer": int(eng.get("dropped_no_buffer", 0))}


def forwarded_bytes(s: dict) -> int:
    return sum(leg["downlink"]["bytes_out"] + (leg.get("uplink") or {}).get("bytes_out", 0) for leg in s["legs"])


# -- sections --------------------------------------------------------------------------------


def section_kernel(results: dict, tmp: Path) -> None:
    log("kernel: plain veth pair between the two namespaces")
    with Namespaces() as ns, veth_link(ns, SERVER, CLIENT), iperf_server(ns):
        for i in range(results["repeats"]):
            tcp = tcp_gbps(ns)
            udp = udp_kpps(ns)
            rtt = rtts_ms(ns)
            record_run(results, "kernel", i, {"kernel.tcp_gbps": tcp, "kernel.udp_kpps": udp,
                                              "kernel.rtt_p50_us": pct(rtt, .5) * 1e3, "kernel.rtt_p99_us": pct(rtt, .99) * 1e3})


def kernel_rtt_baseline_us(results: dict) -> float:
    """The kernel path's median RTT of this bench run: the kernel section's, or a quick
    measurement of it when that section was not run."""
    f = results["figures"]
    if "kernel.rtt_p50_us" not in f and "unlimited.kernel_rtt_baseline_us" not in f:
        log("unlimited: the kernel section was not run; measuring the kernel veth RTT baseline")
        with Namespaces() as ns, veth_link(ns, SERVER, CLIENT):
            rtt = rtts_ms(ns)
        add(results, "unlimited.kernel_rtt_baseline_us", pct(rtt, .5) * 1e3)
        log(f"kernel veth RTT baseline: p50 {pct(rtt, .5) * 1e3:.0f} us")
    key = "kernel.rtt_p50_us" if "kernel.rtt_p50_us" in f else "unlimited.kernel_rtt_baseline_us"
    return f[key]["median"]


def section_unlimited(results: dict, tmp: Path) -> None:
    base_us = kernel_rtt_baseline_us(results)
    log(f"unlimited: dcemu, two unlimited legs, no delay (kernel veth median RTT {base_us:.0f} us)")
    with Namespaces() as ns:
        sc = scenario(ns, [("leg1", "unlimited"), ("leg2", "unlimited")], queue="")
        note_config(results, "unlimited", sc)
        for i in range(results["repeats"]):
            with Emulator(sc, tmp / f"rtt-{i}") as emu:
                rtt = rtts_ms(ns)
            rtt_loss = dcemu_losses(summary_of(emu))
            with Emulator(sc, tmp / f"rtt-busy-{i}", ("--busy-poll",)):
                rtt_busy = rtts_ms(ns)
            with Emulator(sc, tmp / f"tcp-{i}") as emu, iperf_server(ns):
                tcp = tcp_gbps(ns)
            s = summary_of(emu)
            tcp_loss = dcemu_losses(s)
            rt = s["runtime"]
            with Emulator(sc, tmp / f"udp-{i}") as emu, iperf_server(ns):
                flood = udp_flood(ns)
            udp, us = flood["kpps"], summary_of(emu)
            udp_loss = dcemu_losses(us)
            forwarded_kpps = us["runtime"]["tun_write_packets"] / flood["seconds"] / 1e3
            detail(results, "unlimited_losses", {"rtt": rtt_loss, "tcp": tcp_loss, "udp": udp_loss})
            detail(results, "unlimited_tcp_runtime", {k: rt[k] for k in ("cpu_user_s", "cpu_sys_s", "tun_read_packets", "tun_write_packets",
                                                                         "wakeups") if k in rt} | {"forwarded_bytes": forwarded_bytes(s)})
            record_run(results, "unlimited", i, {
                "unlimited.rtt_p50_us": pct(rtt, .5) * 1e3, "unlimited.rtt_p99_us": pct(rtt, .99) * 1e3,
                "unlimited.added_rtt_p50_us": pct(rtt, .5) * 1e3 - base_us, "unlimited.added_rtt_p99_us": pct(rtt, .99) * 1e3 - base_us,
                "unlimited.rtt_p50_us_busy_poll": pct(rtt_busy, .5) * 1e3, "unlimited.rtt_p99_us_busy_poll": pct(rtt_busy, .99) * 1e3,
                "unlimited.added_rtt_p50_us_busy_poll": pct(rtt_busy, .5) * 1e3 - base_us,
                "unlimited.added_rtt_p99_us_busy_poll": pct(rtt_busy, .99) * 1e3 - base_us,
                "unlimited.tcp_gbps": tcp,
                "unlimited.cpu_s_per_gb": (rt["cpu_user_s"] + rt["cpu_sys_s"]) / (forwarded_bytes(s) / 1e9),
                "unlimited.lateness_p50_us": rt["lateness"]["p50_us"], "unlimited.lateness_p99_us": rt["lateness"]["p99_us"],
                "unlimited.lost_packets": sum(rtt_loss.values()) + sum(tcp_loss.values()),
                "unlimited.udp_kpps": udp, "unlimited.lost_packets_udp": sum(udp_loss.values()),
                "unlimited.udp_forwarded_kpps": forwarded_kpps, "unlimited.udp_receiver_drops": flood["rcvbuf_errors"],
            }, note="dcemu losses by counter (RTT/TCP/UDP runs): " + ", ".join(f"{k} {rtt_loss[k]}/{tcp_loss[k]}/{udp_loss[k]}" for k in rtt_loss))


def section_delay(results: dict, tmp: Path) -> None:
    log("delay: dcemu, two unlimited legs, 10 ms each way, large TCP buffers in the namespaces")
    with Namespaces() as ns:
        large_tcp_buffers(ns)
        sc = scenario(ns, [("leg1", "unlimited"), ("leg2", "unlimited")], delay_ms=10.0, queue="")
        note_config(results, "delay", sc)
        for i in range(results["repeats"]):
            with Emulator(sc, tmp / f"tcp-{i}"), iperf_server(ns):
                tcp = tcp_gbps(ns)
            with Emulator(sc, tmp / f"rtt-{i}"):
                err = [x - 20.0 for x in icmp_rtts_ms(ns)]
            with Emulator(sc, tmp / f"rtt-busy-{i}", ("--busy-poll",)):
                err_busy = [x - 20.0 for x in icmp_rtts_ms(ns)]
            record_run(results, "delay", i, {"delay.tcp_gbps": tcp, "delay.rtt_error_p50_ms": pct(err, .5),
                                             "delay.rtt_error_p99_ms": pct(err, .99),
                                             "delay.rtt_error_p50_ms_busy_poll": pct(err_busy, .5),
                                             "delay.rtt_error_p99_ms_busy_poll": pct(err_busy, .99)})


def section_lateness(results: dict, tmp: Path) -> None:
    log("lateness: default scenario (2 x 20 Mbit/s, 10 ms +- 1 ms), PDCP reordering on and off, and on with --busy-poll")
    for suffix, extra, args in (("", "", ()), ("_no_reordering", "[pdcp]\nreordering = false\n", ()),
                                ("_busy_poll", "", ("--busy-poll",))):
        for i in range(results["repeats"]):
            with Namespaces() as ns:
                text = topology_toml(ns.server, ns.client, ns.tag) + extra
                note_config(results, f"lateness{suffix}", text, args)
                with Emulator(text, tmp / f"default{suffix}-{i}", args) as emu, iperf_server(ns):
                    mbps = tcp_gbps(ns) * 1e3
                s = summary_of(emu)
            rt, rx = s["runtime"], s["bearers"][0].get("rx") or {}
            values = {f"lateness.tcp_mbps{suffix}": mbps}
            for k in ("lateness", "service_lateness", "write_cost"):
                for q in ("p50", "p99"):
                    values[f"lateness.{k}_{q}_us{suffix}"] = rt[k][f"{q}_us"]
            # A t-Reordering expiry releases everything held at one instant.
            values[f"lateness.t_reordering_expiries{suffix}"] = rx.get("timer_expiries", 0)
            values[f"lateness.reorder_buffer_high_water{suffix}"] = rx.get("buffer_high_water", 0)
            record_run(results, "lateness", i, values)


def _dclab_throughput_ngtcp2(results: dict, out: Path) -> None:
    """ngtcp2 through the same DC pair with the project's own experiment (its own
    namespaces, host settings under its journal, its own clean-up)."""
    n = results["repeats"]
    cmd = [sys.executable, "-m", "dclab.cli", "run", "throughput", "--stack", "ngtcp2",
           "--bw", "1000,1000", "--delay", "5,5", "--delay-cov", "0", "--split", "50:50", "--batch", "100",
           "--queue", "1000", "--uplink-bw", "100000", "--uplink-delay", "5",  # 100 Gbit/s: dclab's highest uplink rate
           "--size", NGTCP2_SIZE, "--timeout", str(NGTCP2_TIMEOUT_S), "--udp-buffer", "large",
           "--reps", str(n), "--on-error", "continue", "--out", str(out)]
    results["details"]["dc5g_ngtcp2_command"] = " ".join(cmd[1:])
    log(f"dc5g: ngtcp2 with `dclab run throughput` ({n} repetitions of {NGTCP2_SIZE}) into {out}")
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = p.communicate(timeout=120 + n * (NGTCP2_TIMEOUT_S + 40))
    finally:
        stop_group(p, grace_s=30)  # interrupted or too long: dclab cleans up on SIGTERM
    results["details"]["dc5g_ngtcp2_output_tail"] = output.strip()[-1500:]
    ok = 0
    for i, f in enumerate(sorted(out.glob("rep-*/result.json"))):
        r = json.loads(f.read_text())
        if not r.get("ok"):
            log(f"dc5g: ngtcp2 repetition {i + 1} failed: {r.get('error')}")
            detail(results, "dc5g_ngtcp2_failed", {"rep": i + 1, "error": r.get("error")})
            continue
        record_run(results, "dc5g ngtcp2", i, {"dc5g.ngtcp2_gbps": r["metrics"]["goodput_mbps"] / 1e3})
        ok += 1
    if ok == 0:
        # The TCP figures stand and the other sections still run; the table says why.
        last = (output.strip().splitlines() or ["no output"])[-1]
        why = f"`dclab run throughput --stack ngtcp2` exited {p.returncode} with no successful repetition ({last})"
        results["skipped"]["dc5g (ngtcp2)"] = why
        log(f"dc5g: ngtcp2 failed: {why}; its output ends: {output.strip()[-800:]}")


def section_dc5g(results: dict, tmp: Path) -> None:
    log("dc5g: DC pair of 2 x 1 Gbit/s legs, 5 ms each way, split 50:50, queue 1000, uplink unlimited 5 ms")
    with Namespaces() as ns:
        large_tcp_buffers(ns)
        sc = scenario(ns, [("leg1", "1gbit"), ("leg2", "1gbit")], delay_ms=5.0, queue="queue_packets = 1000")
        note_config(results, "dc5g", sc)
        for i in range(results["repeats"]):
            gbps, drops = {}, {}
            for key, rmem in (("dc5g.tcp_gbps", DC5G_CLIENT_RMEM), ("dc5g.tcp_overflow_gbps", LARGE_TCP_BUFFERS)):
                set_sysctls(ns, ns.client, rmem)
                with Emulator(sc, tmp / f"tcp-{i}-{key}") as emu, iperf_server(ns):
                    gbps[key] = tcp_gbps(ns)
                s = summary_of(emu)
                drops[key] = [leg["downlink"]["dropped_queue_packets"] for leg in s["legs"]]
            # s: the overflowing run's summary (the last of the two)
            expiries = sum(b["rx"]["timer_expiries"] for b in s["bearers"] if b.get("rx"))
            record_run(results, "dc5g", i, {**gbps, "dc5g.t_reordering_expiries": expiries},
                       note=f"leg queue drops {drops['dc5g.tcp_gbps']} (8 MB), {drops['dc5g.tcp_overflow_gbps']} (64 MB)")
    _dclab_throughput_ngtcp2(results, tmp / "ngtcp2")


def section_rate(results: dict, tmp: Path) -> None:
    log("rate: one 20 Mbit/s leg, then one 1 Gbit/s leg")
    for key, rate, bps, length in (("20mbit", "20mbit", 20e6, 1200), ("1gbit", "1gbit", 1e9, 1400)):
        for i in range(results["repeats"]):
            with Namespaces() as ns:
                # Reordering off: overload drops numbered PDUs, and each gap would stall the
                # receiver for t-Reordering; this measures the rate stage alone.
                text = topology_toml(ns.server, ns.client, ns.tag) + "[pdcp]\nreordering = false\n" + (
                    f'[[legs]]\nname = "leg1"\n[legs.downlink]\nrate = "{rate}"\nqueue_packets = 1000\n'
                    'delay = { distribution = "constant", ms = 0 }\n'
                    '[legs.uplink]\nrate = "unlimited"\ndelay = { distribution = "constant", ms = 0 }\n'
                    '[[bearers]]\nname = "sc"\nmode = "sc"\nlegs = ["leg1"]\n')
                note_config(results, f"rate_{key}", text)
                with Emulator(text, tmp / f"{key}-{i}") as emu, iperf_server(ns):
                    r = rate_error(ns, bps, length)
                s = summary_of(emu)
            r["leg_queue_drops"] = s["legs"][0]["downlink"]["dropped_queue_packets"]
            r["saturated"] = r["leg_queue_drops"] > 0
            # A dcemu stall longer than the leg's queue lasts (1000 packets) idles the
            # leg: the packets wait unread in the kernel. Kept so a low run is explained.
            r["dcemu_max_lateness_ms"] = s["runtime"]["lateness"]["max_us"] / 1e3
            detail(results, f"rate_{key}", r)
            detail(results, f"rate_{key}_saturated", r["saturated"])
            record_run(results, "rate", i, {f"rate.error_pct_{key}": r["error_pct"]},
                       note=f"measured {r['measured_mbps']:.3f} Mbit/s, saturated={r['saturated']}, receiver socket drops "
                            f"{r['receiver_socket_drops']}, longest dcemu stall {r['dcemu_max_lateness_ms']:.1f} ms")


def tun_offload_supported() -> bool:
    """Whether this dcemu has `--tun-offload` (`dcemu --help` or `dcemu run --help` lists it)."""
    text = ""
    for args in (["--help"], ["run", "--help"]):
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            text += subprocess.run([str(DCEMU), *args], capture_output=True, text=True, timeout=10).stdout
    return "--tun-offload" in text


def section_offload(results: dict, tmp: Path) -> None:
    if not tun_offload_supported():
        why = f"`{DCEMU.relative_to(ROOT) if DCEMU.is_relative_to(ROOT) else DCEMU} run --help` does not list --tun-offload"
        results["skipped"]["offload"] = why
        log(f"offload: skipped ({why})")
        return
    log("offload: TCP goodput per TUN offload mode (all, read, write, none), UDP kpps with all and none")
    with Namespaces() as ns:
        sc = scenario(ns, [("leg1", "unlimited"), ("leg2", "unlimited")], queue="")
        for mode in OFFLOAD_MODES:
            note_config(results, f"offload_{mode}", sc, ("--tun-offload", mode))
        for i in range(results["repeats"]):
            values = {}
            for mode in OFFLOAD_MODES:
                with Emulator(sc, tmp / f"tcp-{mode}-{i}", extra_args=("--tun-offload", mode)), iperf_server(ns):
                    values[f"offload.tcp_gbps_{mode}"] = tcp_gbps(ns)
            for mode in ("all", "none"):
                with Emulator(sc, tmp / f"udp-{mode}-{i}", extra_args=("--tun-offload", mode)), iperf_server(ns):
                    values[f"offload.udp_kpps_{mode}"] = udp_kpps(ns)
            record_run(results, "offload", i, values)


SECTION_FUNCS: dict[str, Callable[[dict, Path], None]] = {
    "kernel": section_kernel, "unlimited": section_unlimited, "delay": section_delay, "lateness": section_lateness,
    "dc5g": section_dc5g, "rate": section_rate, "offload": section_offload,
}


if __name__ == "__main__":
    sys.exit(main())
