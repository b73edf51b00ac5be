"""A store's rows typed for the figures and tables (dclab/campaign/typed_runs.py): what a
run stored today, before an option existed, elsewhere, or by a dclab whose options have
since changed reads as (no root)."""

from __future__ import annotations

from pathlib import Path

import pytest
from html_tables import Tables

from dclab.analysis.stored_run import UnknownOptions
from dclab.campaign.report import build_report
from dclab.campaign.store import RunRecord, Store
from dclab.campaign.typed_runs import typed_runs
from dclab.experiments import get_experiment
from dclab.scenario import Scenario, ScenarioError, build

THROUGHPUT = get_experiment("throughput")
SPLIT = get_experiment("split-layer")


def row(key: str = "k", experiment: str = "throughput", **kw: object) -> dict:
    base: dict = {"run_key": key, "experiment": experiment, "sweep": "batch", "param": "batch", "value": "2",
                  "value_num": 2.0, "stack": "tcp", "cc": "cubic", "host_config": "tcp", "rep": 1, "ok": 1,
                  "scenario": Scenario().model_dump(mode="json"), "options": {}, "metrics": {"goodput_mbps": 10.0},
                  "flows": [{"name": "dc", "stack": "tcp", "cc": "cubic", "bearer": "dc", "port": 4433,
                             "mean_mbps": None, "goodput_mbps": 10.0, "bytes": 5, "completion_s": 1.5, "ok": 1}]}
    base.update(kw)
    return base


def test_a_row_as_stored_today_reads_back_as_the_run_it_was():
    options = THROUGHPUT.options(stack="tcp", cc="cubic", size="5MB", tcp_mss=1000)
    scenario = build(delay=[30.0, 10.0])
    typed = typed_runs([row(options=options.model_dump(mode="json"), scenario=scenario.model_dump(mode="json"))])
    [run] = typed.runs
    assert not typed.unreadable
    assert run.options == options and run.options.tcp_mss == 1000 and run.scenario.delay == [30.0, 10.0]
    assert run.metric("goodput_mbps") == 10.0 and run.metric("absent") is None
    [flow] = run.flows
    assert (flow.name, flow.ok, flow.mbps, flow.completion_s) == ("dc", True, 10.0, 1.5)
    assert run.flow_mbps("dc") == 10.0 and run.flow_mbps("sc1") is None
    assert (run.backend, run.stand_in, run.stack_shown) == ("emu", {}, "tcp")


def test_an_option_added_since_is_read_at_its_default():
    [run] = typed_runs([row(options={"size": 5_000_000})]).runs
    assert run.options.tcp_mss == THROUGHPUT.options().tcp_mss and run.options.streams == 1


def test_a_split_layer_run_stored_whole_reads_although_its_stack_field_is_not_the_aggregations():
    # The store keeps every option, so an mptcp run's options hold the default --stack tcp,
    # which the options model refuses when given: read back, only what differs from the
    # defaults counts as given. Its scheduler is not checked against this machine's kernel.
    options = SPLIT.options(aggregation="mptcp").model_dump(mode="json")
    assert options["stack"] == "tcp"
    with pytest.raises(ValueError, match="--stack is for pdcp"):
        SPLIT.options_model.model_validate(options | {"stack": "quinn"})
    other_kernel = options | {"mptcp_scheduler": "a-scheduler-this-kernel-lacks"}
    typed = typed_runs([row(experiment="split-layer", options=options), row("o", "split-layer", options=other_kernel)])
    assert not typed.unreadable
    assert [r.options.mptcp_scheduler for r in typed.runs] == ["default", "a-scheduler-this-kernel-lacks"]
    assert typed.runs[0].options.flow_stack() == "mptcp"


def test_a_trace_that_is_not_on_this_machine_does_not_keep_a_run_out(tmp_path: Path):
    trace = tmp_path / "elsewhere.trace"
    with pytest.raises(ScenarioError):
        build(trace=trace)  # a run is refused before it starts ...
    stored = Scenario().model_dump(mode="json") | {"trace": str(trace)}
    [run] = typed_runs([row(scenario=stored)]).runs  # ... but a stored one reads
    assert run.scenario.trace == trace


def test_a_run_that_no_longer_validates_is_left_out_and_named():
    typed = typed_runs([row("good"), row("renamed", options={"no_such_option": 1}),
                        row("bad", scenario={"bw": [-1.0, 20.0]}), row("gone", experiment="not-installed-here",
                                                                      options={"what": 1, "backend": "sim"})])
    assert [r.run_key for r in typed.runs] == ["good", "gone"]
    assert [k for k, _ in typed.unreadable] == ["renamed", "bad"]
    assert "its options: no_such_option" in typed.unreadable[0][1]
    assert typed.unreadable[1][1].startswith("its scenario: bw")
    gone = typed.runs[1]
    assert isinstance(gone.options, UnknownOptions) and gone.simulated, "kept as recorded"


def test_the_report_names_the_runs_it_left_out(tmp_path: Path):
    store = Store(tmp_path / "store.sqlite")
    for r in (row("good"), row("renamed0000000", options={"no_such_option": 1})):
        store.add(RunRecord(**{k: v for k, v in r.items() if k != "ok"}, ok=True, environment={}, run_dir="",
                            machine="m", started_at="t", finished_at="t"))
    p = Tables()
    p.feed(build_report(store, tmp_path / "report", "t").read_text())
    assert p.tables["unreadable"][1:] == [["renamed00000", "its options: no_such_option: Extra inputs are not permitted"]]
    assert [line[0] for line in p.tables["data throughput"][1:]] == ["2"], "the readable run is drawn"


def test_a_flow_of_a_result_written_before_its_totals_were_kept_gets_them_from_its_transfer():
    from dclab.experiments.base import FlowResult

    transfer = {"ok": True, "bytes": 5_000_000, "request_s": 0.25, "first_byte_s": 0.3, "last_byte_s": 2.25}
    old = FlowResult.model_validate({"name": "dc", "stack": "tcp", "cc": "cubic", "bearer": "dc", "port": 4433,
                                     "transfer": transfer, "mean_mbps": 19.5})
    d = old.stored()
    assert (d["ok"], d["bytes"], d["completion_s"], d["mean_mbps"]) == (True, 5_000_000, 2.0, 19.5)
    failed = old.model_copy(update={"transfer": {**transfer, "ok": False}}).stored()
    assert (failed["ok"], failed["completion_s"]) == (False, None), "no completion time for a failed transfer"
    today = old.model_copy(update={"ok": True, "bytes": 1, "completion_s": 9.0}).stored()
    assert (today["bytes"], today["completion_s"]) == (1, 9.0), "kept totals are taken as kept"
