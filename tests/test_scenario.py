"""Scenario model: reference defaults, validation messages, rendering that dcemu accepts."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import tomli_w
from click.testing import CliRunner
from scenario_render import render, throughput_key

from dclab import scenario as sc
from dclab.cli import app
from dclab.experiments import get_experiment
from dclab.paths import DCEMU


def test_defaults_are_the_reference_testbed():
    s = sc.Scenario()
    assert (s.batch, s.split, s.bw, s.delay, s.delay_cov, s.loss) == (100, [50, 50], [20, 20], [10, 10], 0.1, [0, 0])
    assert (s.queue_packets, s.uplink_queue_packets, s.delay_limit, s.t_reordering, s.pdcp_sn_bits) == (100, 10000, 10000, 200, 16)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--batch", "0"], "--batch: must be at least 1 and at most 100000 (got 0)"),
        (["--loss", "0,120"], "--loss (leg 2): must be at least 0 and at most 100 (got 120.0)"),
        (["--bw", "0,20"], "--bw (leg 1): must be at least 0.001 and at most 100000"),
        (["--delay", "1,2,3"], "--delay: needs one value per leg (2, as --bw gives), got 3"),
        (["--split", "a:b"], "--split: expected numbers separated by ':'"),
        (["--split", "0:0"], "--split: at least one share must be above 0"),
        (["--delay-cov", "2"], "--delay-cov: must be at least 0 and at most 1 (got 2.0)"),
        (["--t-reordering", "-1"], "--t-reordering: must be at least 0 and at most 60000"),
        (["--pdcp-processing", "2000"], "--pdcp-processing: must be at least 0 and at most 1000 (got 2000.0)"),
        (["--loss-at", "middle"], "Invalid value for '--loss-at': 'middle' is not one of 'after-rate', 'before-rate'"),
        (["--link", "lte:good", "--loss-at", "before-rate"], "--loss-at: only after-rate with --link"),
    ],
)
def test_invalid_values_are_refused_naming_option_and_range(args, message):
    r = CliRunner().invoke(app, ["scenario", "show", *args])
    assert r.exit_code == 2
    assert message in r.output


def test_options_override_a_scenario_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('batch = 50\nbw = [30, 10]\nsplit = [75, 25]\nt_reordering = "inf"\n')
    r = CliRunner().invoke(app, ["scenario", "show", "--scenario", str(f), "--batch", "10"])
    assert r.exit_code == 0, r.output
    d = tomllib.loads(r.output)
    assert (d["batch"], d["bw"], d["split"], d["t_reordering"]) == (10, [30, 10], [75, 25], "inf")


def test_bad_scenario_file_names_the_file_and_field(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("batch = -5\n")
    r = CliRunner().invoke(app, ["scenario", "show", "--scenario", str(f)])
    assert r.exit_code == 2 and "s.toml: batch: must be at least 1" in r.output


def test_three_legs_resize_the_default_lists():
    r = CliRunner().invoke(app, ["scenario", "show", "--bw", "10,20,30"])
    d = tomllib.loads(r.output)
    assert d["split"] == [50, 50, 50] and d["delay"] == [10, 10, 10]


@pytest.mark.parametrize("kind", ["throughput", "fairness"])
@pytest.mark.parametrize(
    "changes",
    [{}, {"duplicate": True, "loss": [1.0, 0.5]}, {"reordering": False, "t_reordering": None, "delay_cov": 0.0},
     {"bw": [33.33, 6.67], "split": [83, 17], "batch": 2}],
)
def test_rendering_is_accepted_by_dcemu(tmp_path, kind, changes):
    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    s = sc.build(**changes)
    text = render(s, kind, {"server_netns": "dclab-a", "client_netns": "dclab-b"})
    f = tmp_path / "d.toml"
    f.write_text(text)
    p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    d = tomllib.loads(p.stdout)
    assert d["split"]["batch"] == s.batch and d["split"]["ratio"] == s.split
    assert d["legs"][0]["downlink"]["rate"] == f"{s.bw[0]}mbit"
    assert d["legs"][0]["uplink"]["queue_packets"] == 10000 and "uplink" not in d["legs"][1]
    modes = [b["mode"] for b in d["bearers"]]
    assert modes[0] == ("dup" if s.duplicate else "dc")
    assert len(modes) == (3 if kind == "fairness" else 1)


def test_trace_renders_on_both_downlinks(tmp_path):
    from pathlib import Path

    trace = Path(__file__).resolve().parent.parent / "data/traces/raca4g/4G_A_2018.01.27_13.58.29.csv"
    s = sc.build(trace=trace)
    d = tomllib.loads(render(s))
    assert all(leg["downlink"]["trace"]["path"] == str(trace) for leg in d["legs"])
    assert all("rate" not in leg["downlink"] for leg in d["legs"])


def test_one_leg_to_eight_legs(tmp_path):
    """A single leg is single connectivity; eight legs are the most; both render for dcemu."""
    assert sc.build(bw=[20.0], split=[100.0], delay=[10.0], loss=[0.0]).legs == 1
    r = CliRunner().invoke(app, ["scenario", "show", "--bw", ",".join(["5"] * 9)])
    assert r.exit_code == 2 and "--bw: List should have at most 8 items" in r.output
    for n in (1, 8):
        s = sc.build(bw=[10.0] * n, split=[1.0] * n, delay=[5.0] * n, loss=[0.0] * n)
        if not DCEMU.exists():
            pytest.skip("dcemu not built")
        f = tmp_path / f"legs{n}.toml"
        f.write_text(render(s))
        p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        assert len(tomllib.loads(p.stdout)["legs"]) == n


def test_fairness_needs_two_legs():
    r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--experiment", "fairness", "--bw", "20"])
    assert r.exit_code == 2 and "fairness needs two legs" in r.output


def test_defaults_of_the_mquic_options():
    s = sc.Scenario()
    assert (s.reorders_by_jitter, s.uplink_loss, s.uplink_bw, s.uplink_delay) == (True, 0.0, 20.0, 10.0)
    d = tomllib.loads(render(s))
    directions = [d["legs"][0]["downlink"], d["legs"][0]["uplink"], d["legs"][1]["downlink"]]
    assert all(x["jitter_reorders"] is True for x in directions)
    assert "loss" not in d["legs"][0]["uplink"]


@pytest.mark.parametrize("kind", ["throughput", "fairness"])
def test_order_preserving_jitter_uplink_loss_and_queues_render(kind):
    r = CliRunner().invoke(app, ["scenario", "show", "--order-preserving-jitter", "--uplink-loss", "2.5", "--uplink-bw", "5",
                                 "--uplink-delay", "30", "--queue", "64", "--uplink-queue", "500", "--loss", "1,0"])
    assert r.exit_code == 0, r.output
    shown = tomllib.loads(r.output)
    assert (shown["jitter_reorders"], shown["uplink_loss"], shown["uplink_bw"], shown["uplink_delay"],
            shown["queue_packets"], shown["uplink_queue_packets"]) == (False, 2.5, 5.0, 30.0, 64, 500)
    s = sc.build(jitter_reorders=False, uplink_loss=2.5, uplink_bw=5.0, uplink_delay=30.0, queue_packets=64,
                 uplink_queue_packets=500, loss=[1.0, 0.0])
    assert s == sc.Scenario.model_validate(shown)
    d = tomllib.loads(render(s, kind))
    up = d["legs"][0]["uplink"]
    downs = [leg["downlink"] for leg in d["legs"]]
    assert all(x["jitter_reorders"] is False for x in [up, *downs])
    assert up["loss"] == {"model": "bernoulli", "percent": 2.5}
    assert (up["rate"], up["delay"], up["queue_packets"]) == ("5.0mbit", {"distribution": "normal", "mean_ms": 30.0,
                                                                          "std_ms": 3.0}, 500)
    assert "uplink" not in d["legs"][1]
    assert [x["queue_packets"] for x in downs] == [64, 64]
    assert downs[0]["loss"] == {"model": "bernoulli", "percent": 1.0} and "loss" not in downs[1]


def test_order_preserving_jitter_is_accepted_by_dcemu(tmp_path):
    """dcemu reads the rendering with order-preserving jitter on every direction and uplink
    loss on leg 1. That the delay stage then keeps order (and reorders by default) is the
    Rust unit tests' business: `order_preserving_jitter` and `jitter_reorders_in_send_order`
    in emu/src/link/delay.rs."""
    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    s = sc.build(jitter_reorders=False, uplink_loss=3.0, queue_packets=7, uplink_queue_packets=77, delay_cov=0.5)
    f = tmp_path / "d.toml"
    f.write_text(render(s, "throughput", {"server_netns": "dclab-a", "client_netns": "dclab-b"}))
    p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    d = tomllib.loads(p.stdout)
    up = d["legs"][0]["uplink"]
    assert all(leg[k]["jitter_reorders"] is False for leg in d["legs"] for k in ("downlink", "uplink") if k in leg)
    assert up["loss"]["model"] == "bernoulli" and up["loss"]["percent"] == 3.0 and up["queue_packets"] == 77
    assert [leg["downlink"]["queue_packets"] for leg in d["legs"]] == [7, 7]


def test_scenario_file_round_trip_keeps_the_new_fields(tmp_path):
    s = sc.build(jitter_reorders=False, uplink_loss=0.5, queue_packets=20)
    f = tmp_path / "s.toml"
    f.write_text(sc.to_toml(s))
    assert sc.load(f) == s


def test_run_keys_change_only_when_the_new_fields_leave_their_defaults():
    key = throughput_key
    base = key(sc.Scenario())
    assert key(sc.build(jitter_reorders=True, uplink_loss=0.0)) == base
    assert len({base, key(sc.build(jitter_reorders=False)), key(sc.build(uplink_loss=1.0))}) == 3


def test_loss_placement_and_pdcp_processing_reach_dcemu(tmp_path):
    """--loss-at and --pdcp-processing (docs/fidelity.md) render into every direction and [pdcp],
    dcemu reads them back, and run keys change only when they leave their defaults. What
    they do to packets is tested in dcemu: `loss_before_or_after_the_rate_stage`
    (emu/src/link/direction.rs) and `pdcp_processing_delays_each_way_at_both_entities`
    (emu/tests/engine.rs)."""
    from dclab.campaign import plan as cp

    r = CliRunner().invoke(app, ["scenario", "show", "--loss-at", "before-rate", "--pdcp-processing", "1",
                                 "--loss", "0.2,0.2"])
    assert r.exit_code == 0, r.output
    s = sc.Scenario.model_validate(tomllib.loads(r.output))
    assert (s.loss_at, s.pdcp_processing) == ("before-rate", 1.0)
    d = tomllib.loads(render(s))
    assert d["pdcp"]["processing_ms"] == 1.0
    assert {leg[k]["loss_at"] for leg in d["legs"] for k in ("downlink", "uplink") if k in leg} == {"before-rate"}
    if DCEMU.exists():
        f = tmp_path / "d.toml"
        f.write_text(render(s, "fairness", {"server_netns": "dclab-a", "client_netns": "dclab-b"}))
        p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        back = tomllib.loads(p.stdout)
        assert back["pdcp"]["processing_ms"] == 1.0
        assert [leg["downlink"]["loss_at"] for leg in back["legs"]] == ["before-rate", "before-rate"]
    cfg = cp.parse_config("tcp:cubic")
    options = get_experiment("throughput").options().model_dump(mode="json")
    keys = {cp.run_key("throughput", cfg, "loss", 0.2, 1, x, options)
            for x in (sc.build(loss=[0.2, 0.2]), sc.build(loss=[0.2, 0.2], loss_at="after-rate", pdcp_processing=0.0),
                      sc.build(loss=[0.2, 0.2], loss_at="before-rate"), sc.build(loss=[0.2, 0.2], pdcp_processing=1.0))}
    assert len(keys) == 3


def test_lte_levels_are_the_study_distances():
    from dclab import lte, radio

    # TR 36.942 macro path loss, 46 dBm, 9 dB noise figure over 20 MHz: computed, not typed.
    assert round(lte.noise_dbm(), 1) == -92.0
    assert [lte.sinr_db(d) for d in lte.LEVELS.values()] == [32.5, 14.6, 3.3, -5.1]
    assert round(lte.path_loss_db(1000), 1) == 128.1
    assert [lte.parse_link(x).level for x in ("lte:250m", "lte:2500m", "lte:poor")] == ["good", "edge", "poor"]
    # parsed once, kept as given: the cells by their levels, the text as the user wrote it
    cell = sc.build(sc.Scenario(), link="lte:750m").link
    assert cell == radio.RadioLink("lte", (lte.CellLink("medium"),)) and cell.name == "lte:medium"
    assert str(cell) == cell.text == "lte:750m" and sc.build(link="lte:750m").model_dump()["link"] == "lte:750m"
    assert cell.capacity_mbps == 23.9 and cell.legs == 1
    assert cell.cells[0].device()["mean_sinr_db"] == 14.6 and sc.Scenario().link is None
    for bad in ("wifi:good", "nr:good"):
        with pytest.raises(ValueError, match="^--link: expected lte:LEVEL "):
            lte.parse_link(bad)
    for bad in ("lte:far", "lte", "lte:300m"):
        with pytest.raises(ValueError, match="^--link: LTE level one of good, medium, poor, edge, 250m"):
            lte.parse_link(bad)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--link", "lte:far"], "--link: LTE level one of good, medium, poor, edge, 250m, 750m, 1500m, 2500m (got 'far')"),
        # each cell of endc: is named by its RAT, with what the user gave for it
        (["--link", "endc:,poor"], "--link: LTE level one of good, medium, poor, edge, 250m, 750m, 1500m, 2500m (got '')"),
        (["--link", "endc:good,250m"], "--link: NR level one of good, medium, poor, edge, 150m, 200m, 400m, 700m (got '250m')"),
        (["--link", "lte:good", "--bw", "30"], "--bw: not used with --link"),
        (["--link", "lte:good", "--duplicate"], "--duplicate: needs two legs; one cell gives one (endc: gives two)"),
        (["--link", "lte:good", "--delay", "12,12"],
         "--delay: needs one value per leg (1, --link lte:good gives 1), got 2"),
        (["--link", "endc:good,good", "--delay", "12"],
         "--delay: needs one value per leg (2, --link endc:good,good gives 2), got 1"),
        (["--link", "nr:far"], "--link: NR level one of good, medium, poor, edge, 150m, 200m, 400m, 700m (got 'far')"),
        (["--link", "endc:good"], "--link: expected endc:LTE_LEVEL,NR_LEVEL (got 'endc:good')"),
        (["--link", "umts:good"], "--link: expected lte:LEVEL, nr:LEVEL or endc:LTE_LEVEL,NR_LEVEL (got 'umts:good')"),
        (["--link", "nr:good", "--outage", "1:1:1"], "--outage: not with one cell"),
        (["--link", "nr:good", "--x2-delay", "3"], "--x2-delay: needs a secondary leg"),
        (["--x2-delay", "1001"], "--x2-delay"),
        (["--link", "nr:good", "--split-policy", "ddds"],
         "--split-policy: ddds needs a secondary leg (two legs or more, the first the master's"),
        (["--split-policy", "delay-aware", "--duplicate"],
         "--split-policy: delay-aware splits; duplicate sends every packet on every leg"),
        (["--split-policy", "credit"], "'credit' is not one of 'static', 'ddds', 'delay-aware', 'delay-target'"),
        (["--hold-bytes", "100"], "--hold-bytes: must be at least 9000 and at most 1000000000 (got 100)"),
        (["--discard-ms", "0"], "--discard-ms: must be at least 1 and at most 1500 (got 0"),
        (["--fallback-ms", "1001"], "--fallback-ms: must be at least 0 and at most 1000 (got 1001"),
        (["--report-period", "0.5"], "--report-period: must be at least 1 and at most 1000 (got 0.5)"),
        (["--target-delay", "-1"], "--target-delay: must be at least 0 and at most 10000 (got -1"),
        (["--link", "nr:good", "--sn-events", "change@1"], "--sn-events: needs a secondary leg (two legs or more; endc: gives two)"),
        (["--link", "endc:good,good", "--sn-events", "swap@1"],
         "--sn-events: expected release@AT_S, add@AT_S or change@AT_S[:INTERRUPTION_MS]"),
        (["--link", "endc:good,good", "--sn-events", "add@2,release@1"], "--sn-events: give the events in time order"),
        (["--link", "endc:good,good", "--sn-events", "add@1,change@2:70000"],
         "--sn-events (event 2): interruption_ms must be at least 0 and at most 60000 (got 70000.0)"),
    ],
)
def test_bad_links_are_refused_naming_the_option(args, message):
    r = CliRunner().invoke(app, ["scenario", "show", *args])
    assert r.exit_code == 2
    assert message in r.output


@pytest.mark.parametrize("link, sinr", [("lte:good", 32.5), ("lte:1500m", 3.3)])
def test_lte_link_renders_one_cell_leg_that_dcemu_accepts(tmp_path, link, sinr):
    r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--link", link, "--delay", "12", "--loss", "0.5",
                                 "--delay-cov", "0", "--uplink-delay", "12"])
    assert r.exit_code == 0, r.output
    d = tomllib.loads(r.output)
    (leg,) = d["legs"]
    down = leg["downlink"]
    assert down["delay"] == {"distribution": "constant", "ms": 12.0}
    assert down["loss"] == {"model": "bernoulli", "percent": 0.5}
    assert "rate" not in down and "queue_packets" not in down
    cell = down["cell"]
    assert (cell["bandwidth_mhz"], cell["scheduler"]) == (20.0, "pf")
    # The throughput experiment's one bearer (dc over the one leg) is the one device.
    assert [b["name"] for b in d["bearers"]] == ["dc"]
    assert cell["devices"] == [{"mean_sinr_db": sinr, "doppler_hz": 5.0, "fading": "rayleigh", "queue_bytes": 512000}]
    assert d["pdcp"]["reordering"] is False
    s = sc.build(link=link)
    assert s.legs == 1 and s.delay == [10.0] and s.split == [50.0]
    assert sc.capacity_mbps(s) == {"lte:good": 64.1, "lte:1500m": 4.05}[link]
    assert_dcemu_accepts(tmp_path / "lte.toml", r.output)


def assert_dcemu_accepts(path: Path, text: str) -> None:
    """``dcemu check`` takes ``text`` (skips where dcemu is not built)."""
    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    path.write_text(text)
    p = subprocess.run([str(DCEMU), "check", str(path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_nr_levels_are_computed_from_the_uma_path_loss():
    from dclab import nr, radio

    # TR 38.901 UMa at 3.5 GHz, 46 dBm, 9 dB noise figure over 100 MHz.
    assert round(nr.noise_dbm(), 1) == -85.0
    assert [nr.sinr_db(d, los) for d, los in nr.LEVELS.values()] == [44.1, 16.5, 4.9, -4.6]
    # 150 m LOS: d3D = 151.8 m; 28 + 22 log10(151.8) + 20 log10(3.5) = 86.9 dB.
    assert round(nr.path_loss_db(150, True), 1) == 86.9
    link = radio.parse_link("endc:750m,150m")
    assert link.name == "endc:medium,good" and str(link) == "endc:750m,150m" and link.legs == 2
    # HARQ resends a tenth: 1553.4 sent, 1398.1 for the device.
    assert link.capacities == [23.9, 1398.1] and link.capacity_mbps == 1422.0


def test_nr_and_endc_links_render_cells_that_dcemu_accepts(tmp_path):
    r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--link", "endc:good,medium", "--delay", "10,4",
                                 "--x2-delay", "3"])
    assert r.exit_code == 0, r.output
    d = tomllib.loads(r.output)
    lte_leg, nr_leg = d["legs"]
    assert "cell" in lte_leg["downlink"] and "uplink" in lte_leg and "uplink" not in nr_leg
    assert lte_leg["downlink"]["cell"].get("rat", "lte") == "lte"
    cell = nr_leg["downlink"]["cell"]
    assert cell["rat"] == "nr" and cell["nr"] == {"numerology": 1, "layers": 4, "tdd": "DDDSU"}
    assert cell["devices"] == [{"mean_sinr_db": 16.5, "doppler_hz": 10.0, "fading": "rayleigh",
                                "queue_bytes": 3_000_000}]
    assert nr_leg["downlink"]["delay"]["mean_ms"] == 4.0
    # The X2 hop to the secondary leg, none before the master's.
    assert nr_leg["x2"]["delay"] == {"distribution": "constant", "ms": 3.0} and "x2" not in lte_leg
    # The DC bearer over both legs, reordered by PDCP.
    assert [b["name"] for b in d["bearers"]] == ["dc"] and d["pdcp"]["reordering"] is True
    s = sc.build(link="endc:good,medium", duplicate=True)
    assert s.legs == 2 and s.split == [50.0, 50.0]
    one = tomllib.loads(CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--link", "nr:good"]).output)
    assert len(one["legs"]) == 1 and one["pdcp"]["reordering"] is True  # NR's RLC delivers out of order
    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    for name, text in (("endc", r.output), ("nr", tomli_w.dumps(one))):
        f = tmp_path / f"{name}.toml"
        f.write_text(text)
        p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


def test_nr_capacity_table_is_the_carriers_own():
    """The table's numbers against `dcemu cell-capacity` (one seed of an hour: within 5 %)."""
    import json

    from dclab import nr

    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    for name, (d, los) in nr.LEVELS.items():
        if name == "edge":
            continue  # 8.5 Mbit/s, mostly out of range: one seed's hour differs by more
        p = subprocess.run([str(DCEMU), "cell-capacity", "--rat", "nr", "--bandwidth-mhz", str(nr.BANDWIDTH_MHZ),
                            "--layers", str(nr.LAYERS), "--tdd", nr.TDD, "--doppler", str(nr.DOPPLER_HZ),
                            "--sinr-db", str(nr.sinr_db(d, los)), "--seconds", "3600"],
                           capture_output=True, text=True, check=True)
        mean = json.loads(p.stdout)["mean_mbps"]
        assert abs(mean / nr.SENT_MBPS[name] - 1) < 0.05, (name, mean)


def test_lte_capacity_table_is_the_cells_own():
    """The table's numbers against `dcemu cell-capacity` (one seed of an hour: within 5 %)."""
    import json

    from dclab import lte

    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    for name, d in lte.LEVELS.items():
        if name == "edge":
            continue  # 0.3 Mbit/s: one seed's hour differs by more
        p = subprocess.run([str(DCEMU), "cell-capacity", "--sinr-db", str(lte.sinr_db(d)), "--seconds", "3600"],
                           capture_output=True, text=True, check=True)
        mean = json.loads(p.stdout)["mean_mbps"]
        assert abs(mean / lte.CAPACITY_MBPS[name] - 1) < 0.05, (name, mean)


def test_scenario_file_round_trip_keeps_the_link(tmp_path):
    s = sc.build(link="lte:medium", delay=[12.0], loss=[0.5])
    f = tmp_path / "s.toml"
    f.write_text(sc.to_toml(s))
    assert sc.load(f) == s
    assert "link =" not in sc.to_toml(sc.Scenario())


def test_cell_trace_writes_a_mahimahi_trace(tmp_path):
    r = CliRunner().invoke(app, ["cell", "trace", "--link", "lte:far", "--out", "-"])
    assert r.exit_code == 2 and "--link" in r.output
    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    out = tmp_path / "good.trace"
    r = CliRunner().invoke(app, ["cell", "trace", "--link", "lte:250m", "--seconds", "10", "--out", str(out)])
    assert r.exit_code == 0, r.output
    times = [int(x) for x in out.read_text().split()]
    assert times == sorted(times) and 1 <= times[0] and times[-1] <= 10_000
    # About the level's mean capacity (64.1 Mbit/s) in 1500-byte packets.
    assert 0.85 < len(times) * 12_000 / 10 / 1e6 / 64.1 < 1.1
    r = CliRunner().invoke(app, ["cell", "trace", "--link", "lte:good", "--seconds", "-1", "--out", "-"])
    assert r.exit_code == 2 and "--seconds: must be above 0 and at most 86400 (got -1)" in r.output
    # To standard output, dcemu's own: passed through, not held (a long trace exceeds memory).
    p = subprocess.run([sys.executable, "-m", "dclab", "cell", "trace", "--link", "lte:250m", "--seconds", "10",
                        "--out", "-"], capture_output=True, text=True)  # fmt: skip
    assert p.returncode == 0 and p.stdout == out.read_text(), p.stderr


def test_a_cell_keeps_packet_order_unless_asked_and_says_so():
    """Over a cell the jitter preserves order by default (an LTE cell and its core deliver in
    order); --jitter-reorders still asks for netem's. The legs keep netem's default."""
    from dclab.campaign import plan as cp

    cell = sc.build(link="lte:good")
    assert cell.jitter_reorders is None and not cell.reorders_by_jitter
    assert cell.jitter() == "order-preserving, cov 0.1"
    d = tomllib.loads(render(cell))
    assert [leg["downlink"]["jitter_reorders"] for leg in d["legs"]] == [False]
    assert d["legs"][0]["uplink"]["jitter_reorders"] is False
    asked = sc.build(link="lte:good", jitter_reorders=True)
    assert asked.reorders_by_jitter and asked.jitter() == "reordering (netem), cov 0.1"
    assert tomllib.loads(render(asked))["legs"][0]["downlink"]["jitter_reorders"] is True
    assert sc.Scenario().jitter() == "reordering (netem), cov 0.1" and sc.build(delay_cov=0).jitter() == "none"
    r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--link", "lte:good"])
    assert r.exit_code == 0, r.output
    assert tomllib.loads(r.output)["legs"][0]["downlink"]["jitter_reorders"] is False

    # Keys: a cell's run that relied on the old (reordering) default runs again; one that
    # asked for either semantics keeps its key.
    cfg = cp.parse_config("tcp:cubic")
    options = get_experiment("download").options().model_dump(mode="json")

    def key(s: sc.Scenario) -> str:
        return cp.run_key("download", cfg, "none", None, 1, s, options)

    assert key(cell) == key(sc.build(link="lte:good", jitter_reorders=False))
    assert key(asked) != key(cell)


def test_flow_controlled_splits_render_for_dcemu(tmp_path):
    args = ["scenario", "show", "--dcemu", "--link", "endc:good,good", "--x2-delay", "5"]
    static = tomllib.loads(CliRunner().invoke(app, args).output)
    # The static split renders as before the policies existed.
    assert static["split"] == {"batch": 100, "ratio": [50.0, 50.0]}
    r = CliRunner().invoke(app, [*args, "--split-policy", "ddds", "--report-period", "5", "--target-delay", "20"])
    assert r.exit_code == 0, r.output
    d = tomllib.loads(r.output)
    assert d["split"] == {"batch": 100, "ratio": [50.0, 50.0], "policy": "ddds", "period_ms": 5.0,
                          "target_delay_ms": 20.0}
    s = sc.build(link="endc:good,good", split_policy="delay-aware")
    assert s.split_text() == "split delay-aware (reports every 10 ms)"
    r = CliRunner().invoke(app, [*args, "--split-policy", "delay-target", "--target-delay", "20", "--hold-bytes",
                                 "2000000", "--discard-ms", "50"])
    assert r.exit_code == 0, r.output
    assert tomllib.loads(r.output)["split"] == {
        "batch": 100, "ratio": [50.0, 50.0], "policy": "delay-target", "period_ms": 10.0, "target_delay_ms": 20.0,
        "hold_bytes": 2000000, "discard_ms": 50.0}
    assert_dcemu_accepts(tmp_path / "target.toml", r.output)
    assert sc.build(split_policy="delay-target").split_text() == (
        "split delay-target (reports every 10 ms, target 10 ms, hold 4 MB, discard 100 ms)")
    assert sc.build(split_policy="ddds").split_text() == "split ddds (reports every 10 ms, target 10 ms)"
    assert sc.Scenario().split_text() == "batch 100, split 50:50"
    assert_dcemu_accepts(tmp_path / "endc.toml", r.output)
    r = CliRunner().invoke(app, [*args, "--split-policy", "delay-target", "--fallback-ms", "5"])
    assert r.exit_code == 0, r.output
    assert tomllib.loads(r.output)["split"]["fallback_ms"] == 5.0
    assert_dcemu_accepts(tmp_path / "fallback.toml", r.output)
    assert sc.build(split_policy="delay-aware", fallback_ms=5).split_text() == (
        "split delay-aware (reports every 10 ms, fallback after 5 ms)")


def test_secondary_node_events_render_as_dcemu_schedule_changes(tmp_path):
    r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--link", "endc:good,good", "--outage", "1:0.5:1",
                                 "--sn-events", "change@1:80, release@2:lose ,add@3"])
    assert r.exit_code == 0, r.output
    d = tomllib.loads(r.output)
    events = [(c["at_ms"], c["secondary"]) for c in d["schedule"] if "secondary" in c]
    assert events == [(1000.0, {"event": "change", "interruption_ms": 80.0, "buffered": "forward"}),
                      (2000.0, {"event": "release", "interruption_ms": 50.0, "buffered": "lose"}),
                      (3000.0, {"event": "add", "interruption_ms": 50.0, "buffered": "forward"})]
    assert all(c["leg"] == "leg2" for c in d["schedule"] if "secondary" in c)
    assert [c["at_ms"] for c in d["schedule"]] == sorted(c["at_ms"] for c in d["schedule"])
    s = sc.build(link="endc:good,good", sn_events="change@1:80,release@2:lose")
    assert [str(e) for e in s.sn_events or []] == ["change@1:80", "release@2:lose"]
    assert_dcemu_accepts(tmp_path / "sn.toml", r.output)


def test_options_a_split_policy_does_not_read_are_refused():
    """Changed from its default, an option the policy ignores is refused (it would only
    split the run key); the options each policy reads are taken."""
    for policy, changes in [("ddds", {"batch": 20}), ("delay-aware", {"split": [5.0, 95.0]}),
                            ("static", {"report_period": 5.0}), ("delay-aware", {"target_delay": 20.0}),
                            ("ddds", {"hold_bytes": 1_000_000}), ("static", {"discard_ms": 50.0}),
                            ("static", {"fallback_ms": 5.0})]:
        (field,) = changes
        with pytest.raises(ValueError, match=f"--{field.replace('_', '-')}: not used by split policy {policy} "):
            sc.build(link="endc:good,good", split_policy=policy, **changes)
    sc.build(link="endc:good,good", split_policy="delay-target", target_delay=20.0, hold_bytes=1_000_000,
             discard_ms=50.0, report_period=5.0)
    sc.build(link="endc:good,good", split_policy="ddds", target_delay=20.0, report_period=5.0)
    sc.build(link="endc:good,good", batch=20, split=[5.0, 95.0])
    sc.build(link="lte:good", batch=20)


def test_secondary_events_must_make_sense_in_order():
    """A run starts with its secondary: an add needs a release before it, a release or a
    change needs a secondary."""
    for events, want in [("add@1", "add@1 adds a secondary that is there"),
                         ("release@1,release@2", "release@2 with no secondary"),
                         ("release@1,change@2:50", "change@2:50 with no secondary"),
                         ("release@1,add@2,add@3", "add@3 adds a secondary that is there")]:
        with pytest.raises(ValueError, match=want):
            sc.build(link="endc:good,good", split_policy="ddds", sn_events=events)
    s = sc.build(link="endc:good,good", split_policy="ddds", sn_events="release@1,add@2,change@3:40:lose,release@4")
    assert [str(e) for e in s.sn_events or []] == ["release@1", "add@2", "change@3:40:lose", "release@4"]


def test_a_trace_per_leg_is_refused_under_the_option_the_user_gave():
    """--trace a,b,c becomes the field traces; the message names --trace (there is no
    --traces)."""
    with pytest.raises(ValueError, match=r"^--trace: needs one per leg \(2, as --bw gives\), got 3"):
        sc.build(traces=[Path("a"), Path("b"), Path("c")])


def test_the_sn_length_is_nr_pdcps_over_nr_links_and_the_studys_elsewhere(tmp_path):
    """TS 38.323 gives NR PDCP 12 or 18 bits: over nr: and endc: the SN is 18 bits unless
    given, elsewhere the DC study's 16; a run's key holds the length as run, so the wired
    runs of every store keep theirs."""
    from dclab.campaign.plan import StackConfig, run_key

    assert [sc.build(link=link).pdcp_sn_bits for link in ("endc:good,poor", "nr:good", "lte:good")] == [18, 18, 16]
    assert sc.Scenario().pdcp_sn_bits == 16 and sc.build(link="endc:good,poor", sn_bits=16).pdcp_sn_bits == 16
    r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--link", "endc:good,poor"])
    assert tomllib.loads(r.output)["pdcp"]["sn_bits"] == 18
    r = CliRunner().invoke(app, ["scenario", "show", "--dcemu", "--sn-bits", "12"])
    assert tomllib.loads(r.output)["pdcp"]["sn_bits"] == 12
    r = CliRunner().invoke(app, ["scenario", "show", "--sn-bits", "15"])
    assert r.exit_code == 2 and "'15' is not one of '12', '16', '18'" in r.output
    cfg = StackConfig("tcp", "cubic")
    key = lambda s: run_key("throughput", cfg, "", 0.0, 1, s, {"stack": "tcp", "cc": "cubic"})  # noqa: E731
    assert key(sc.Scenario()) == key(sc.build(sn_bits=16)) != key(sc.build(sn_bits=18))
