"""The bench's sections: each measures its figures `repeats` times in namespaces it
creates and removes (bench/figures.py says what each figure is)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.cells import section_cells
from bench.figures import OFFLOAD_MODES, add, detail, log, record_run
from bench.sim import section_sim
from bench.tools import (
    LARGE_TCP_BUFFERS,
    dcemu_losses,
    forwarded_bytes,
    icmp_rtts_ms,
    iperf_server,
    large_tcp_buffers,
    note_config,
    pct,
    rate_error,
    rtts_ms,
    runtime_of,
    scenario,
    set_sysctls,
    summary_of,
    tcp_gbps,
    udp_flood,
    udp_kpps,
)
from dclab.dcemu.process import Emulator, topology_toml
from dclab.paths import CLIENT_ADDR as CLIENT
from dclab.paths import DCEMU, ROOT
from dclab.paths import SERVER_ADDR as SERVER
from dclab.testbed.netns import Namespaces, veth_link
from dclab.testbed.procs import stop_group

# The dc5g capacity run caps the client's receive buffer at 8 MB: with tcp_adv_win_scale 1
# the window stays under 4 MB, the pair's BDP (2 Gbit/s x 10 ms = 2.5 MB) plus part of
# its 2 x 1000-packet queues, so TCP fills both legs without overflowing them. Overflow
# is measured too (large buffers): every drop holds the PDCP receiver for t-Reordering
# (200 ms), which is the DC behaviour the emulator exists to show, not its own cost.
DC5G_CLIENT_RMEM = {"net.ipv4.tcp_rmem": "4096 131072 8388608"}
NGTCP2_SIZE = "1250MB"  # about 5 s at 2 Gbit/s
NGTCP2_TIMEOUT_S = 60  # per download; the bench's wait on the whole dclab run is bounded too


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
            rt = runtime_of(s)
            with Emulator(sc, tmp / f"udp-{i}") as emu, iperf_server(ns):
                flood = udp_flood(ns)
            udp, us = flood["kpps"], summary_of(emu)
            udp_loss = dcemu_losses(us)
            forwarded_kpps = runtime_of(us).tun_write_packets / flood["seconds"] / 1e3
            detail(results, "unlimited_losses", {"rtt": rtt_loss, "tcp": tcp_loss, "udp": udp_loss})
            kept = ("cpu_user_s", "cpu_sys_s", "tun_read_packets", "tun_write_packets", "wakeups")
            detail(results, "unlimited_tcp_runtime", {k: getattr(rt, k) for k in kept} | {"forwarded_bytes": forwarded_bytes(s)})
            record_run(results, "unlimited", i, {
                "unlimited.rtt_p50_us": pct(rtt, .5) * 1e3, "unlimited.rtt_p99_us": pct(rtt, .99) * 1e3,
                "unlimited.added_rtt_p50_us": pct(rtt, .5) * 1e3 - base_us, "unlimited.added_rtt_p99_us": pct(rtt, .99) * 1e3 - base_us,
                "unlimited.rtt_p50_us_busy_poll": pct(rtt_busy, .5) * 1e3, "unlimited.rtt_p99_us_busy_poll": pct(rtt_busy, .99) * 1e3,
                "unlimited.added_rtt_p50_us_busy_poll": pct(rtt_busy, .5) * 1e3 - base_us,
                "unlimited.added_rtt_p99_us_busy_poll": pct(rtt_busy, .99) * 1e3 - base_us,
                "unlimited.tcp_gbps": tcp,
                "unlimited.cpu_s_per_gb": (rt.cpu_user_s + rt.cpu_sys_s) / (forwarded_bytes(s) / 1e9),
                "unlimited.lateness_p50_us": rt.lateness.p50_us, "unlimited.lateness_p99_us": rt.lateness.p99_us,
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
            rt, rx = runtime_of(s), s.bearers[0].rx
            values = {f"lateness.tcp_mbps{suffix}": mbps}
            for k in ("lateness", "service_lateness", "write_cost"):
                for q in ("p50", "p99"):
                    values[f"lateness.{k}_{q}_us{suffix}"] = getattr(getattr(rt, k), f"{q}_us")
            # A t-Reordering expiry releases everything held at one instant.
            values[f"lateness.t_reordering_expiries{suffix}"] = rx.timer_expiries if rx else 0
            values[f"lateness.reorder_buffer_high_water{suffix}"] = rx.buffer_high_water if rx else 0
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
                drops[key] = [leg.downlink.dropped_queue_packets for leg in s.legs]
            # s: the overflowing run's summary (the last of the two)
            expiries = sum(b.rx.timer_expiries for b in s.bearers if b.rx)
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
            r["leg_queue_drops"] = s.legs[0].downlink.dropped_queue_packets
            r["saturated"] = r["leg_queue_drops"] > 0
            # A dcemu stall longer than the leg's queue lasts (1000 packets) idles the
            # leg: the packets wait unread in the kernel. Kept so a low run is explained.
            r["dcemu_max_lateness_ms"] = runtime_of(s).lateness.max_us / 1e3
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
    "dc5g": section_dc5g, "rate": section_rate, "offload": section_offload, "cells": section_cells,
    "sim": section_sim,
}


def measure_sections(results: dict, sections: list[str]) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dclab-bench-"))
    log(f"dcemu logs and stats of this run: {tmp} (removed if the bench completes)")
    for s in sections:
        t0 = time.monotonic()
        SECTION_FUNCS[s](results, tmp / s)
        log(f"section {s} took {time.monotonic() - t0:.0f} s")
    shutil.rmtree(tmp, ignore_errors=True)
