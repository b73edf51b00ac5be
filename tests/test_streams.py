"""throughput --streams N: N objects of size/N on one connection, requested at once;
per-stream completion times; a sweep over streams (units without root, a short real run
per stack with root)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import run_dclab
from figure_checks import each, panel

from dclab.campaign.report import build_report
from dclab.campaign.store import RunRecord, Store
from dclab.campaign.sweeps import SWEEPS, expand
from dclab.cli import app
from dclab.endpoints.base import ObjectResult, TransferResult, Workload
from dclab.experiments.flows import EXPERIMENT as FLOWS
from dclab.experiments.throughput import EXPERIMENT as THROUGHPUT
from dclab.experiments.throughput import stream_details, workload
from dclab.scenario import build


@pytest.mark.parametrize("args, message", [
    (["--streams", "0"], "--streams: must be 1 to 64 (got 0)"),
    (["--streams", "65"], "--streams: must be 1 to 64 (got 65)"),
    (["--size", "10", "--streams", "20"], "--streams: must be 1 to 10 for a size of 10 bytes"),
])
def test_bad_streams_are_refused_naming_the_option_and_range(args, message, tmp_path):
    r = CliRunner().invoke(app, ["run", "throughput", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split()), r.output
    assert not (tmp_path / "never").exists()


def test_one_stream_is_the_study_download_unchanged():
    s = build()
    plan = THROUGHPUT.plan(s, THROUGHPUT.options(size="5MB"))
    assert plan.flows[0].workload == Workload.single(5_000_000)
    assert THROUGHPUT.options().streams == 1


def test_n_streams_are_n_objects_on_one_connection_in_parallel():
    w = workload(10, 4)
    assert w.objects == (3, 3, 2, 2)  # the first size % N one byte longer, like Workload.ranges
    assert (w.connections, w.streams, w.ranged, w.assignment) == (1, "parallel", False, None)
    assert [w.path_size(i) for i in range(4)] == [3, 3, 2, 2]  # GET /<n> of its own size, not a range
    assert w.total_bytes == 10
    big = workload(100_000_000, 64)
    assert len(big.objects) == 64 and big.total_bytes == 100_000_000 and set(big.objects) == {1_562_500}
    # Every stack takes it: the plan checks the workload against each stack's capabilities.
    for stack in ("aioquic", "ngtcp2", "tcp"):
        plan = THROUGHPUT.plan(build(), THROUGHPUT.options(stack=stack, size="1MB", streams=64))
        assert plan.flows[0].workload.objects_of(0) == list(range(64))


def test_stream_details_from_the_objects():
    objs = [ObjectResult(0, 5, 0, 5, True, 0.0, 0.1, 2.0), ObjectResult(1, 5, 0, 5, True, 0.0, 0.2, 1.0),
            ObjectResult(2, 5, 0, 5, True, 0.0, 0.3, 3.0), ObjectResult(3, 5, 0, 2, False, 0.0, 0.4, 3.5, "short")]
    d = stream_details(TransferResult.from_parts(objs, []))
    assert d["stream_completion_s"] == [2.0, 1.0, 3.0, None]
    assert d["stream_first_byte_s"] == [0.1, 0.2, 0.3, 0.4]
    assert (d["stream_completion_min_s"], d["stream_completion_median_s"], d["stream_completion_max_s"]) == (1.0, 2.0, 3.0)


def test_streams_is_a_sweep_of_throughput_only():
    sweep = SWEEPS["streams"]
    assert list(sweep.defaults) == [1, 2, 4, 8, 16]  # the study's experiment (4)
    assert sweep.applies_to(set(THROUGHPUT.options_model.model_fields))
    assert not sweep.applies_to(set(FLOWS.options_model.model_fields))
    points = expand("streams", [1, 4], build())
    assert [p.options for p in points] == [{"streams": 1}, {"streams": 4}]


def test_report_draws_goodput_and_stream_completion_against_streams(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    for n in (1, 2, 4, 8):
        for stack in ("aioquic", "tcp"):
            metrics = {"goodput_mbps": 10.0 + n, "t0_ms": 0.0}
            if n > 1:
                metrics |= {"stream_completion_median_s": 1.0 + n / 10}
            store.add(RunRecord(run_key=f"{stack}-{n}", experiment="throughput", sweep="streams", param="streams",
                                value=str(n), value_num=float(n), stack=stack, cc="reno", host_config="x", rep=1,
                                ok=True, scenario={}, metrics=metrics, options={"streams": n}, environment={},
                                run_dir="", machine="m", started_at="", finished_at="", campaign="c"))
    page = build_report(store, tmp_path / "report", "t")
    html = page.read_text()
    series = ["aioquic reno x", "tcp reno x"]
    ax = panel(tmp_path / "report" / "throughput-streams.png", title="throughput: streams", ylabel="goodput (Mbit/s)",
               xlabel="concurrent streams on one connection (N)", legend=series, lines=2)
    assert [(s.n, s.y) for s in ax.series] == [(4, (11.0, 18.0))] * 2, "goodput 10 + N at N = 1, 2, 4, 8"
    assert ax.x == pytest.approx((1.0, 8.0), abs=0.1), "N (series drawn slightly apart)"
    ax = panel(tmp_path / "report" / "throughput-streams-streams.png", title="throughput: streams",
               ylabel="median stream completion (s)", legend=series, lines=2)
    assert [s.n for s in ax.series] == [3, 3] and [s.y for s in ax.series] == each((1.2, 1.8), (1.2, 1.8)), "N > 1 only"
    assert "median per-stream completion time" in html
    assert "throughput: streams" in html


def _overlap(objects: list[dict]) -> bool:
    """Every object's [first byte, last byte] overlaps every other's: all were in flight at once."""
    return max(o["first_byte_s"] for o in objects) < min(o["last_byte_s"] for o in objects)


@pytest.mark.root
@pytest.mark.parametrize("stack", ["aioquic", "tcp"])
def test_four_streams_run_at_once_on_one_connection(stack, tmp_path):
    out = tmp_path / "run"
    r = run_dclab("run", "throughput", "--stack", stack, "--size", "2MB", "--streams", "4", "--bw", "20,20",
                  "--out", str(out), "--json", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((out / "rep-01" / "result.json").read_text())
    assert rep["ok"], rep["error"]
    t = rep["flows"][0]["transfer"]
    assert [(o["size"], o["ok"], o["bytes"], o["connection"]) for o in t["objects"]] == [(500_000, True, 500_000, 0)] * 4
    assert len(t["connections"]) == 1 and t["connections"][0]["bytes"] == 2_000_000
    if stack == "tcp":
        assert len(t["extra"]["local_ports"]) == 1  # curl opened one connection for the four
        assert t["extra"]["http_versions"] == ["2"] * 4
    assert _overlap(t["objects"]), t["objects"]
    d = rep["details"]
    assert d["stream_completion_s"] == pytest.approx([o["last_byte_s"] for o in t["objects"]])
    assert d["stream_completion_max_s"] == pytest.approx(t["last_byte_s"])
    assert d["stream_completion_min_s"] <= d["stream_completion_median_s"] <= d["stream_completion_max_s"]
    assert rep["metrics"]["goodput_mbps"] == pytest.approx(2_000_000 * 8 / t["last_byte_s"] / 1e6)


@pytest.mark.root
def test_http2_streams_finish_on_a_slow_cell_with_a_deep_queue(tmp_path):
    """Eight streams of 250 kB over the 1500 m cell (about 1.5 Mbit/s, a 512 kB queue): the
    server hands all eight responses over seconds before they are delivered, and must not
    close the connection meanwhile (Hypercorn's 5 s keep-alive cut the last streams)."""
    out = tmp_path / "run"
    r = run_dclab("run", "throughput", "--stack", "tcp", "--size", "2MB", "--streams", "8", "--link", "lte:1500m",
                  "--delay", "12", "--delay-cov", "0", "--loss", "0.5", "--uplink-delay", "12", "--out", str(out),
                  "--json", timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((out / "rep-01" / "result.json").read_text())
    assert rep["ok"], rep["error"]
    assert [o["bytes"] for o in rep["flows"][0]["transfer"]["objects"]] == [250_000] * 8
    assert rep["flows"][0]["transfer"]["last_byte_s"] > 6, "slow enough that the old 5 s keep-alive would have cut it"


def test_old_store_rows_without_streams_still_compare():
    """A stored throughput run from before --streams has no streams option: planning the
    same run today gives the same key (options at their defaults are not in the key)."""
    from dclab.campaign.plan import StackConfig, run_key

    cfg = StackConfig("aioquic", "reno", "default")
    opts = THROUGHPUT.options(size="5MB").model_dump(mode="json")
    old = {k: v for k, v in opts.items() if k not in ("streams", "tcp_mss", "quic_datagram")}
    assert run_key("throughput", cfg, "batch", 2.0, 1, build(), opts) == run_key("throughput", cfg, "batch", 2.0, 1,
                                                                                  build(), old)
    assert run_key("throughput", cfg, "batch", 2.0, 1, build(), {**opts, "streams": 4}) != run_key(
        "throughput", cfg, "batch", 2.0, 1, build(), opts)
