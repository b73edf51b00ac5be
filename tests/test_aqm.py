"""Active queue management on the legs (``--aqm``, ``--aqm-target``, ``--aqm-interval``,
``--aqm-ecn``): the scenario's fields, what they render for dcemu and what dcemu reads
back, what is refused, run keys unchanged without them, and in virtual time what a
queue's discipline does to its packets' waits. The control laws themselves are tested in
dcemu (emu/src/qdisc/codel.rs, pie.rs, fq_codel.rs; emu/src/link/rate.rs)."""

from __future__ import annotations

import gzip
import subprocess
import tomllib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from conftest import run_dclab
from scenario_render import render, throughput_key

from dclab import scenario as sc
from dclab.cli import app
from dclab.dcemu.records import parse
from dclab.paths import DCEMU


def test_one_discipline_for_every_leg_or_one_per_leg():
    assert sc.Scenario(aqm="codel").aqm == ["codel", "codel"]
    assert sc.Scenario(aqm="pie,tail-drop").aqm == ["pie", "tail-drop"]
    assert sc.build(bw=[20, 20, 20], aqm=["codel"]).aqm == ["codel"] * 3
    assert sc.Scenario().aqm_kinds() == {"tail-drop"}


@pytest.mark.parametrize(("args", "message"), [
    (["--aqm", "red"], "--aqm (leg 1): Input should be 'tail-drop', 'codel', 'pie' or 'fq-codel'"),
    (["--aqm", "codel,pie,pie"], "--aqm: one value for every leg, or one per leg (2), got 3"),
    (["--aqm-target", "3"], "--aqm-target: needs an AQM on some leg (codel, pie or fq-codel)"),
    (["--aqm", "tail-drop", "--no-aqm-ecn"], "--aqm-ecn: needs an AQM on some leg"),
    (["--aqm", "codel", "--aqm-target", "0"], "--aqm-target: must be at least 0.1 and at most 10000 (got 0.0)"),
    (["--aqm", "codel", "--aqm-interval", "20000"], "--aqm-interval: must be at least 0.1 and at most 10000 (got 20000.0)"),
    (["--aqm", "codel,pie", "--link", "lte:good"], "--aqm: one value for every leg, or one per leg (1), got 2"),
])
def test_bad_aqm_options_are_refused_naming_the_option(args, message):
    r = CliRunner().invoke(app, ["scenario", "show", *args])
    assert r.exit_code == 2 and message in r.output, r.output


def test_each_legs_discipline_renders_and_dcemu_reads_it_back(tmp_path):
    s = sc.build(bw=[20, 20, 20], aqm=["codel", "pie", "fq-codel"], aqm_target_ms=3.0, aqm_ecn=False)
    d = tomllib.loads(render(s))
    assert [leg["downlink"].get("aqm") for leg in d["legs"]] == [
        {"kind": "codel", "ecn": False, "target_ms": 3.0}, {"kind": "pie", "ecn": False, "target_ms": 3.0},
        {"kind": "fq-codel", "ecn": False, "target_ms": 3.0}]
    assert "aqm" not in d["legs"][0].get("uplink", {}), "the uplink stays tail-drop"
    one = tomllib.loads(render(sc.build(aqm=["tail-drop", "codel"], aqm_interval_ms=50.0)))
    assert [leg["downlink"].get("aqm") for leg in one["legs"]] == [None, {"kind": "codel", "ecn": True,
                                                                          "interval_ms": 50.0}]
    assert all("aqm" not in leg["downlink"] for leg in tomllib.loads(render(sc.Scenario()))["legs"])
    if DCEMU.exists():
        f = tmp_path / "d.toml"
        f.write_text(render(s))
        p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        back = tomllib.loads(p.stdout)
        assert [leg["downlink"]["aqm"]["kind"] for leg in back["legs"]] == ["codel", "pie", "fq-codel"]


def test_run_keys_change_only_with_an_aqm():
    key = throughput_key
    base = key(sc.Scenario())
    assert sc.build(aqm=["tail-drop"]).aqm is None
    assert key(sc.build(aqm=["tail-drop", "tail-drop"])) == base  # the default, named
    keys = {base, key(sc.build(aqm=["codel", "codel"])), key(sc.build(aqm=["codel", "codel"], aqm_target_ms=3.0)),
            key(sc.build(aqm=["codel", "codel"], aqm_ecn=False)), key(sc.build(aqm=["pie", "pie"])),
            key(sc.build(aqm=["fq-codel", "fq-codel"]))}
    assert len(keys) == 6


def sojourn_p99_ms(run: Path) -> list[float]:
    """Each leg's p99 queue wait over the whole simulated run, ms (its summary record)."""
    with gzip.open(run / "rep-01" / "dcemu-stats.jsonl.gz") as f:
        lines = [x for x in f.read().splitlines() if x.strip()]
    summary = parse(lines[-2].decode())  # the last line is the simulation's own
    assert summary.type == "summary"
    out = []
    for leg in summary.legs:
        assert leg.downlink.sojourn is not None
        out.append(leg.downlink.sojourn.p99_us / 1e3)
    return out


def test_codel_keeps_the_legs_queues_short_where_tail_drop_lets_them_grow(tmp_path):
    """A simulated 20 MB TCP CUBIC download over the two 20 Mbit/s legs with 1000-packet
    queues (deterministic for its seed): tail drop lets each leg's queue wait reach 71 ms
    at the p99 (the modelled receiver's window, not the queue, stops it there); CoDel holds
    it to 36 ms, about twice its 5 ms target plus the bursts an interval lets through.
    FQ-CoDel, with one flow in one queue, is that flow's CoDel: the same bound."""
    runs = {}
    for kind in ("tail-drop", "codel", "fq-codel"):
        out = tmp_path / kind
        r = run_dclab("run", "throughput", "--backend", "sim", "--stack", "tcp", "--size", "20MB", "--queue", "1000",
                      "--aqm", kind, "--out", str(out), timeout=120)
        assert r.returncode == 0, r.stderr
        runs[kind] = sojourn_p99_ms(out)
    assert all(60 <= p <= 80 for p in runs["tail-drop"]), runs
    for kind in ("codel", "fq-codel"):
        assert all(p <= 5 * 2 + 100 and p < 0.6 * t for p, t in zip(runs[kind], runs["tail-drop"], strict=True)), runs
        result = orjson.loads((tmp_path / kind / "rep-01" / "result.json").read_bytes())
        assert result["ok"]


def summary_and_flows(run: Path) -> tuple[object, list[dict]]:
    """A simulated run's summary record and its flows' outcomes (the simulation's own line)."""
    with gzip.open(run / "rep-01" / "dcemu-stats.jsonl.gz") as f:
        lines = [x for x in f.read().splitlines() if x.strip()]
    return parse(lines[-2].decode()), orjson.loads(lines[-1])["flows"]


def test_with_ecn_codel_marks_what_it_would_drop_and_pdcp_never_waits(tmp_path):
    """CoDel on both legs, the simulated TCP with and without ECN (``--ecn``: the host
    configuration's tcp_ecn, which the simulation's TCP model follows). Without ECN each
    CoDel drop is a gap the PDCP receiver waits for (t-Reordering expiries); with it the
    same queue control marks instead, the sender reduces its window for each echo, nothing
    is lost and nothing waits. Deterministic for the seed: one run each."""
    out: dict[str, tuple[object, list[dict], dict]] = {}
    for name, extra in (("drop", []), ("ecn", ["--ecn"])):
        run = tmp_path / name
        r = run_dclab("run", "throughput", "--backend", "sim", "--stack", "tcp", "--size", "20MB", "--queue", "1000",
                      "--aqm", "codel", *extra, "--out", str(run), timeout=120)
        assert r.returncode == 0, r.stderr
        summary, flows = summary_and_flows(run)
        out[name] = (summary, flows, orjson.loads((run / "rep-01" / "result.json").read_bytes()))
    drop, ecn = out["drop"], out["ecn"]
    assert drop[2]["host_config"] == "tcp" and ecn[2]["host_config"] == "tcp+ecn"
    dropped = sum(leg.downlink.aqm.dropped_packets for leg in drop[0].legs)
    assert dropped > 0 and sum(leg.downlink.aqm.marked_packets for leg in drop[0].legs) == 0
    assert drop[0].bearers[0].rx.timer_expiries > 0 and drop[1][0]["ce_marks"] == 0
    marked = sum(leg.downlink.aqm.marked_packets for leg in ecn[0].legs)
    assert marked > 0 and sum(leg.downlink.aqm.dropped_packets for leg in ecn[0].legs) == 0
    (flow,) = ecn[1]
    assert flow["ce_marks"] == marked and 0 < flow["ecn_reductions"] <= marked and flow["packets_lost"] == 0
    # dcemu's own count of what it handed the client: the marks the modelled receiver saw
    (delivered,) = ecn[0].flows
    assert (delivered.protocol, delivered.ce_packets) == (6, marked) and delivered.ect_packets > 0
    assert [(f.ce_packets, f.ect_packets) for f in drop[0].flows] == [(0, 0)]  # no ECN: nothing ECN-capable
    assert ecn[0].bearers[0].rx.timer_expiries == 0
    goodput = [x[2]["metrics"]["goodput_mbps"] for x in (drop, ecn)]
    assert goodput[1] > 1.1 * goodput[0], goodput


def device_sojourn_p99_ms(run: Path) -> tuple[float, int]:
    """The first cell device's p99 queue wait over a simulated run, ms, and its AQM's drops."""
    summary, _ = summary_and_flows(run)
    cell = summary.legs[0].cell
    assert cell is not None
    (device,) = cell.devices
    assert device.sojourn is not None
    return device.sojourn.p99_us / 1e3, device.aqm.dropped_packets if device.aqm else 0


def test_codel_on_a_cells_device_queue_keeps_it_short(tmp_path):
    """A simulated 20 MB TCP CUBIC download over one poor LTE cell (`--link lte:poor`, about
    4.5 Mbit/s, its device queue 512 kB; deterministic for its seed): tail drop lets the
    device's queue wait reach 2.3 s at the p99; CoDel on the device queue holds it to 57 ms,
    within twice its 5 ms target plus an interval, for 4 % of the goodput (4.37 against 4.54
    Mbit/s: each drop is a PDCP gap the receiver waits for), and the leg's record sums the
    device's drops."""
    out = {}
    for kind in ("tail-drop", "codel"):
        run = tmp_path / kind
        r = run_dclab("run", "throughput", "--backend", "sim", "--stack", "tcp", "--size", "20MB", "--link", "lte:poor",
                      "--aqm", kind, "--out", str(run), timeout=120)
        assert r.returncode == 0, r.stderr
        out[kind] = device_sojourn_p99_ms(run)
    (td, td_drops), (codel, codel_drops) = out["tail-drop"], out["codel"]
    assert td_drops == 0 and codel_drops > 0, out
    assert td > 1000 and codel < 2 * 5 + 100, out
    summary, _ = summary_and_flows(tmp_path / "codel")
    assert summary.legs[0].downlink.aqm is not None and summary.legs[0].downlink.aqm.dropped_packets == codel_drops


@pytest.mark.root
def test_an_ecn_capable_quic_stack_is_marked_where_aioquic_is_dropped(tmp_path):
    """A 10 MB download through CoDel (ECN on) on both legs: quinn sends ECT(0), so CoDel
    marks (20 kept runs of quic-go and quinn: 3-17 marks, no drop); the capability and
    the run's environment say so."""
    from dclab.dcemu.records import read_stats
    from dclab.endpoints import get_stack

    assert get_stack("quinn").capabilities.ecn == "library" and get_stack("aioquic").capabilities.ecn == "none"
    assert get_stack("tcp").capabilities.ecn == "sysctl"
    r = run_dclab("run", "throughput", "--stack", "quinn", "--size", "10MB", "--queue", "1000", "--aqm", "codel",
                  "--out", str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr
    summary = read_stats(next((tmp_path / "rep-01").glob("dcemu-stats.jsonl*"))).summary()
    assert summary is not None
    aqm = [leg.downlink.aqm for leg in summary.legs]
    assert all(a is not None and a.marked_packets >= 1 and a.dropped_packets == 0 for a in aqm), aqm
    # its receiver saw the marks: each reached the client once, unless PDCP discarded it
    (flow,) = [f for f in summary.flows if f.protocol == 17]
    assert 1 <= flow.ce_packets <= sum(a.marked_packets for a in aqm if a is not None), summary.flows
    env = orjson.loads((tmp_path / "rep-01" / "environment.json").read_bytes())
    assert env["ecn"] == {"quinn": "library"}
