"""The LTE cell carrying real traffic (``--link lte:LEVEL``): two devices, each with its
own TCP flow, get the scheduler's shares; the cell figures drawn from dcemu's records;
``--queue`` refused with a cell. The cell's own maths is tested in virtual time by the
Rust tests beside ``emu/src/cell/``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from figure_checks import check, figure, spans
from measured import check_bound

from dclab import lte
from dclab.analysis import cell
from dclab.analysis.figures import read_stats
from dclab.cli import app
from dclab.dcemu.records import Leg, Stats
from dclab.scenario import ScenarioError, build


def interval(t_ms: float, devices: list[tuple[str, int, int, int, int]], ttis: int, idle: int = 0) -> Stats:
    """A dcemu interval record with one cell leg; a device is (bearer, rbs, bytes_out,
    capacity_bits, queue_bytes), counters cumulative."""
    return Stats.model_validate({"type": "interval", "t_ms": t_ms, "legs": [{"name": "leg1", "cell": {
        "bandwidth_mhz": 20.0, "rbs_per_tti": 100, "ttis": ttis, "idle_ttis": idle,
        "devices": [{"device": i, "bearer": b, "rbs": rbs, "bytes_out": out, "capacity_bits": cap,
                     "queue_bytes": q, "cqi": 9, "dropped_packets": 0, "out_mbps": 0.0}
                    for i, (b, rbs, out, cap, q) in enumerate(devices)]}}]})


def test_cell_shares_and_series_from_records():
    recs = [interval(0, [("a", 0, 0, 0, 0), ("b", 0, 0, 0, 0)], 0),
            interval(100, [("a", 3000, 100_000, 800_000, 5000), ("b", 7000, 300_000, 2_400_000, 9000)], 100),
            interval(200, [("a", 6000, 200_000, 1_600_000, 0), ("b", 13000, 600_000, 4_800_000, 0)], 190, idle=10)]
    shares = cell.cell_shares(recs, 0, 200)
    assert shares["a"]["rb_share"] == pytest.approx(6000 / 19000)
    assert shares["b"]["byte_share"] == pytest.approx(0.75)
    assert shares["a"]["out_mbps"] == pytest.approx(200_000 * 8 / 0.2 / 1e6)
    assert shares["b"]["used"] == pytest.approx(1.0)
    series = cell.cell_series(recs, t0_ms=100)
    assert series["a"].t == [-0.1, 0.0, 0.1]
    # An interval's share counts the idle TTIs' RBs too (wasted, not given to anyone).
    assert series["a"].rb_share[1:] == [pytest.approx(0.3), pytest.approx(3000 / 10000)]
    assert series["b"].queue_kb == [0.0, 9.0, 0.0]
    assert cell.has_cell(recs) and not cell.has_cell([Stats(type="interval", t_ms=0, legs=[Leg(name="leg1")])])
    assert cell.cell_shares(recs[:1], 0, 200) == {}


def test_queue_is_refused_with_a_cell():
    with pytest.raises(ScenarioError, match="--queue: not used with --link"):
        build(link="lte:good", queue_packets=50)
    assert build(link="lte:good").queue_packets == 100  # the default stays accepted


@pytest.mark.root
def test_two_devices_get_their_scheduled_shares(tmp_path):
    """Two saturating TCP flows, one per device, both at the medium level: proportional
    fair gives each about half the resource blocks, each device sends what it is granted
    (a backlogged queue), and the flows' throughputs are the cell's per-device output."""
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["run", "flows", "--mix", "tcp:cubic=2", "--link", "lte:medium", "--duration", "7",
                                 "--warmup", "2", "--delay", "12", "--uplink-delay", "12", "--delay-cov", "0",
                                 "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output.strip().splitlines()[-1])
    assert summary["failed"] == 0
    rep = json.loads((out / "rep-01" / "result.json").read_text())
    t0 = rep["t0_ms"]
    shares = cell.cell_shares(read_stats(out / "rep-01"), t0 + 2000, t0 + 7000)
    assert set(shares) == {"tcp-cubic-1", "tcp-cubic-2"}
    for name, s in shares.items():
        assert 0.38 <= s["rb_share"] <= 0.62, (name, shares)
        assert s["used"] >= 0.95, (name, shares)  # sent (almost) every bit of its grants
        flow = summary["flows"][name]["mean_mbps"]
        assert flow == pytest.approx(s["out_mbps"], rel=0.1), (name, flow, shares)
    total = sum(s["out_mbps"] for s in shares.values())
    # What the cell carried for both over the 5 s window (its hour-long mean capacity at the
    # level is 23.9 Mbit/s for one device; five seconds of 5 Hz fading sit near it)
    check_bound("cell.two_devices_medium_total_mbps", total)
    # The flows over the 7 s window, then the cell's panels: a line per device, as recorded
    flows, rate, rbs, queue = figure(out / "rep-01" / "flows.png", ["flows: tcp:cubic=2, lte:medium, 12 ms",
                                                                  "the cell, per device (bearer)", "", ""]).axes
    names = ["tcp-cubic-1", "tcp-cubic-2"]
    check(flows, legend=[*names, "warm-up (2 s, not measured)"], lines=2, ylabel="flow throughput (Mbit/s)")
    check(queue, xlabel="time since start (s)")
    devices = cell.cell_series(read_stats(out / "rep-01"), t0)
    for ax, key, label in ((rate, "out_mbps", "out of the cell (Mbit/s)"), (rbs, "rb_share", "share of RBs"),
                           (queue, "queue_kb", "queue (kB)")):
        check(ax, ylabel=label, lines=2)
        assert [s.label for s in ax.series] == names
        for s in ax.series:
            d = devices[s.label]
            assert s.y == spans(v for t, v in zip(d.t, getattr(d, key)) if 0 <= t <= 7), (label, s)
    assert all(s.y[1] <= 1 for s in rbs.series) and all(s.y[1] <= lte.QUEUE_BYTES / 1e3 for s in queue.series)
    # above the cell's best CQI with every RB (about 67 Mbit/s); each flow got some
    assert all(0.5 < s.y[1] < 3 * lte.CAPACITY_MBPS["medium"] for s in flows.series + rate.series)
