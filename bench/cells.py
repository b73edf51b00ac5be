"""The bench's cell section: TCP through an NR carrier in real time against the model's
capacity, and through EN-DC (the LTE master and the NR secondary together), with the
departure lateness both cells keep. The carrier is dclab's ``nr:good`` (dclab/nr.py: 100
MHz, numerology 1, 256QAM, 4 layers, DDDSU, HARQ at 0.1) and the LTE cell ``lte:good``
(dclab/lte.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench.figures import log, record_run
from bench.tools import TCP_SECONDS, iperf, iperf_server, large_tcp_buffers, note_config, runtime_of, scenario, summary_of
from dclab import lte, nr
from dclab.batch import shares
from dclab.dcemu.process import Emulator, topology_toml
from dclab.dcemu.records import Stats
from dclab.paths import DCEMU
from dclab.testbed.netns import Namespaces

DELAY_MS = 5.0  # each way, after the cell: the core network
OMIT_S = 2  # iperf3 --omit: slow start's first seconds, not the carried rate
PACED = "40M"  # EN-DC's lateness also at the lateness section's 40 Mbit/s, TCP paced
T_REORDERING_MS = 20  # HARQ's retransmissions arrive 2 ms late, a few times over at most
ENDC_BATCH = 100  # sends the capacities' ratio 64:1398 as 4:96


def _nr_cell() -> str:
    d, los = nr.LEVELS["good"]
    return (f'[legs.downlink.cell]\nrat = "nr"\nbandwidth_mhz = {nr.BANDWIDTH_MHZ}\nscheduler = "{nr.SCHEDULER}"\n'
            f'[legs.downlink.cell.nr]\nnumerology = {nr.NUMEROLOGY}\nlayers = {nr.LAYERS}\ntdd = "{nr.TDD}"\n'
            f'[[legs.downlink.cell.devices]]\nmean_sinr_db = {nr.sinr_db(d, los)}\ndoppler_hz = {nr.DOPPLER_HZ}\n'
            f'queue_bytes = {nr.QUEUE_BYTES}\n')


def _lte_cell() -> str:
    return (f'[legs.downlink.cell]\nbandwidth_mhz = {lte.BANDWIDTH_MHZ}\nscheduler = "{lte.SCHEDULER}"\n'
            f'[[legs.downlink.cell.devices]]\nmean_sinr_db = {lte.sinr_db(lte.LEVELS["good"])}\n'
            f'doppler_hz = {lte.DOPPLER_HZ}\nqueue_bytes = {lte.QUEUE_BYTES}\n')


def _leg(name: str, cell: str, uplink: bool) -> str:
    text = (f'[[legs]]\nname = "{name}"\n[legs.downlink]\n'
            f'delay = {{ distribution = "constant", ms = {DELAY_MS} }}\n{cell}')
    if uplink:
        text += ('[legs.uplink]\nrate = "unlimited"\nqueue_packets = 10000\n'
                 f'delay = {{ distribution = "constant", ms = {DELAY_MS} }}\n')
    return text


def nr_scenario(ns: Namespaces) -> str:
    return (topology_toml(ns.server, ns.client, ns.tag) + f"[pdcp]\nt_reordering_ms = {T_REORDERING_MS}\n"
            + _leg("nr", _nr_cell(), uplink=True))


def endc_scenario(ns: Namespaces) -> str:
    """Leg 1 the LTE master (with the uplink), leg 2 the NR secondary; the split in the
    ratio of their capacities for one device (static: the split policies are the endc
    experiment's), in a batch that gives the master packets (64:1398 in a batch of 10
    would send it none: dclab/batch.py)."""
    ratio = [round(lte.CAPACITY_MBPS["good"]), round(nr.NrLink("good").capacity_mbps)]
    if 0 in shares(ENDC_BATCH, ratio):
        raise RuntimeError(f"a batch of {ENDC_BATCH} sends {ratio} as {shares(ENDC_BATCH, ratio)}: a cell unused")
    return (topology_toml(ns.server, ns.client, ns.tag) + f"[pdcp]\nt_reordering_ms = {T_REORDERING_MS}\n"
            + f"[split]\nbatch = {ENDC_BATCH}\nratio = {ratio}\n" + _leg("lte", _lte_cell(), uplink=True)
            + _leg("nr", _nr_cell(), uplink=False))


def _master_share(s: Stats) -> float:
    """The LTE master's share of the bytes both cells carried; an error if either carried
    none (the run would not be EN-DC)."""
    out = [leg.downlink.bytes_out for leg in s.legs]
    if len(out) != 2 or 0 in out:
        raise RuntimeError(f"EN-DC bench run: bytes out per leg {out}, not two cells carrying")
    return out[0] / sum(out)


def model_gbps(seconds: int = 600) -> float:
    """The nr:good device's capacity in the model: the carrier's mean over ``seconds``
    (``dcemu cell-capacity``, all PRBs) less HARQ's resent share (dclab/nr.py)."""
    d, los = nr.LEVELS["good"]
    p = subprocess.run([str(DCEMU), "cell-capacity", "--rat", "nr", "--bandwidth-mhz", str(nr.BANDWIDTH_MHZ),
                        "--layers", str(nr.LAYERS), "--tdd", nr.TDD, "--doppler", str(nr.DOPPLER_HZ),
                        "--sinr-db", str(nr.sinr_db(d, los)), "--seconds", str(seconds)],
                       capture_output=True, text=True, check=True, timeout=120)
    return json.loads(p.stdout)["mean_mbps"] * (1 - nr.BLER) / 1e3


def steady_tcp_gbps(ns: Namespaces, *extra: str) -> float:
    """TCP goodput from server to client over TCP_SECONDS after slow start's OMIT_S."""
    d = iperf(ns, "-R", "-O", str(OMIT_S), *extra, seconds=TCP_SECONDS)
    return float(d["end"]["sum_received"]["bits_per_second"]) / 1e9


def section_cells(results: dict, tmp: Path) -> None:
    model = model_gbps()
    log(f"cells: TCP through nr:good (model {model:.2f} Gbit/s for one device), then EN-DC lte:good + nr:good; "
        f"{DELAY_MS:g} ms each way, unlimited uplink, large TCP buffers")
    with Namespaces() as ns:
        large_tcp_buffers(ns)
        sc_nr, sc_endc = nr_scenario(ns), endc_scenario(ns)
        sc_plain = scenario(ns, [("leg1", "1gbit"), ("leg2", "1gbit")], delay_ms=DELAY_MS, queue="queue_packets = 1000")
        note_config(results, "cells-nr", sc_nr)
        note_config(results, "cells-endc", sc_endc)
        note_config(results, "cells-plain", sc_plain)
        for i in range(results["repeats"]):
            with Emulator(sc_nr, tmp / f"nr-{i}") as emu, iperf_server(ns):
                gbps = steady_tcp_gbps(ns)
            s = summary_of(emu)
            nr_rt = runtime_of(s)
            cell = s.legs[0].cell
            if cell is None:
                raise RuntimeError("dcemu's summary has no cell record for the NR leg")
            dev = cell.devices[0]
            with Emulator(sc_endc, tmp / f"endc-{i}") as emu, iperf_server(ns):
                endc = steady_tcp_gbps(ns)
            e = summary_of(emu)
            rt = runtime_of(e)
            lte_share = _master_share(e)
            with Emulator(sc_endc, tmp / f"endc-paced-{i}") as emu, iperf_server(ns):
                paced = steady_tcp_gbps(ns, "-b", PACED)
            prt = runtime_of(summary_of(emu))
            # The same with idle CPUs left to halt (dcemu run --idle-halt): what holding
            # them polling, dcemu's default, does for the timer (emu/src/io/idle.rs).
            with Emulator(sc_endc, tmp / f"endc-paced-halt-{i}", extra_args=("--idle-halt",)) as emu, \
                    iperf_server(ns):
                steady_tcp_gbps(ns, "-b", PACED)
            halt = runtime_of(summary_of(emu))
            # The control: the same paced TCP through two plain 1 Gbit/s legs, so that the
            # cells' share of the timer's tail shows.
            with Emulator(sc_plain, tmp / f"plain-paced-{i}") as emu, iperf_server(ns):
                steady_tcp_gbps(ns, "-b", PACED)
            plain = runtime_of(summary_of(emu))
            record_run(results, "cells", i, {
                "cells.nr_tcp_gbps": gbps, "cells.nr_model_gbps": model, "cells.nr_share_of_model": gbps / model,
                "cells.nr_lateness_p99_us": nr_rt.lateness.p99_us,
                "cells.endc_tcp_gbps": endc, "cells.endc_lte_share": lte_share,
                "cells.endc_lateness_p50_us": rt.lateness.p50_us, "cells.endc_lateness_p99_us": rt.lateness.p99_us,
                "cells.endc_service_lateness_p99_us": rt.service_lateness.p99_us,
                "cells.endc_paced_tcp_mbps": paced * 1e3,
                "cells.endc_paced_lateness_p50_us": prt.lateness.p50_us,
                "cells.endc_paced_lateness_p99_us": prt.lateness.p99_us,
                "cells.endc_paced_service_lateness_p50_us": prt.service_lateness.p50_us,
                "cells.endc_paced_service_lateness_p99_us": prt.service_lateness.p99_us,
                "cells.plain_paced_service_lateness_p50_us": plain.service_lateness.p50_us,
                "cells.plain_paced_service_lateness_p99_us": plain.service_lateness.p99_us,
                "cells.endc_paced_halt_service_lateness_p50_us": halt.service_lateness.p50_us,
                "cells.endc_paced_halt_service_lateness_p99_us": halt.service_lateness.p99_us,
            }, note=f"nr: {dev.harq_retx} HARQ retransmissions, {dev.dropped_packets} queue drops in "
                    f"{TCP_SECONDS} s; endc t-Reordering expiries "
                    f"{sum(b.rx.timer_expiries for b in e.bearers if b.rx)}")
