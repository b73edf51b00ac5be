"""The flows experiment (N QUIC against M TCP flows): --mix parsed and refused before
anything starts, one bearer per flow on leg 1, metrics over [warmup, duration] from
dcemu's per-bearer records, the table, --json and the figures; one real run (root)."""

from __future__ import annotations

import json
import types

import pytest
from click.testing import CliRunner
from figure_checks import each, figure, panel
from measured import check_bound
from typed_rows import runs

from dclab.analysis.metrics import window_means
from dclab.analysis.stored_run import AnyRun
from dclab.cli import app
from dclab.dcemu.config import to_dcemu
from dclab.dcemu.process import DCEMU, check_scenario
from dclab.dcemu.records import Stats
from dclab.endpoints.base import TransferResult
from dclab.experiments import flows as fx
from dclab.experiments import get_experiment
from dclab.experiments import window as wx
from dclab.experiments.base import RepResult
from dclab.paths import CLIENT_ADDR, SERVER_ADDR
from dclab.scenario import Scenario, build

EXP = get_experiment("flows")


# ---------------------------------------------------------------------------------------
# --mix

def test_mix_is_parsed_with_each_stacks_default_cc():
    mix = fx.parse_mix("aioquic:reno=1, tcp=5,ngtcp2:bbr=2")
    assert [(e.stack, e.cc, e.count, e.transport) for e in mix] == [
        ("aioquic", "reno", 1, "quic"), ("tcp", "cubic", 5, "tcp"), ("ngtcp2", "bbr", 2, "quic")]
    names = [n for n, _ in fx.flow_names(mix)]
    assert names == ["aioquic-reno-1", "tcp-cubic-1", "tcp-cubic-2", "tcp-cubic-3", "tcp-cubic-4", "tcp-cubic-5",
                     "ngtcp2-bbr-1", "ngtcp2-bbr-2"]
    assert fx.parse_mix("aioquic:reno=1,aioquic:cubic=1,tcp:reno=30")[2].count == 30  # 32 in all


@pytest.mark.parametrize(
    "mix, message",
    [
        ("quiche=1", "stack must be one of aioquic, aioquic-2020, mptcp, ngtcp2, noq, quic-go, quinn, tcp (got 'quiche'"),
        ("aioquic:vegas=1", "aioquic offers reno, cubic, bbr (got 'vegas')"),
        ("tcp:bbr2=1", "tcp offers cubic, reno, bbr (got 'bbr2')"),
        ("tcp:reno=1,tcp:cubic=2", "TCP flows share the server namespace's congestion control; give them one (got cubic, reno)"),
        ("aioquic:reno=1,tcp=1,tcp:reno=1", "TCP flows share"),
        ("aioquic=0", "COUNT must be a whole number from 1 to 32 (got 0"),
        ("aioquic=33", "COUNT must be a whole number from 1 to 32 (got 33"),
        ("aioquic=-1", "COUNT must be a whole number from 1 to 32"),
        ("aioquic=1.5", "COUNT must be a whole number from 1 to 32 (got '1.5'"),
        ("aioquic=20,tcp=13", "at most 32 flows in all (got 33)"),
        ("aioquic", "expected STACK[:CC]=COUNT[,...]"),
        ("aioquic:=1", "expected STACK[:CC]=COUNT[,...]"),
        ("=3", "expected STACK[:CC]=COUNT[,...]"),
        ("aioquic=1,", "expected STACK[:CC]=COUNT[,...]"),
        ("", "expected STACK[:CC]=COUNT[,...]"),
        ("aioquic=1,aioquic:reno=2", "aioquic:reno is given twice"),
    ],
)
def test_bad_mix_is_refused_naming_mix_before_anything_starts(mix, message, tmp_path):
    with pytest.raises(ValueError, match=None) as e:
        fx.parse_mix(mix)
    assert message in str(e.value)
    r = CliRunner().invoke(app, ["run", "flows", "--mix", mix, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2, r.output
    text = " ".join(r.output.split())
    assert "--mix" in text and message in text, text
    assert not (tmp_path / "never").exists(), "nothing was started"


@pytest.mark.parametrize(
    "args, option",
    [
        (["--warmup", "10", "--duration", "10"], "--warmup"),
        (["--warmup", "9.5", "--duration", "10"], "--warmup"),
        (["--warmup", "-1"], "--warmup"),
        (["--duration", "0.5"], "--duration"),
        (["--udp-buffer", "huge"], "--udp-buffer"),
        (["--size", "0"], "--size"),
    ],
)
def test_bad_window_and_other_options_are_refused(args, option, tmp_path):
    r = CliRunner().invoke(app, ["run", "flows", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2 and option in r.output, r.output
    assert not (tmp_path / "never").exists()


def test_help_documents_mix_and_the_window():
    r = CliRunner().invoke(app, ["run", "flows", "--help"])
    text = " ".join(r.output.split())
    assert r.exit_code == 0
    for opt in ("--mix", "--warmup", "--duration", "--size", "--udp-buffer", "STACK[:CC]=COUNT", "[default: 1GB]"):
        assert opt in text


# ---------------------------------------------------------------------------------------
# The plan

def one_leg() -> Scenario:
    return build(Scenario(), bw=[20.0], split=[100.0], delay=[10.0], loss=[0.0])


@pytest.mark.parametrize("scenario", [Scenario(), one_leg()], ids=["two-legs", "one-leg"])
def test_plan_has_one_sc_bearer_per_flow_on_leg_1_with_distinct_ports(scenario):
    o = EXP.options(mix="aioquic:reno=2,ngtcp2=1,tcp:reno=3", size="5MB")
    s = EXP.scenario(scenario, o)
    assert s.stats_interval_ms == 100.0
    plan = EXP.plan(s, o)
    names = ["aioquic-reno-1", "aioquic-reno-2", "ngtcp2-cubic-1", "tcp-reno-1", "tcp-reno-2", "tcp-reno-3"]
    assert [f.name for f in plan.flows] == names
    assert [b.name for b in plan.bearers] == names
    assert all(b.mode == "sc" and b.legs == (1,) for b in plan.bearers)
    assert all(f.bearer == f.name for f in plan.flows), "each flow on its own bearer, named after it"
    ports = [f.port for f in plan.flows]
    assert len(set(ports)) == len(ports) and all(p is not None for p in ports)
    assert [f.cc for f in plan.flows] == ["reno", "reno", "cubic", "reno", "reno", "reno"]
    assert all(f.workload.total_bytes == 5_000_000 for f in plan.flows)
    assert plan.tcp_ccs() == ("reno",) and plan.transports() == {"udp", "tcp"}
    assert plan.stats_interval_ms == 100.0


@pytest.mark.skipif(not DCEMU.exists(), reason="dcemu not built")
def test_dcemu_accepts_the_plan_of_32_flows():
    o = EXP.options(mix="aioquic=16,tcp=16")
    s = EXP.scenario(one_leg(), o)
    plan = EXP.plan(s, o)
    assert len(plan.flows) == 32
    text = to_dcemu(s, plan, {"server_netns": "x-s", "client_netns": "x-c", "server_addr": SERVER_ADDR,
                              "client_addr": CLIENT_ADDR})
    assert check_scenario(text) is None
    import tomllib

    doc = tomllib.loads(text)
    ports = [m["server_port"] for b in doc["bearers"] for m in b["match"]]
    assert len(ports) == 32 == len(set(ports)) and all(b["legs"] == ["leg1"] for b in doc["bearers"])


# ---------------------------------------------------------------------------------------
# Metrics from synthetic dcemu records

def records(rates: dict[str, tuple[float, float]], warmup_s: float, end_s: float, t0_ms: float,
            step_ms: float = 100.0) -> list[dict]:
    """Interval records from t0 - 1 s to end + 2 s: each bearer delivers at its first rate
    (Mbit/s) before ``warmup_s`` and at its second after it (nothing before t0)."""
    out, total = [], {b: 0.0 for b in rates}
    t = t0_ms - 1000.0
    while t <= t0_ms + (end_s + 2) * 1e3:
        t += step_ms
        since = (t - t0_ms) / 1e3
        bearers = []
        for b, (early, late) in rates.items():
            mbps = 0.0 if since <= 0 else early if since <= warmup_s else late
            total[b] += mbps * 1e6 / 8 * step_ms / 1e3
            bearers.append({"name": b, "delivered_bytes": int(round(total[b])), "delivered_mbps": mbps})
        out.append(Stats.model_validate({"type": "interval", "t_ms": t, "bearers": bearers, "legs": []}))
    return out


def test_window_means_leaves_the_warmup_out():
    recs = records({"a": (18.0, 8.0), "b": (2.0, 12.0)}, warmup_s=2.0, end_s=10.0, t0_ms=5000.0)
    m = window_means(recs, 5000.0, 10.0, start_s=2.0)
    assert m["a"] == pytest.approx(8.0, rel=1e-3) and m["b"] == pytest.approx(12.0, rel=1e-3)
    whole = window_means(recs, 5000.0, 10.0)  # from t0 as before: the warm-up counts
    assert whole["a"] == pytest.approx((18 * 2 + 8 * 8) / 10, rel=1e-3)
    with pytest.raises(ValueError):
        window_means(recs, 5000.0, 10.0, start_s=10.0)


def test_flow_metrics_per_transport_ratio_and_jfis():
    means = {"aioquic-reno-1": 6.0, "ngtcp2-cubic-1": 2.0, "tcp-reno-1": 3.0, "tcp-reno-2": 5.0}
    stacks = {"aioquic-reno-1": "aioquic", "ngtcp2-cubic-1": "ngtcp2", "tcp-reno-1": "tcp", "tcp-reno-2": "tcp"}
    m, groups = fx.flow_metrics(means, stacks)
    assert m["quic_mean_mbps"] == pytest.approx(4.0) and m["tcp_mean_mbps"] == pytest.approx(4.0)
    assert m["quic_std_mbps"] == pytest.approx(2.8284271, rel=1e-6)  # sample std of 6, 2
    assert m["tcp_std_mbps"] == pytest.approx(1.4142136, rel=1e-6)
    assert m["quic_tcp_ratio"] == pytest.approx(1.0)
    assert m["jfi"] == pytest.approx(16**2 / (4 * (36 + 4 + 9 + 25)))
    assert m["jfi_quic"] == pytest.approx(8**2 / (2 * 40)) and m["jfi_tcp"] == pytest.approx(8**2 / (2 * 34))
    assert m["total_mbps"] == pytest.approx(16.0)
    assert groups.transport["quic"].flows == 2 and set(groups.stack) == {"aioquic", "ngtcp2", "tcp"}
    assert groups.stack["aioquic"].mean_mbps == 6.0 and groups.stack["aioquic"].jfi == 1.0

    m, groups = fx.flow_metrics({"a": 3.0, "b": 9.0}, {"a": "aioquic", "b": "aioquic"})
    assert m["quic_tcp_ratio"] is None and m["tcp_mean_mbps"] is None and m["jfi_tcp"] is None
    assert m["quic_mean_mbps"] == 6.0 and "tcp" not in groups.transport
    m, _ = fx.flow_metrics({"q": 1.0, "t": 0.0}, {"q": "aioquic", "t": "tcp"})
    assert m["quic_tcp_ratio"] is None, "no ratio over a TCP side that delivered nothing"


class FakeBed:
    """What measure uses of a testbed: clients that run, dcemu's records, its start."""

    def __init__(self, recs: list[dict], start_wall: float):
        self.recs, self.start_wall, self.timeout = recs, start_wall, None

    def run_clients(self, timeout_s: float) -> dict[str, TransferResult]:
        self.timeout = timeout_s
        return {}

    def finish(self) -> list[dict]:
        return self.recs


def measured(monkeypatch, rates: dict[str, tuple[float, float]], mix: str, warmup: float = 2.0,
             duration: float = 10.0, rep: int = 1) -> RepResult:
    o = EXP.options(mix=mix, warmup=warmup, duration=duration)
    s = EXP.scenario(one_leg(), o)
    plan = EXP.plan(s, o)
    # The clients start 3 s after dcemu (t0_ms = 3000).
    monkeypatch.setattr(wx, "time", types.SimpleNamespace(time=lambda: 1003.0))
    bed = FakeBed(records(rates, warmup, duration, t0_ms=3000.0), start_wall=1000.0)
    result = RepResult(experiment="flows", rep=rep, seed=rep, ok=False, stack=plan.stack_label(), cc=plan.cc_label(),
                       host_config="quic-default+tcp")
    out = EXP.measure(bed, s, plan, o, result)  # type: ignore[arg-type]
    assert bed.timeout == duration + 2
    return out


def test_measure_over_the_window_fills_flows_and_metrics(monkeypatch):
    rates = {"aioquic-reno-1": (15.0, 6.0), "tcp-reno-1": (3.0, 7.0), "tcp-reno-2": (2.0, 5.0)}
    r = measured(monkeypatch, rates, "aioquic:reno=1,tcp:reno=2")
    assert r.ok and r.t0_ms == pytest.approx(3000.0)
    assert [f.name for f in r.flows] == list(rates)
    assert [f.stack for f in r.flows] == ["aioquic", "tcp", "tcp"] and {f.cc for f in r.flows} == {"reno"}
    got = {f.name: f.mean_mbps for f in r.flows}
    assert got == pytest.approx({"aioquic-reno-1": 6.0, "tcp-reno-1": 7.0, "tcp-reno-2": 5.0}, rel=1e-3)
    assert r.metrics["quic_tcp_ratio"] == pytest.approx(1.0, rel=1e-3)
    assert r.metrics["jfi"] == pytest.approx(18**2 / (3 * (36 + 49 + 25)), rel=1e-3)
    assert r.metrics["jfi_quic"] == pytest.approx(1.0)
    assert r.details["warmup_s"] == 2.0 and r.details["window_s"] == 10.0
    assert r.details["groups"].transport["tcp"].flows == 2
    assert r.all_metrics()["groups"]["transport"]["tcp"]["flows"] == 2, "stored as JSON"


def test_measure_without_records_fails(monkeypatch):
    o = EXP.options(mix="aioquic=1")
    plan = EXP.plan(EXP.scenario(one_leg(), o), o)
    monkeypatch.setattr(wx, "time", types.SimpleNamespace(time=lambda: 1.0))
    r = EXP.measure(FakeBed([], 0.5), one_leg(), plan, o,  # type: ignore[arg-type]
                    RepResult(experiment="flows", seed=1, ok=False, stack="aioquic", cc="reno", host_config="x"))
    assert not r.ok and r.error and r.metrics["jfi"] is None


def test_summary_table_and_json(monkeypatch):
    mix = "aioquic:reno=1,ngtcp2:cubic=1,tcp:reno=2"
    runs = [measured(monkeypatch, {"aioquic-reno-1": (1, q), "ngtcp2-cubic-1": (1, n), "tcp-reno-1": (1, t1),
                                   "tcp-reno-2": (1, t2)}, mix, rep=i)
            for i, (q, n, t1, t2) in enumerate([(6.0, 2.0, 4.0, 4.0), (8.0, 4.0, 5.0, 3.0)], 1)]
    o = EXP.options(mix=mix, warmup=2.0, duration=10.0)
    s = EXP.summarize(runs, one_leg(), o)
    assert s.metrics["quic_mean_mbps"].mean == pytest.approx(5.0, rel=1e-3)  # reps: 4 and 6
    assert s.metrics["quic_tcp_ratio"].runs == pytest.approx([1.0, 1.5], rel=1e-3)
    e = fx.FlowsSummarized.model_validate(s.extra)
    assert e.transport["quic"].mean_mbps == pytest.approx(5.0, rel=1e-3)
    assert e.stack["ngtcp2"].mean_mbps == pytest.approx(3.0, rel=1e-3)
    assert e.flows["ngtcp2-cubic-1"].model_dump() == {"stack": "ngtcp2", "cc": "cubic", "transport": "quic"}

    t = EXP.table(s)
    first = [row[0] for row in t.rows]
    assert first[:4] == ["aioquic-reno-1", "ngtcp2-cubic-1", "tcp-reno-1", "tcp-reno-2"]
    # QUIC has two stacks: per-stack rows follow the per-transport ones.
    assert first[4:] == ["QUIC (2 flows)", "TCP (2 flows)", "aioquic (1 flow)", "ngtcp2 (1 flow)", "tcp (2 flows)",
                         "QUIC/TCP ratio", "sum of all (4 flows)"]
    ratio = t.rows[first.index("QUIC/TCP ratio")]
    assert ratio[3] == "1.250" and ratio[4] == "0.354"
    assert t.rows[0][1:5] == ["aioquic", "reno", "7.00", "1.41"]
    assert len(t.rows) == len(t.failed) and not any(t.failed)

    out = EXP.json_output(s)
    json.dumps(out)
    assert out["flows"]["tcp-reno-2"]["runs"] == pytest.approx([4.0, 3.0], rel=1e-3)
    assert out["flows"]["tcp-reno-2"]["transport"] == "tcp" and out["flows"]["tcp-reno-2"]["cc"] == "reno"
    assert out["jfi"]["runs"] == [r.metrics["jfi"] for r in runs]
    assert out["quic_tcp_ratio"]["mean"] == pytest.approx(1.25, rel=1e-3)
    assert set(out["metrics"]) == {m.name for m in EXP.metrics}
    assert EXP.headline(s).startswith("JFI: ") and "QUIC/TCP ratio: 1.250" in EXP.headline(s)


def test_table_without_tcp_says_the_ratio_is_absent(monkeypatch):
    r = measured(monkeypatch, {"aioquic-reno-1": (1, 5.0), "aioquic-reno-2": (1, 5.0)}, "aioquic=2")
    s = EXP.summarize([r], one_leg(), EXP.options(mix="aioquic=2", warmup=2.0, duration=10.0))
    t = EXP.table(s)
    assert [row[0] for row in t.rows][2:] == ["QUIC (2 flows)", "QUIC/TCP ratio", "sum of all (2 flows)"]
    assert t.rows[3][3] == "-" and "one side absent" in EXP.headline(s)


# ---------------------------------------------------------------------------------------
# Figures

def test_run_figure_shows_each_flow_and_the_warmup(monkeypatch, tmp_path):
    rates = {f"aioquic-reno-{i}": (15.0, 6.0) for i in range(1, 11)} | {"tcp-reno-1": (3.0, 7.0)}
    r = measured(monkeypatch, rates, "aioquic:reno=10,tcp:reno=1")
    (tmp_path / "dcemu-stats.jsonl").write_text(
        "\n".join(x.model_dump_json() for x in records(rates, 2.0, 10.0, t0_ms=3000.0)) + "\n")
    run = r.stored(one_leg(), EXP.options(mix="aioquic:reno=10,tcp:reno=1"))
    path = EXP.run_figure(tmp_path, run, tmp_path / "flows.png", "t")
    ax = panel(path, title="t", xlabel="time since start (s)", ylabel="flow throughput (Mbit/s)", lines=len(rates),
               legend=list(rates) + ["warm-up (2 s, not measured)"], x=(0.0, 10.0))  # flows in the plan's order (10 after 9)
    assert [s.y for s in ax.series] == [(0.0, max(early, late)) for early, late in rates.values()], "each flow's rates"
    assert {s.n for s in ax.series} == {101}, "a record every 100 ms over the 10 s window"


def rows_of(reps: list[RepResult], value: float) -> list[AnyRun]:
    return runs([{"run_key": f"k{value}-{r.rep}", "value": f"{value:g}", "value_num": value, "sweep": "loss",
                  "param": "loss", "stack": "x", "cc": "reno", "host_config": r.host_config, "ok": int(r.ok),
                  "rep": r.rep, "metrics": r.all_metrics(), "flows": [f.stored() for f in r.flows]} for r in reps], "flows")


def test_sweep_figures_and_tables(monkeypatch, tmp_path):
    mix = "aioquic:reno=1,tcp:reno=2"
    rows = []
    for value, (q, t1, t2) in ((0.0, (6.0, 6.0, 6.0)), (0.1, (3.0, 6.0, 6.0))):
        rows += rows_of([measured(monkeypatch, {"aioquic-reno-1": (1, q), "tcp-reno-1": (1, t1),
                                                "tcp-reno-2": (1, t2)}, mix, rep=i) for i in (1, 2)], value)
    made = EXP.sweep_figures(rows, tmp_path, "flows-loss", "flows: loss", "loss (%)")
    assert [p.name for p, _ in made] == ["flows-loss.png", "flows-loss-ratio.png", "flows-loss-per-stack.png"]
    bars, ratio, per_stack = (p for p, _ in made)
    figure(bars, suptitle="flows: loss")
    ax = panel(bars, title="quic-default+tcp", xlabel="loss (%)", legend=["aioquic-reno-1", "tcp-reno-1", "tcp-reno-2"],
               bars=3, xticks=["0", "0.1"], texts=["JFI 1.00\nQUIC/TCP 1.00", "JFI 0.93\nQUIC/TCP 0.50"])
    assert [s.y for s in ax.series] == each((3.0, 6.0), (6.0, 6.0), (6.0, 6.0), rel=1e-3), "each flow's mean, per value"
    assert [s.n for s in ax.series] == [2, 2, 2]
    ax = panel(ratio, title="flows: loss", ylabel="QUIC/TCP ratio (mean QUIC flow / mean TCP flow)",
               legend=["quic-default+tcp"], lines=1)
    assert ax.series[0].y == pytest.approx((0.5, 1.0), rel=1e-3) and ax.series[0].x == (0.0, 0.1)
    ax = panel(per_stack, ylabel="mean flow throughput (Mbit/s)", lines=2,
               legend=["aioquic reno quic-default+tcp", "tcp reno quic-default+tcp"])
    assert [s.y for s in ax.series] == each((3.0, 6.0), (6.0, 6.0), rel=1e-3)

    (c1, per_flow), (c2, per_transport) = EXP.sweep_tables(rows)
    assert per_flow.columns[2:4] == ["aioquic-reno-1 mean (Mbit/s)", "aioquic-reno-1 std"]
    assert per_flow.rows[1][2] == "3.00" and per_flow.rows[1][-3] == "0.926"
    assert per_transport.rows[1][2:8] == ["3.00", "6.00", "0.500", "1.000", "1.000", "0.926"]
    assert per_transport.rows[0][-2:] == ["2", "0"] and not any(per_transport.failed)


# ---------------------------------------------------------------------------------------
# A real run

@pytest.mark.root
def test_quic_and_tcp_share_a_20_mbit_leg(tmp_path):
    r = CliRunner().invoke(app, ["run", "flows", "--mix", "aioquic:reno=1,tcp:cubic=1", "--duration", "6",
                                 "--warmup", "1", "--size", "1GB", "--bw", "20", "--split", "100", "--delay", "10",
                                 "--loss", "0", "--json", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["failed"] == 0
    means = {f: v["mean_mbps"] for f, v in out["flows"].items()}
    assert set(means) == {"aioquic-reno-1", "tcp-cubic-1"}
    assert all(m is not None for m in means.values()), means
    check_bound("flows.quic_tcp_one_leg_total_mbps", sum(means.values()))  # the two fill the leg
    check_bound("flows.quic_tcp_one_leg_jfi", out["jfi"]["mean"])
    assert out["quic_tcp_ratio"]["mean"] == pytest.approx(means["aioquic-reno-1"] / means["tcp-cubic-1"])
    rep = json.loads((tmp_path / "run" / "rep-01" / "result.json").read_text())
    assert [f["bearer"] for f in rep["flows"]] == ["aioquic-reno-1", "tcp-cubic-1"]
    ax = panel(tmp_path / "run" / "flows.png", title="flows: aioquic:reno=1,tcp:cubic=1, leg 1 20 Mbit/s, 10 ms",
               legend=["aioquic-reno-1", "tcp-cubic-1", "warm-up (1 s, not measured)"], lines=2)
    assert all(s.x[0] < 0.5 and 5 < s.x[1] <= 6 and s.y[1] > 0.5 for s in ax.series), ax.series  # over the window
    assert sum(s.mean or 0.0 for s in ax.series) <= 20 * 1.02, "together within the leg's 20 Mbit/s on average"


def test_campaign_report_has_the_flows_figures_and_tables(monkeypatch, tmp_path):
    from dclab.campaign.report import build_report
    from dclab.campaign.store import RunRecord, Store

    store = Store(tmp_path / "store.sqlite")
    mix = "aioquic:reno=1,tcp:reno=1"
    for value in (0.0, 0.1):
        for rep in (1, 2):
            rates = {"aioquic-reno-1": (15.0, 8.0 - 40 * value), "tcp-reno-1": (3.0, 10.0)}
            r = measured(monkeypatch, rates, mix, rep=rep)
            run_dir = tmp_path / "runs" / f"k{value}-{rep}"
            run_dir.mkdir(parents=True)
            (run_dir / "dcemu-stats.jsonl").write_text(
                "\n".join(x.model_dump_json() for x in records(rates, 2.0, 10.0, t0_ms=3000.0)) + "\n")
            store.add(RunRecord(run_key=f"k{value}-{rep}", experiment="flows", stack=r.stack, cc=r.cc,
                                host_config=r.host_config, rep=rep, ok=r.ok, scenario=one_leg().model_dump(mode="json"),
                                metrics=r.all_metrics(), environment={}, run_dir=str(run_dir), machine="m",
                                started_at="t", finished_at="t", sweep="loss", param="loss", value=f"{value:g}",
                                value_num=value, options={"mix": mix}, flows=[f.stored() for f in r.flows]))
    index = build_report(store, tmp_path / "report", "flows campaign")
    html = index.read_text()
    assert "flows: loss" in html and "QUIC/TCP ratio" in html and "aioquic-reno-1 mean (Mbit/s)" in html
    assert "mean TCP flow (Mbit/s)" in html
    report = tmp_path / "report"
    ax = panel(report / "flows-loss.png", legend=["aioquic-reno-1", "tcp-reno-1"], bars=2, xticks=["0", "0.1"],
               xlabel="random loss per leg (%)")
    assert [s.y for s in ax.series] == each((4.0, 8.0), (10.0, 10.0), rel=1e-3) and len(ax.texts) == 2
    assert panel(report / "flows-loss-ratio.png", lines=1).y == pytest.approx((0.4, 0.8), rel=1e-3)
    panel(report / "flows-loss-per-stack.png", lines=2, legend=["aioquic reno quic-default+tcp", "tcp reno quic-default+tcp"])
    runs = sorted(p for p in report.iterdir() if p.name.startswith("flows-flows-loss"))
    assert [p.name for p in runs] == ["flows-flows-loss-0-quic-default-tcp-rep1.png",
                                      "flows-flows-loss-0.1-quic-default-tcp-rep1.png"], "the first and last value's run"
    for p, key in zip(runs, ("k0.0-1", "k0.1-1")):
        ax = panel(p, legend=["aioquic-reno-1", "tcp-reno-1", "warm-up (2 s, not measured)"], lines=2)
        assert ax.title.endswith(f"(run {key})")


def test_several_mixes_become_one_group_of_bars_each():
    raw = [{"run_key": f"k{i}", "value": "0", "value_num": 0.0, "stack": st, "cc": "reno", "host_config": hc,
            "ok": True, "options": {"mix": mix}, "metrics": {}, "flows": []}
           for i, (mix, st, hc) in enumerate([("aioquic:reno=2", "aioquic", "quic-default"),
                                              ("aioquic:reno=1,tcp:reno=2", "aioquic+tcp", "mixed")])]
    rows = runs(raw, "flows")
    out, xlabel = fx.by_mix(rows, "-")
    assert [r.value for r in out] == ["aioquic:reno=2", "aioquic:reno=1,tcp:reno=2"] and xlabel == "mix"
    assert len(figures_series(out)) == 1, "one panel"
    swept = runs([{**r, "value": v, "value_num": float(v)} for r, v in zip(raw, ("250", "1500"), strict=True)], "flows")
    out, xlabel = fx.by_mix(swept, "distance (m)")
    assert out[1].value == "1500 aioquic:reno=1,tcp:reno=2" and xlabel == "distance (m), mix"
    assert fx.by_mix(rows[:1], "-") == (rows[:1], "-"), "one mix: as it was"


def figures_series(rows):
    from dclab.analysis.figures import series_of

    return set(series_of(rows).values())


def test_per_stack_rows_carry_each_flows_throughput():
    rows = runs([{"run_key": "k", "value": "250", "value_num": 250.0, "stack": "aioquic+tcp", "cc": "reno",
                  "host_config": "quic-default+tcp", "ok": True, "metrics": {"jfi": 0.9},
                  "flows": [{"name": "aioquic-reno-1", "stack": "aioquic", "cc": "reno", "mean_mbps": 5.0},
                            {"name": "tcp-reno-1", "stack": "tcp", "cc": "reno", "mean_mbps": None}]}], "flows")
    out = fx.per_stack_rows(rows)
    assert [(r.run_key, r.stack, r.metrics, r.ok) for r in out] == [
        ("k/aioquic-reno-1", "aioquic", {"flow_mbps": 5.0}, True), ("k/tcp-reno-1", "tcp", {"flow_mbps": None}, False)]
