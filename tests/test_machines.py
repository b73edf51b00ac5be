"""Where runs ran and machines whose results differ (analysis/machines.py), the new
environment keys, and the report's machine section; synthetic rows (no root)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest
from html_tables import Tables
from typed_rows import runs as typed

from dclab.analysis.machines import (
    compare_machines,
    configuration,
    configuration_labels,
    headline_metric,
    machine_outliers,
    machine_summary,
    runs_per_machine,
)
from dclab.analysis.stored_run import AnyRun
from dclab.campaign.report import build_report
from dclab.campaign.store import RunRecord, Store
from dclab.testbed.environment import cpu_model, environment, memory_gb

ENV = {"kernel": "6.1.0-test", "cpu_model": "Test CPU 3000", "memory_gb": 15.6, "hostname": "h"}


def row(machine: str, goodput: float | None, rep: int = 1, value: str = "100", ok: bool = True, **kw) -> AnyRun:
    """A run as the report reads it from a store (``campaign/typed_runs.py``)."""
    seed = 7 + rep
    base = dict(
        run_key=f"{machine}-{value}-{rep}-{goodput}", campaign="c", experiment="throughput", sweep="batch", param="batch",
        value=value, value_num=float(value), stack="aioquic", cc="reno", host_config="quic-default", rep=rep, seed=seed,
        ok=int(ok), error=None if ok else "timeout", scenario={"bw": [20.0, 20.0], "seed": seed},
        options={"size": 5_000_000}, metrics={"t0_ms": 2000.0, "goodput_mbps": goodput if ok else None},
        environment=dict(ENV, hostname=machine), run_dir="", machine=machine, started_at="2024-05-01T10:00:00",
        finished_at="2024-05-01T10:00:30", flows=[],
    )
    base.update(kw)
    [run] = typed([base])
    return run


def runs(machine: str, values: list[float], **kw) -> list[AnyRun]:
    return [row(machine, v, rep=i + 1, **kw) for i, v in enumerate(values)]


def test_slower_machine_is_flagged_with_its_numbers():
    rows = runs("fast", [30.0, 30.3, 29.7]) + runs("slow", [24.0, 24.3, 23.7])
    flagged = {c.machine: c for c in machine_outliers(rows)}
    assert set(flagged) == {"fast", "slow"}  # two machines: nothing tells which one is off
    slow = flagged["slow"]
    assert slow.configuration == "throughput batch=100, aioquic reno, quic-default"
    assert slow.metric == "goodput_mbps" and slow.n == 3 and slow.others == ("fast",) and slow.others_n == 3
    assert slow.mean == pytest.approx(24.0) and slow.others_mean == pytest.approx(30.0)
    assert slow.others_std == pytest.approx(0.3) and slow.pooled_std == pytest.approx(0.3)
    assert slow.difference_pct == pytest.approx(-20.0)
    assert slow.threshold == pytest.approx(1.5)  # 5 % of 30 is above 3 * 0.3
    assert flagged["fast"].difference_pct == pytest.approx(25.0)


def test_with_three_machines_only_the_odd_one_is_flagged():
    rows = runs("a", [30.0, 30.3, 29.7]) + runs("b", [30.1, 29.8, 30.2]) + runs("slow", [24.0, 24.3, 23.7])
    [c] = machine_outliers(rows)
    assert c.machine == "slow" and c.others == ("a", "b") and c.others_n == 6
    assert c.difference_pct == pytest.approx(-20.0, abs=0.2)
    # "a" against b+slow: 10 % off, but the others disagree among themselves by more (3 x 3.3)
    a = next(x for x in compare_machines(rows) if x.machine == "a")
    assert not a.flagged and a.difference_pct == pytest.approx(11.1, abs=0.1) and a.threshold > 9
    assert {s.machine: (s.flagged, s.comparable) for s in machine_summary(compare_machines(rows))} == {
        "a": (0, 1), "b": (0, 1), "slow": (1, 1)}


def test_noise_within_the_spread_is_not_flagged():
    noisy = runs("m1", [30.0, 36.0, 24.0]) + runs("m2", [27.0, 33.0, 21.0])  # 11 % apart, std 6
    tight = runs("m1", [30.0, 30.01, 29.99], value="500") + runs("m2", [29.4, 29.41, 29.39], value="500")  # 2 % apart
    compared = compare_machines(noisy + tight)
    assert len(compared) == 4 and not any(c.flagged for c in compared)
    assert not machine_outliers(noisy + tight)
    assert {(s.machine, s.flagged, s.comparable) for s in machine_summary(compared)} == {("m1", 0, 2), ("m2", 0, 2)}


def test_a_configuration_on_one_machine_is_not_comparable():
    rows = runs("m1", [30.0, 30.3, 29.7]) + runs("m2", [24.0, 24.3, 23.7], value="500")  # different values
    rows += runs("m1", [30.0, 30.1], value="2") + runs("m2", [10.0], value="2")  # one run on m2: too few
    rows += runs("m1", [30.0, 30.1], value="7", cc="cubic") + runs("m2", [10.0, 10.1], value="7", cc="bbr")
    assert compare_machines(rows) == [] and machine_outliers(rows) == [] and machine_summary([]) == []


def test_failed_runs_count_but_do_not_compare():
    rows = runs("fast", [30.0, 30.3]) + runs("slow", [24.0, 24.3]) + [row("slow", None, rep=3, ok=False)]
    per = {m.machine: m for m in runs_per_machine(rows)}
    assert (per["slow"].runs, per["slow"].failed, per["fast"].failed) == (3, 1, 0)
    slow = next(c for c in compare_machines(rows) if c.machine == "slow")
    assert slow.n == 2 and slow.flagged


def test_rows_from_before_the_new_keys_show_a_question_mark():
    old = runs("old", [30.0, 30.3, 29.7], environment={"kernel": "5.10.0"})
    older = runs("", [24.0, 24.3], environment={}) + [row("older", 24.1, environment={}, metrics={})]
    per = {m.machine: m for m in runs_per_machine(old + older)}
    assert per["old"].kernels == ("5.10.0",) and per["old"].cpu_models == ("?",)
    assert per["?"].kernels == ("?",) and per["?"].cpu_models == ("?",) and per["?"].runs == 2
    assert per["older"].runs == 1
    [c] = [c for c in machine_outliers(old + older) if c.machine == "?"]
    assert c.others == ("old",) and c.difference_pct == pytest.approx(-19.5, abs=0.1)


def test_configuration_ignores_repetition_seed_and_machine_only():
    a, b = row("m1", 30.0, rep=1), row("m2", 31.0, rep=2)
    assert a.scenario.seed != b.scenario.seed and configuration(a) == configuration(b)
    for change in ({"options": {"size": 1}}, {"scenario": {"bw": [10.0, 20.0]}}, {"host_config": "quic-large"},
                   {"stack": "ngtcp2"}, {"value": "500"}, {"sweep": "loss"}, {"experiment": "fairness"}):
        assert configuration(row("m1", 30.0, **change)) != configuration(a), change
    labels = configuration_labels([a, row("m1", 30.0, options={"size": 1})])
    assert sorted(labels.values()) == ["throughput batch=100, aioquic reno, quic-default size=1",
                                       "throughput batch=100, aioquic reno, quic-default size=5000000"]


def test_metric_default_and_choice():
    rows = runs("m1", [30.0, 30.3, 29.7]) + runs("m2", [24.0, 24.3, 23.7])
    assert headline_metric(rows) == "goodput_mbps"
    fair = [row(m, None, rep=r, experiment="fairness", metrics={"t0_ms": 1.0, "jfi": j, "elapsed_s": 9.0})
            for m, js in (("m1", [0.9, 0.91]), ("m2", [0.6, 0.61])) for r, j in enumerate(js, 1)]
    assert headline_metric(fair) == "jfi"
    assert headline_metric([row("m1", None, metrics={"t0_ms": 1.0, "download_s": 2.0, "elapsed_s": 3.0})]) == "download_s"
    assert {(c.experiment, c.metric) for c in machine_outliers(rows + fair)} == {("throughput", "goodput_mbps"),
                                                                                ("fairness", "jfi")}
    # a metric per experiment; one the runs did not record leaves nothing to compare
    assert machine_outliers(rows + fair, {"fairness": "elapsed_s"}) == machine_outliers(rows)
    assert machine_outliers(rows, "no_such_metric") == []


def test_environment_records_where_the_run_ran():
    env = environment([], {"net.core.rmem_default": "212992"})
    assert env["hostname"] == platform.node() and env["hostname"]
    assert env["kernel"] == platform.release() and env["host_settings"] == {"net.core.rmem_default": "212992"}
    assert {"machine", "cpus", "python", "dclab", "git_commit", "dcemu", "stacks"} <= set(env)
    assert isinstance(env["cpu_model"], str)
    if Path("/proc/cpuinfo").is_file() and "model name" in Path("/proc/cpuinfo").read_text():
        assert env["cpu_model"] and env["cpu_model"] in Path("/proc/cpuinfo").read_text()
    mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal:")))
    assert env["memory_gb"] == round(mem_kb / 2**20, 1) and 0 < env["memory_gb"] < 1e5
    assert cpu_model.cache_info().currsize == 1 and memory_gb.cache_info().currsize == 1  # read once per process


def store_of(path: Path, rows: list[AnyRun]) -> Store:
    store = Store(path)
    for r in rows:
        store.add(RunRecord(run_key=r.run_key, campaign=r.campaign, experiment=r.experiment, sweep=r.sweep, param=r.param,
                            value=r.value, value_num=r.value_num, stack=r.stack, cc=r.cc, host_config=r.host_config,
                            rep=r.rep, seed=r.seed, ok=r.ok, error=r.error, scenario=r.scenario_json(),
                            options=r.options_json(), metrics=r.metrics, environment=r.environment, run_dir=r.run_dir,
                            machine=r.machine, started_at=r.started_at, finished_at=r.finished_at))
    return store


def test_report_lists_the_machine_that_differs(tmp_path):
    rows = (runs("fast-1", [30.0, 30.3, 29.7]) + runs("fast-2", [30.1, 29.8, 30.2]) + runs("slow-1", [24.0, 24.3, 23.7])
            + runs("fast-1", [50.0, 50.5], value="500") + runs("slow-1", [49.5, 50.2], value="500")
            + runs("fast-2", [40.0, 40.1], value="2", environment={"kernel": "5.10.0"}))
    index = build_report(store_of(tmp_path / "store.sqlite", rows), tmp_path / "report", "machines")
    text = index.read_text()
    p = Tables()
    p.feed(text)
    machines = {r[0]: r[1:] for r in p.tables["machines"][1:]}
    assert p.tables["machines"][0][3:] == ["kernel", "CPU", "configurations differing"]
    assert machines == {"fast-1": ["5", "0", "6.1.0-test", "Test CPU 3000", "0 of 2"],
                        "fast-2": ["5", "0", "5.10.0, 6.1.0-test", "?, Test CPU 3000", "0 of 1"],
                        "slow-1": ["5", "0", "6.1.0-test", "Test CPU 3000", "1 of 2"]}
    [head, flagged] = p.tables["machine-outliers"]
    assert head[:3] == ["machine", "configuration", "metric"]
    assert flagged == ["slow-1", "throughput batch=100, aioquic reno, quic-default", "goodput_mbps", "3", "24.000",
                       "fast-1, fast-2", "6", "30.017", "0.232", "-20.0", "1.501"]
    assert "Machines whose results differ" in text


def test_report_says_when_no_machine_differs(tmp_path):
    one = build_report(store_of(tmp_path / "one.sqlite", runs("m1", [30.0, 30.3])), tmp_path / "r1", "one")
    assert "No configuration ran on two machines" in one.read_text() and "machine-outliers" not in one.read_text()
    rows = runs("m1", [30.0, 36.0, 24.0]) + runs("m2", [27.0, 33.0, 21.0])
    two = build_report(store_of(tmp_path / "two.sqlite", rows), tmp_path / "r2", "two")
    assert "No machine differs: 2 comparisons" in two.read_text() and "machine-outliers" not in two.read_text()
