"""The report's fidelity section (campaign/fidelity.py): a reference file of published
values checked before anything is written, each point matched to the stored runs at its
experiment, sweep, value and series, dclab's mean beside the published value."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from typed_rows import runs

from dclab.campaign import fidelity
from dclab.campaign.report import build_report
from dclab.campaign.store import RunRecord, Store
from dclab.cli.results import report
from dclab.errors import OptionError

REF = """
[[point]]
experiment = "throughput"
sweep = "loss"
value = 0.2
series = "quic-large"
published = 7.6
source = "Fig. 7"

[[point]]
experiment = "throughput"
sweep = "loss"
value = 0.2
published = 8.0

[[point]]
experiment = "throughput"
sweep = "loss"
value = 0.05
published = 10.0
"""


def rows() -> list[dict]:
    out = []
    for host, g in (("quic-large", [12.0, 11.0, None]), ("tcp", [9.0, 8.0, 8.5])):
        for rep, goodput in enumerate(g, start=1):
            out.append({"run_key": f"{host}-{rep}", "experiment": "throughput", "sweep": "loss", "value": "0.2",
                        "value_num": 0.2, "stack": "aioquic" if host != "tcp" else "tcp", "cc": "reno",
                        "host_config": host, "ok": goodput is not None, "metrics": {"goodput_mbps": goodput}})
    return out


def test_points_are_matched_by_value_and_series(tmp_path):
    ref = tmp_path / "ref.toml"
    ref.write_text(REF)
    points = fidelity.load_reference(ref)
    large, both, absent = fidelity.compare(runs(rows()), points)
    # Two stacks at the point: series are "stack cc host_config".
    assert (large.n, large.failed, large.mean) == (0, 0, None), "a series label that matches nothing"
    points[0] = points[0].model_copy(update={"series": "aioquic reno quic-large"})
    large = fidelity.compare(runs(rows()), points)[0]
    assert (large.n, large.failed, large.mean) == (2, 1, pytest.approx(11.5))
    assert large.ratio == pytest.approx(11.5 / 7.6) and large.metric == "goodput_mbps"
    assert both.n == 5 and both.mean == pytest.approx((12 + 11 + 9 + 8 + 8.5) / 5)
    assert absent.n == 0 and absent.ratio is None
    t = fidelity.fidelity_table(fidelity.compare(runs(rows()), points))
    assert t.rows[0][:4] == ["throughput: loss = 0.2", "aioquic reno quic-large", "goodput_mbps", "11.50"]
    assert t.rows[0][-3:] == ["7.6", "1.513", "Fig. 7"] and t.failed == [False, False, True]


@pytest.mark.parametrize("text, message", [
    ("[[point]]\nexperiment = 'throughput'\nsweep = 'loss'\nvalue = 0.2\n", "point[0].published: Field required"),
    ("[[point]]\nexperiment = 'nope'\nsweep = 'loss'\nvalue = 0.2\npublished = 1.0\n", "point[0].experiment: unknown 'nope'"),
    ("[[point]]\nexperiment = 'throughput'\nsweep = 'loss'\nvalue = 0.2\npublished = 1.0\nmetric = 'jfi'\n",
     "point[0].metric: throughput has goodput_mbps (got 'jfi')"),
    ("[[point]]\nexperiment = 'throughput'\nsweep = 'loss'\nvalue = '0.2'\npublished = 1.0\n", "point[0].value:"),
    ("[[point]]\nexperiment = 'throughput'\nsweep = 'loss'\nvalue = 0.2\npublished = 1.0\ncolour = 1\n",
     "point[0].colour: Extra inputs are not permitted"),
    ("point = [", "--reference"),
    ("", "point: Field required"),
])
def test_a_bad_reference_is_refused_naming_the_point_and_field(text, message, tmp_path):
    ref = tmp_path / "ref.toml"
    ref.write_text(text)
    with pytest.raises(OptionError) as e:
        fidelity.load_reference(ref)
    assert message in str(e.value) and str(ref) in str(e.value)
    store = stored(tmp_path)
    r = CliRunner().invoke(report, ["--store", str(store.path), "--reference", str(ref), "--out", str(tmp_path / "rep")])
    assert r.exit_code == 2 and message in " ".join(r.output.split()), r.output
    assert not (tmp_path / "rep").exists(), "nothing written"


def stored(tmp_path: Path) -> Store:
    store = Store(tmp_path / "store.sqlite")
    for r in rows():
        store.add(RunRecord(run_key=r["run_key"], experiment="throughput", stack=r["stack"], cc="reno",
                            host_config=r["host_config"], rep=1, ok=r["ok"], scenario={"bw": [20.0, 20.0]},
                            metrics=r["metrics"], environment={}, run_dir=str(tmp_path / "none"), machine="m",
                            started_at="t", finished_at="t", sweep="loss", param="loss", value="0.2", value_num=0.2,
                            options={"size": 1_000_000}, flows=[]))
    return store


def test_the_report_has_a_fidelity_section(tmp_path):
    store = stored(tmp_path)
    ref = tmp_path / "ref.toml"
    ref.write_text(REF)
    html = build_report(store, tmp_path / "rep", "t", reference=ref).read_text()
    assert '<h2 id="fidelity">Fidelity</h2>' in html and 'href="#fidelity"' in html
    assert "3 points, 1 with successful runs" in html and "Fig. 7" in html
    assert 'id="fidelity"' not in build_report(store, tmp_path / "rep2", "t").read_text()
    assert Path(tmp_path / "rep" / "index.html").is_file()


def test_pdcp_stalls_are_tabled_per_point_from_the_runs_receiver_statistics():
    """The fidelity work's stall statistics (docs/fidelity.md): the throughput sweep's second table, means per run of
    dcemu's receiver counters and wait histogram (as pdcp_summary keeps them)."""
    from dclab.analysis.figures import pdcp_stall_table
    from dclab.experiments import get_experiment

    def pdcp(expiries: int, wait_mean_us: float, lost: int) -> dict:
        return {"rx": {"timer_expiries": expiries, "counts_given_up": expiries * 2},
                "rx_wait_us": {"count": 10, "mean_us": wait_mean_us, "p50_us": 0, "p99_us": 200_000, "max_us": 201_000},
                "legs": {"leg1": {"dropped_loss_packets": lost}, "leg2": {"dropped_loss_packets": lost + 1}}}

    rs = rows()
    for r, (e, w) in zip(rs, [(4, 3000.0), (6, 5000.0), (9, 9000.0), (0, 10.0), (2, 30.0), (1, 20.0)], strict=True):
        r["metrics"]["pdcp"] = pdcp(e, w, e)
    rs.append({**rs[0], "run_key": "bypassed", "metrics": {"goodput_mbps": 9.0, "pdcp": {"legs": {}}},
               "value": "0.1", "value_num": 0.1})
    typed = runs(rs)
    table = pdcp_stall_table(typed)
    # The failed run (third quic-large) and the run without a receiver do not count.
    assert [(d.at.series, d.n) for d in table] == [("aioquic reno quic-large", 2), ("tcp reno tcp", 3)]
    quic, tcp = (d.means for d in table)
    assert (quic["expiries"], quic["given_up"], quic["lost"]) == (5.0, 10.0, 11.0)
    assert (quic["wait_mean_ms"], quic["wait_p99_ms"], quic["wait_max_ms"]) == (4.0, 200.0, 201.0)
    assert tcp["expiries"] == pytest.approx(1.0)
    tables = get_experiment("throughput").sweep_tables(typed)
    assert len(tables) == 2 and "t-Reordering expiries" in tables[1][1].columns
    assert tables[1][1].rows[0][2:5] == ["5", "10", "11"]
