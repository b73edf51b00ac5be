"""Bounds on what real runs measure, each derived from runs kept in the repository.

A test that measures a real run (through dcemu, or a simulation) checks a value with
``check_bound(NAME, value)``: the value must lie in ``BOUNDS[NAME]``. With
``DCLAB_MEASURE_LOG=PATH`` in the environment every such value is appended to PATH instead of
checked, which is how the kept runs were made: ``scripts/measure_bounds.py`` runs the tests that
check bounds several times, some rounds with a core kept busy, and writes
``tests/data/measured.jsonl`` (one line per value: bound, value, commit, time, test, busy).

``tests/test_measured_bounds.py`` holds every bound to those runs: at least MIN_RUNS of
them (MIN_BUSY busy), each inside its bound by NOISE_MARGIN of their standard deviation,
and the bound tight enough that a regression of 20 % fails (a lower bound above 0.8 x the
kept median, an upper bound below 1.2 x it) unless ``tolerance`` and ``what`` say why the
runs spread wider. A ``ceiling`` is a physical limit (a link's capacity), as is a
``floor`` (a round trip), and both are exempt from those rules. A bound on a quantile of
dcemu's latency histogram admits the bucket next beyond its kept runs (``grid_reach``).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).with_name("data") / "measured.jsonl"
REGRESSION = 0.2  # a change of this much must fail the check
MIN_RUNS = 10  # kept runs a bound is derived from, at least
MIN_BUSY = 3  # of them, runs with one core kept busy (scripts/measure_bounds.py --busy)
# Every kept run lies at least this many of its bound's noise (the kept runs' standard
# deviation) inside the bound. With ten runs the worst lies about 1.5 deviations from the
# mean, so a bound at 2 more is 3.5 from it: a false failure about once in 4,000 runs of a
# bound if the runs were normal, and the suite checks some 60 real-run bounds.
NOISE_MARGIN = 2.0


@dataclass(frozen=True)
class Bound:
    """``lo <= value <= hi``, derived from the kept runs; ``ceiling`` a physical limit."""

    lo: float | None = None
    hi: float | None = None
    ceiling: float | None = None
    floor: float | None = None
    what: str = ""  # what is measured, and where a ceiling or floor comes from
    # The change it must catch; above REGRESSION only where the kept runs spread wider, and
    # ``what`` then says why.
    tolerance: float = 0.2
    # Checked only by a test that runs with DCLAB_SLOW=1 (the release check); its kept runs
    # are held to the same rules there (tests/test_measured_bounds.py).
    slow: bool = False

    def holds(self, v: float) -> bool:
        return all((self.lo is None or v >= self.lo, self.hi is None or v <= self.hi,
                    self.ceiling is None or v <= self.ceiling, self.floor is None or v >= self.floor))

    def __str__(self) -> str:
        parts = [f">= {self.lo:g}" if self.lo is not None else "", f"<= {self.hi:g}" if self.hi is not None else "",
                 f"<= {self.ceiling:g} (ceiling)" if self.ceiling is not None else "",
                 f">= {self.floor:g} (floor)" if self.floor is not None else ""]
        return ", ".join(p for p in parts if p) or "unbounded"


# Goodput through the default scenario can reach at most: QUIC, 40 Mbit/s x 1215 bytes of
# stream data per 1282-byte packet (1280 + the 2-byte PDCP header); TCP, 1268 bytes of data
# (MSS 1280 less 12 of timestamps) per 1322 bytes (1320 + 2).
QUIC_CEILING = round(40 * 1215 / 1282, 2)
TCP_CEILING = round(40 * 1268 / 1322, 2)
# Stacks that find larger datagrams by path MTU discovery (up to 1452 bytes of UDP payload in
# the 1500-byte MTU): their stream data per packet stays below the payload.
QUIC_PMTUD_CEILING = round(40 * 1452 / 1482, 2)

TCP_ONE_LEG = round(20 * 1268 / 1322, 2)
# A flow's mean at the bearer counts IP bytes (dcemu's delivered_bytes, docs/reference/stats.md),
# headers included: a 20 Mbit/s leg delivers at most 20 * 1320 / 1322 of them (the PDCP header
# is the rest). TCP's payload ceiling above is no limit for it: 19.38 was measured once.
IP_ONE_LEG = round(20 * 1320 / 1322, 2)

# Each bound's comment: the kept runs it was derived from (count, how many with a core
# busy, lowest-median-highest). A lower bound lies at least NOISE_MARGIN standard deviations
# of its runs below the lowest and at most 95 % of it (an upper one as far above the
# highest); where an earlier bound already did, and still fails a 20 % regression, it
# stayed. The simulation's values are the same for a seed, and keep 95 % of their one value.
BOUNDS: dict[str, Bound] = {
    # -- the studies' directions, short (tests/test_directions.py) --------------------------
    "directions.short.tcp_sc_mbps": Bound(lo=13.3, ceiling=TCP_ONE_LEG, what="TCP, 10 MB, split 100:0"),  # 10 (5 busy): 16.1-16.4-16.7
    "directions.short.tcp_dc_mbps": Bound(lo=23.9, ceiling=TCP_CEILING, what="TCP, 10 MB, the default DC"),  # 10 (5 busy): 27.9-29.1-31.1
    "directions.short.dc_over_sc": Bound(lo=1.47, what="DC over SC goodput"),  # 10 (5 busy): 1.67-1.78-1.91
    "directions.short.batch100_over_batch500": Bound(lo=1.04, what="batch 100 over 500"),  # 10 (5 busy): 1.2-1.29-1.35
    "directions.short.matched_over_even_5to1": Bound(lo=1.73, what="83:17 over 50:50 on 33.33/6.67"),  # 10 (5 busy): 1.93-2.13-2.28
    "directions.short.dup_over_no_dup_2pct": Bound(lo=4.25, what="duplication over none, 2 % loss"),  # 10 (5 busy): 4.86-5.11-5.91
    "directions.short.stall_wait_p99_ms": Bound(lo=157, floor=0, what="p99 PDCP wait at 0.2 % loss, t-Reordering 200 ms"),  # 10 (5 busy): 193-193-201
    "directions.short.zero_rtt_first_byte_saving_in_rtts": Bound(lo=0.684, tolerance=0.27, what=(
        "first byte saving / handshake time: a ratio of two medians of ten downloads each, over a path with 10 % "
        "jitter on each leg: 0.80-1.02 in ten runs")),  # 10 (5 busy): 0.805-0.926-1.02
    "directions.short.mquic_mean_gain_over_1c_pct": Bound(lo=28.6, tolerance=0.36, what=(
        "mQUIC's gain in mean completion over one connection, 10 repetitions of 2400 KB at 1 % loss: one "
        "connection's few downloads that meet NFEs make its mean heavy-tailed, and the long version's twenty "
        "spread 30-46 % over seven runs; the bound holds the direction and most of its size")),  # 10 (5 busy): 38.6-44.6-54.9
    # -- the studies' directions, long: the release check (DCLAB_SLOW=1) -------------------
    "directions.long.tcp_sc_mbps": Bound(slow=True, lo=14.3, ceiling=TCP_ONE_LEG, what="TCP, 30 MB, split 100:0"),  # 3: 17.52-17.56-17.80
    "directions.long.tcp_dc_mbps": Bound(slow=True, lo=28, ceiling=TCP_CEILING, what="TCP, 30 MB, the default DC"),  # 3: 34.44-34.51-34.74
    "directions.long.dc_over_sc": Bound(slow=True, lo=1.59, what="DC over SC goodput"),  # 3: 1.939-1.962-1.983
    "directions.long.batch100_over_batch500": Bound(slow=True, lo=1.13, what="batch 100 over 500"),  # 3: 1.390-1.393-1.416
    "directions.long.matched_over_even_5to1": Bound(slow=True, lo=2.13, what="83:17 over 50:50 on 33.33/6.67"),  # 3: 2.607-2.630-2.635
    "directions.long.dup_over_no_dup_2pct": Bound(slow=True, lo=7.49, what="duplication over none, 2 % loss, 5 MB"),  # 3: 9.21-9.24-9.29
    "directions.long.stall_wait_p99_ms": Bound(slow=True, lo=157, floor=0, what="p99 PDCP wait at 0.2 % loss, t-Reordering 200 ms"),  # 3: 192.9 each
    "directions.long.zero_rtt_first_byte_saving_in_rtts": Bound(
        slow=True, lo=0.717, what="first byte saving / handshake time"),  # 3: 0.849-0.884-0.899
    "directions.long.mquic_mean_gain_over_1c_pct": Bound(slow=True, lo=28.6, tolerance=0.3, what=(
        "as the short one, 20 repetitions; 3 runs of the test and 4 of its command (dclab run mquic --preset "
        "domestic-high-loss --modes 1c,mquic --sizes 2400KB --reps 20)")),  # 7: 30.1-40.2-45.7
    "mquic.dc_timer_starts_per_download": Bound(slow=True, lo=7.7, what=(
        "t-Reordering starts per mQUIC download over DC at 1 % loss (tests/test_mquic_experiment.py, slow)")),  # 3: 9.0-9.5-9.5
    # -- stacks and experiments through dcemu ------------------------------------------------
    "aioquic2020.dcemu_2mb_mbps": Bound(lo=8.98, ceiling=QUIC_CEILING, tolerance=0.69, what=(
        "a 2 MB download lasts 0.6 s: a queue drop in slow start holds PDCP for t-Reordering and halves the window "
        "(16.6 once in 20 runs, the other 19 at 28-29.4, ten of them by hand with a core busy); the bound fails a "
        "collapse only: stacks.aioquic-2020.reno.10mb_mbps holds the stack's rate")),  # 10 (5 busy): 16.6-28.5-29.4
    "bbr.aioquic_dcemu_20mb_mbps": Bound(slow=True, lo=29.1, ceiling=QUIC_CEILING),  # 5: 31.5-35.9-36.3
    "bbr.ngtcp2_dcemu_20mb_mbps": Bound(slow=True, lo=9.64, ceiling=QUIC_CEILING),  # 5: 11.1-11.9-12.0
    "mptcp.paths_leg1_queued_mbps": Bound(lo=8.95, hi=10.9, tolerance=0.12, what=(
        "leg 1 (10 Mbit/s) out of dcemu while it holds a queue, the median over a 10 MB MPTCP transfer: the "
        "testbed's rate, not the stack's (whose goodput the kernel's wake-up stalls spread, docs/split-layer.md); a "
        "10 ms record holds 8-9 packets, so the median spreads about 5 %")),
    # 40 (40 busy): 9.52-9.75-10.4
    "mptcp.paths_leg2_queued_mbps": Bound(lo=29.3, hi=30.4, tolerance=0.1, what=(
        "leg 2 (30 Mbit/s) likewise")),  # 40 (40 busy): 29.6-29.6-30
    "campaign_run.batch_mean_mbps": Bound(lo=25.1, ceiling=TCP_CEILING, what=(
        "TCP CUBIC, 10 MB, the mean of batches 10, 50 and 100: one 10 MB run spreads 24-31 (24.17 once in CI)")),  # 10 (5 busy): 27.1-28.3-29.8
    "campaign_run.fairness_jfi": Bound(lo=0.797, ceiling=1.0, what="TCP, 4 s window"),  # 10 (5 busy): 0.929-0.995-1
    "campaign_run.fairness_total_mbps": Bound(lo=27.3, ceiling=TCP_CEILING),  # 10 (5 busy): 31.7-33-34.3
    "download.zero_rtt_first_byte_median_s": Bound(hi=0.0343, floor=0.024, what="aioquic 0-RTT over the 250 m cell, "
                                                    "12 ms core delay each way"),  # 10 (5 busy): 0.0274-0.0286-0.0294
    "download.zero_rtt_64kb_s": Bound(hi=0.133, floor=0.024),  # 20 (10 busy): 0.108-0.111-0.119
    "download.zero_rtt_128kb_s": Bound(hi=0.168, floor=0.024),  # 20 (10 busy): 0.133-0.14-0.149
    "emulator_mode.plain.tcp_10mb_mbps": Bound(lo=23.6, ceiling=TCP_CEILING),  # 10 (5 busy): 27-29.4-31.3
    "emulator_mode.busy.tcp_10mb_mbps": Bound(lo=23.8, ceiling=TCP_CEILING),  # 10 (5 busy): 26.9-28.9-31.1
    "emulator_mode.other.tcp_10mb_mbps": Bound(lo=23.8, ceiling=TCP_CEILING),  # 10 (5 busy): 27.2-29.2-33.2
    "udp_load.two_legs_60mbps_share": Bound(lo=0.947, what=(
        "60 Mbit/s of UDP over two 20 Mbit/s legs, a 5 s window: the DC bearer's IP bytes over the legs' rates. "
        "No ceiling: the PDCP receiver may release more in a window than the legs carried in it (0.9991 once in "
        "CI, where its buffer shrank); tests/test_udp_load.py checks that conservation instead")),  # 13 (6 busy): 0.9972-0.9972-0.9991
    "cell.two_devices_medium_total_mbps": Bound(lo=18, what="two TCP devices at 750 m, 5 s"),  # 10 (5 busy): 21-21.5-22.2
    "flows.quic_tcp_one_leg_total_mbps": Bound(lo=15.1, ceiling=IP_ONE_LEG),  # 10 (5 busy): 17.5-18.7-19.1
    "flows.quic_tcp_one_leg_jfi": Bound(lo=0.782, ceiling=1.0, what="aioquic reno and TCP cubic, 5 s"),  # 10 (5 busy): 0.895-0.977-1
    "plugin.4x50kb_2conns_s": Bound(hi=0.173, floor=0.02, tolerance=0.22, what=(
        "mean completion of four 50 kB downloads, 2 reps: one slow handshake moves it (0.137-0.160)")),  # 10 (5 busy): 0.137-0.142-0.16
    "plugin.2x50kb_2conns_batch10_s": Bound(hi=0.22, floor=0.02, tolerance=0.45, what=(
        "one pair of 50 kB downloads through the campaign path, one sample: 0.1916 once in a fresh clone's CI with a "
        "core busy and nice'd builds beside it (24 busy-round runs before: 0.150-0.170); plugin.4x50kb_2conns_s, a "
        "mean of two repetitions, holds the path's speed")),  # 11 (6 busy): 0.15-0.157-0.192
    "resume.aioquic.zero_rtt_first_byte_saving_ms": Bound(lo=23.1, what="one RTT of 20 ms and the handshake's work"),  # 10 (5 busy): 26-27-30.1
    "resume.ngtcp2.zero_rtt_first_byte_saving_ms": Bound(lo=18.4),  # 10 (5 busy): 21.5-22-22.3
    "resume.tcp.zero_rtt_first_byte_saving_ms": Bound(lo=15.0, tolerance=0.4, what=(
        "the SYN's round trip, 20 ms; one sample, whose jitter (10 % on each leg of two round trips) spreads it by "
        "about 5 ms: 19.05 seen once in make test; losing TCP Fast Open saves nothing")),  # 10 (5 busy): 21.5-22.6-23.9
    # every stack and controller, 10 MB through the default scenario (tests/test_stacks_dcemu.py)
    "stacks.aioquic.reno.10mb_mbps": Bound(lo=17.2, ceiling=QUIC_CEILING, tolerance=0.52, what=(
        "aioquic NewReno: how many loss episodes slow start's overflow of a leg costs varies from run to run "
        "(25.5 in a fresh clone's CI)")),  # 10 (5 busy): 25.6-35.8-36
    "stacks.aioquic.cubic.10mb_mbps": Bound(lo=22.5, ceiling=QUIC_CEILING, tolerance=0.37, what=(
        "as stacks.aioquic.reno: most runs meet no loss (35-36), one in five a slow-start overflow (28-30)")),  # 10 (5 busy): 28.2-35.3-35.9
    "stacks.aioquic.bbr.10mb_mbps": Bound(lo=24.4, ceiling=QUIC_CEILING),  # 10 (5 busy): 28.4-30.5-30.6
    "stacks.aioquic-2020.reno.10mb_mbps": Bound(lo=25.1, ceiling=QUIC_CEILING, tolerance=0.3, what=(
        "aioquic 2020's NewReno: as stacks.aioquic.reno, how many loss episodes slow start's overflow of a leg costs "
        "varies from run to run (28.1 in a fresh clone's CI, 26.5 among 15 quiet runs)")),  # 10 (5 busy): 33.5-35.7-35.9
    "stacks.ngtcp2.cubic.10mb_mbps": Bound(lo=29.2, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 35-36-36.2
    "stacks.ngtcp2.reno.10mb_mbps": Bound(lo=29.2, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 35.8-36-36.1
    "stacks.ngtcp2.bbr.10mb_mbps": Bound(lo=9.58, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 11.1-11.8-12.5
    "stacks.ngtcp2.bbr2.10mb_mbps": Bound(lo=4.37, ceiling=QUIC_PMTUD_CEILING, tolerance=0.88, what=(
        "bimodal: a STARTUP that overflows a leg's queue holds PDCP for t-Reordering (18.0 once in ten, the others "
        "36): the bound fails a collapse only")),  # 10 (5 busy): 18-36.1-36.2
    "stacks.noq.cubic.10mb_mbps": Bound(lo=19.5, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 23.9-24-24.2
    "stacks.noq.reno.10mb_mbps": Bound(lo=21.8, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 26.8-26.9-27
    "stacks.noq.bbr.10mb_mbps": Bound(lo=28.6, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 35.2-35.4-35.5
    "stacks.quic-go.reno.10mb_mbps": Bound(lo=30, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 36.9-37-37.1
    "stacks.quinn.cubic.10mb_mbps": Bound(lo=19.3, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 23.7-23.8-24
    "stacks.quinn.reno.10mb_mbps": Bound(lo=21.7, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 26.3-26.6-27
    "stacks.quinn.bbr.10mb_mbps": Bound(lo=9.75, ceiling=QUIC_PMTUD_CEILING),  # 10 (5 busy): 11.6-12.2-12.7
    "stacks.mptcp.cubic.10mb_mbps": Bound(lo=23.0, ceiling=TCP_CEILING),  # 10 (5 busy): 26.4-28.4-30.9
    "stacks.mptcp.reno.10mb_mbps": Bound(lo=19.6, ceiling=TCP_CEILING, tolerance=0.27, what=(
        "NewReno halves its window at each of slow start's drops, and how many there are varies (23.1-28.7)")),  # 10 (5 busy): 23.1-26.7-28.7
    "stacks.mptcp.bbr.10mb_mbps": Bound(lo=0.769, ceiling=TCP_CEILING, tolerance=0.97, what=(
        "MPTCP with one subflow under PDCP: as Linux BBR over TCP (stacks.tcp.bbr), the queues overflow again and "
        "again and each drop may hold PDCP for t-Reordering: 15.9-35.1, spread over the range; the bound fails a "
        "collapse only")),  # 10 (5 busy): 15.9-21.4-35.1
    "stacks.tcp.cubic.10mb_mbps": Bound(lo=23.3, ceiling=TCP_CEILING),  # 10 (5 busy): 26.9-28.8-30.7
    "stacks.tcp.reno.10mb_mbps": Bound(lo=20.9, ceiling=TCP_CEILING),  # 10 (5 busy): 24.2-25.9-29.3
    "stacks.tcp.bbr.10mb_mbps": Bound(lo=3.82, ceiling=TCP_CEILING, tolerance=0.85, what=(
        "Linux BBR overflows the 100-packet leg queues again and again (361 drops and 13 t-Reordering expiries in "
        "one 10 MB run): how many drops open PDCP gaps decides the run, 17.4-35.9 spread over the range; the bound "
        "fails a collapse only")),  # 10 (5 busy): 17.4-25.4-35.9
    # -- responsiveness under load (tests/test_responsiveness_run.py): 20 Mbit/s legs, 1000-packet
    # queues, a bulk TCP CUBIC flow, two 100 kB TCP downloads and a ping probe beside it -----
    # 1000 packets of 1322 bytes at 20 Mbit/s are 529 ms of queue; the flow's window stops short of it
    "responsiveness.tail_drop_sojourn_p99_ms": Bound(lo=486, ceiling=529, what=(
        "each leg's p99 queue wait under tail drop, the queue at its limit: 1000 packets of 1322 bytes at 20 Mbit/s "
        "are 528.8 ms (the ceiling). A histogram quantile: every kept run reads its bucket's middle, 520.1, and lo "
        "admits the bucket below")),  # 40 (20 busy): 520.1 each
    "responsiveness.tail_drop_short_s": Bound(lo=2.09, tolerance=0.3, what=(
        "median of two short downloads beside a full tail-drop queue: 2.75-3.48 s in 39 of 40 kept runs, 4.94 once "
        "(a short meeting drops at the full queue); lo holds the regime, seconds")),  # 40 (20 busy): 2.75-2.96-4.94
    "responsiveness.tail_drop_rtt_p50_ms": Bound(lo=435, hi=507, what="probe's median round trip, tail drop"),  # 40 (20 busy): 458-465-483
    "responsiveness.codel_master_sojourn_p99_ms": Bound(hi=110, tolerance=3.2, what=(
        "master's p99 queue wait under CoDel, held to the yardstick of twice its 5 ms target plus one 100 ms "
        "interval: 24.1-30.4 ms in 52 of 53 kept runs, 52.4 once with a core busy (a late dcemu holds packets "
        "longer); lower is no regression")),  # 53 (26 busy): 24.1-26.2-52.4
    "responsiveness.codel_master_secondary_sojourn_p99_ms": Bound(hi=110, tolerance=3.2, what=(
        "the secondary's p99 wait, as the master's")),  # 53 (26 busy): 24.1-26.2-52.4
    "responsiveness.codel_master_short_s": Bound(lo=0.184, hi=0.246, what="median short, CoDel master"),  # 53 (26 busy): 0.197-0.216-0.233
    "responsiveness.codel_master_rtt_p99_ms": Bound(lo=33.0, hi=48.5, what="probe p99 RTT, CoDel master"),  # 53 (26 busy): 36.8-40.9-44.7
    "responsiveness.short_speedup": Bound(lo=8.5, tolerance=0.4, what=(
        "median short download, tail drop over CoDel: 12.8-14.4 in 19 of 20 kept runs, 23.0 once (tail drop's "
        "heavy tail, upward only); the claim is one-sided, each side has its own bounds")),  # 20 (10 busy): 12.8-13.7-23.0
    "responsiveness.rpm_gain": Bound(lo=12.4, what=(
        "round trips per minute, CoDel over tail drop; one-sided: CoDel's side, ~22 probes over about a second, "
        "reads one phase of CUBIC's cycle under ECN marks (9.99 against 8.2-9.0 once, when tail drop warmed up 3 s)")),
    # 20 (10 busy): 13.2-14.1-14.9
    # -- the simulation (deterministic for a seed) and validate-smoke's emulated side ---------
    "sim.aioquic_large_10mb_mbps": Bound(lo=34.0, ceiling=QUIC_CEILING),  # 10 (5 busy): 35.75 each
    "sim.fairness_total_mbps": Bound(lo=34.1, ceiling=QUIC_CEILING),  # 10 (5 busy): 35.91 each
    "sim.fairness_jfi": Bound(lo=0.95, ceiling=1.0),  # 10 (5 busy): 0.998 each
    "sim.sim_20mb.client_udp_drops_at_loss_0.2": Bound(lo=82, what="datagrams the host model dropped"),  # 10 (5 busy): 87-87-87
    # 10 (5 busy), each a mean of 5: 34.4-35.7-36.3
    "validate_smoke.aioquic_reno_large-buffer.loss_0.emu_mbps": Bound(lo=29.5, ceiling=QUIC_CEILING, slow=True),
    "validate_smoke.tcp_cubic.loss_0.emu_mbps": Bound(lo=28.0, ceiling=TCP_CEILING, slow=True),  # 10 (5 busy), each a mean of 5: 32.4-32.9-33.2
    "validate_smoke.tcp_reno.loss_0.1.emu_mbps": Bound(lo=11.6, ceiling=TCP_CEILING, slow=True),  # 10 (5 busy), each a mean of 5: 13.9-14.2-14.4
}


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).parent).stdout.strip()


def log(name: str, value: float) -> None:
    """Appends ``value`` to the log named by DCLAB_MEASURE_LOG, if any, with the test that
    measured it and whether a core was kept busy meanwhile (DCLAB_MEASURE_BUSY=1)."""
    path = os.environ.get("DCLAB_MEASURE_LOG")
    if path:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
        with open(path, "a") as f:
            f.write(json.dumps({"bound": name, "value": value, "commit": _commit(),
                                "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "test": test,
                                "busy": os.environ.get("DCLAB_MEASURE_BUSY") == "1"}) + "\n")


def check_bound(name: str, value: float) -> None:
    """Asserts ``value`` lies in ``BOUNDS[name]``. While measuring (DCLAB_MEASURE_LOG set, as
    scripts/measure_bounds.py does) it only logs, so that one run logs every value it meets;
    tests/test_measured_bounds.py then holds each bound to what was logged."""
    if os.environ.get("DCLAB_MEASURE_LOG"):
        log(name, value)
        return
    bound = BOUNDS.get(name)
    assert bound is not None, f"{name}: no bound in tests/measured.py (derive one: scripts/measure_bounds.py)"
    assert bound.holds(value), f"{name} = {value:.4g}, outside its bound ({bound}; tests/measured.py)"


@dataclass(frozen=True)
class Kept:
    """One kept run of a bound: its value and whether a core was kept busy meanwhile."""

    value: float
    busy: bool


def kept_runs(path: Path = DATA) -> dict[str, list[Kept]]:
    """The kept runs by bound (tests/data/measured.jsonl)."""
    out: dict[str, list[Kept]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            rec = json.loads(line)
            out.setdefault(rec["bound"], []).append(Kept(float(rec["value"]), bool(rec.get("busy", False))))
    return out


def kept() -> dict[str, list[float]]:
    """The kept runs' values by bound (tests/data/measured.jsonl)."""
    return {name: [k.value for k in runs] for name, runs in kept_runs().items()}


def noise(values: list[float]) -> float:
    """A bound's own noise: the standard deviation of its kept runs."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def margin(bound: Bound, values: list[float]) -> float:
    """How far the worst kept run lies inside the bound's lo or hi, in units of the runs'
    noise (negative: outside; infinite: no lo or hi, or runs that never vary and lie inside)."""
    sigma = noise(values)
    gaps = ([min(values) - bound.lo] if bound.lo is not None else []) + \
        ([bound.hi - max(values)] if bound.hi is not None else [])
    if not gaps:
        return math.inf
    gap = min(gaps)
    if sigma == 0:
        return math.inf if gap > 0 else -math.inf
    return gap / sigma


# dcemu's latency histogram (emu/src/base/histogram.rs) has 8 log-linear buckets per octave
# of nanoseconds and reports a quantile as its bucket's middle, capped at the largest value
# seen. A bound on such a quantile sees the value move by whole buckets (up to 12.5 %), a
# step ten kept runs may not show: 12 runs of the tail-drop queue's p99 gave two values.
GRID_SUB = 8


def grid_bucket(ns: int) -> tuple[int, int]:
    """The histogram's bucket holding ``ns`` nanoseconds, as [lower, upper)."""
    if ns < 2 * GRID_SUB:
        return ns, ns + 1
    width = 1 << (ns.bit_length() - GRID_SUB.bit_length())  # an octave's width over GRID_SUB
    lower = ns // width * width
    return lower, lower + width


def _middle(bucket: tuple[int, int]) -> int:
    """What the histogram reports for a quantile in ``bucket`` (uncapped)."""
    return (bucket[0] + bucket[1] - 1) // 2


def grid_scale(name: str) -> float | None:
    """Nanoseconds per unit of a bound named for a time (``_ms``, ``_us``); None otherwise."""
    return 1e6 if name.endswith("_ms") else 1e3 if name.endswith("_us") else None


def on_grid(value: float, scale: float) -> bool:
    """Whether ``value`` (in units of ``scale`` ns) is the middle of its bucket, as the
    histogram reports an uncapped quantile (to the microsecond of dcemu's records)."""
    ns = round(value * scale)
    bucket = grid_bucket(ns)
    return abs(ns - _middle(bucket)) <= 1000 and bucket[1] - bucket[0] > 2000


def grid_neighbour(value: float, scale: float, up: bool) -> float:
    """The value the histogram reports for the bucket next above (or below) the one holding
    ``value``: that bucket's middle."""
    lower, upper = grid_bucket(round(value * scale))
    return _middle(grid_bucket(upper) if up else grid_bucket(lower - 1)) / scale


def grid_reach(name: str, values: list[float]) -> tuple[float, float] | None:
    """For a bound on a histogram quantile (a time whose kept runs are mostly bucket middles):
    the values reported for the buckets next below the lowest and next above the highest
    kept run, which its lo and hi must admit. None for any other bound."""
    scale = grid_scale(name)
    if scale is None or not values or 2 * sum(on_grid(v, scale) for v in values) < len(values):
        return None
    return grid_neighbour(min(values), scale, up=False), grid_neighbour(max(values), scale, up=True)
