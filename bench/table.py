"""The bench's markdown table: one row per measure, dcemu beside the kernel path, and each
target with whether the measured median meets it; and where it goes on the benchmarks page
(docs/explanation/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from bench.figures import OFFLOAD_MODES, SECTIONS, fmt_figure


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
    Row("TCP goodput through an NR carrier (nr:good: 100 MHz, 256QAM, 4 layers, DDDSU, HARQ; iperf3 -R 8 s after "
        "2 s of slow start, 5 ms each way, large buffers)", "cells.nr_tcp_gbps", None, Target(">=", 1.0, ">= 1 Gbit/s")),
    Row("  the device's capacity in the model (dcemu cell-capacity, 600 s, less HARQ's resent tenth)", "cells.nr_model_gbps"),
    Row("  TCP's share of it", "cells.nr_share_of_model", None, Target(">=", 0.9, ">= 0.9 (within 10 %)")),
    Row("  departure lateness, p99 (a slot's block leaves at once: 100 packets written one after another)",
        "cells.nr_lateness_p99_us"),
    Row("TCP goodput through EN-DC (lte:good master + nr:good secondary, static split in their capacities' ratio)",
        "cells.endc_tcp_gbps"),
    Row("  the LTE master's share of the bytes both cells carried (4:96 sent)", "cells.endc_lte_share"),
    Row("  departure lateness with both cells, p50", "cells.endc_lateness_p50_us"),
    Row("  departure lateness with both cells, p99", "cells.endc_lateness_p99_us"),
    Row("  earliest packet of each write batch (timer precision), p99", "cells.endc_service_lateness_p99_us"),
    Row("EN-DC with TCP paced at 40 Mbit/s (iperf3 -b 40M), the lateness section's rate", "cells.endc_paced_tcp_mbps"),
    Row("  departure lateness, p50", "cells.endc_paced_lateness_p50_us"),
    Row("  departure lateness, p99 (HARQ's late blocks hold PDCP, which then releases a burst at one instant)",
        "cells.endc_paced_lateness_p99_us"),
    Row("  earliest packet of each write batch (timer precision), p50", "cells.endc_paced_service_lateness_p50_us"),
    Row("  earliest packet of each write batch (timer precision), p99", "cells.endc_paced_service_lateness_p99_us", None,
        Target("<=", 200.0, "<= 200 us")),
    Row("  the same paced TCP through two plain 1 Gbit/s legs (5 ms), timer precision p50",
        "cells.plain_paced_service_lateness_p50_us"),
    Row("  the same paced TCP through two plain 1 Gbit/s legs (5 ms), timer precision p99",
        "cells.plain_paced_service_lateness_p99_us"),
    Row("  EN-DC paced with idle CPUs left to halt (dcemu run --idle-halt), timer precision p50",
        "cells.endc_paced_halt_service_lateness_p50_us"),
    Row("  EN-DC paced with idle CPUs left to halt (dcemu run --idle-halt), timer precision p99",
        "cells.endc_paced_halt_service_lateness_p99_us"),
    Row("Simulation: engine events per second, one EN-DC run (TCP, 500 MB over endc:good,good, ddds)",
        "sim.endc_events_per_s"),
    Row("  that run's wall time, `dclab run throughput --backend sim` from start to end", "sim.endc_run_s"),
    # The paper campaign is 20,890 runs (10 repetitions); 15 minutes for all of it (issue 48).
    Row("Simulation: runs per second of the paper campaign's mix (its shard 1/20 at one repetition, --jobs 2)",
        "sim.paper_runs_per_s", None, Target(">=", 23.2, ">= 23.2 runs/s (the whole campaign in 15 min)")),
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
        lines.append(f"| {label} | {fmt_figure(row.dcemu, d) if d and row.dcemu else '-'} | "
                     f"{fmt_figure(row.kernel, k) if k and row.kernel else '-'} | "
                     f"{target_cell(row, figs)} |")
    env = r.get("environment", {})
    only = "" if r.get("sections") == list(SECTIONS) else f" (sections: {', '.join(r.get('sections', []))})"
    lines.append(f"\nEach figure: the median of {r['repeats']} run(s), every run in brackets. Measured {env.get('measured_at', '?')} "
                 f"on {env.get('cpus', '?')} cores, kernel {env.get('kernel', '?')}, commit {env.get('git_commit', '?')}, "
                 f"by `bench/run.py`{only}.")
    for section, why in r.get("skipped", {}).items():
        lines.append(f"\nSkipped `{section}`: {why}.")
    return "\n".join(lines)


START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def replace_between_markers(text: str, table: str) -> str:
    if START not in text or END not in text or text.index(START) > text.index(END):
        raise ValueError(f"the page has no {START} ... {END} markers")
    a, b = text.index(START) + len(START), text.index(END)
    return text[:a] + "\n" + table + "\n" + text[b:]
