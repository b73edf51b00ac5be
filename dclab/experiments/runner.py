"""Running an experiment: one repetition in a fresh testbed, and repetitions into a run
directory (each in its own `rep-NN/`, the summary rewritten after each, so an
interrupted run keeps what finished). Every repetition has its own seed: the scenario's
seed plus the repetition number minus one, recorded in its result."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from ..endpoints import get_stack
from ..flows import FlowPlan
from ..paths import CLIENT_ADDR, SERVER_ADDR
from ..scenario import Scenario, ScenarioError, build, to_toml
from ..testbed import Testbed
from ..testbed.dcemu_config import to_dcemu
from ..testbed.emulator import check_scenario
from ..testbed.environment import environment
from ..testbed.hostconfig import host_config_for
from ..testbed.rundir import write_atomic, write_json
from .base import Experiment, Options, RepResult, Summary


def preflight(exp: Experiment, scenario: Scenario, options: Options) -> FlowPlan:
    """Everything that can be checked before the host lock and the namespaces: the plan
    (returned), and the dcemu scenario it renders to, read by dcemu itself (trace files
    included). Raises PlanError, StackError or ScenarioError."""
    s = exp.scenario(scenario, options)
    plan = exp.plan(s, options)
    topology = {"server_netns": "dclab-check-s", "client_netns": "dclab-check-c", "server_addr": SERVER_ADDR,
                "client_addr": CLIENT_ADDR}
    err = check_scenario(to_dcemu(s, plan, topology))
    if err:
        raise ScenarioError(f"the emulator refuses this scenario: {err}")
    return plan


def rep_seed(base: int, rep: int) -> int:
    return base + rep - 1


def run_rep(exp: Experiment, scenario: Scenario, options: Options, rep_dir: Path, rep: int = 1,
            on_wait: Callable[[], None] | None = None) -> RepResult:
    """One repetition in a fresh testbed; returns (and writes as result.json) its result,
    and draws the experiment's per-run figure."""
    s = build(exp.scenario(scenario, options), seed=rep_seed(scenario.seed, rep))
    plan = exp.plan(s, options)
    host = host_config_for(exp.host_transports(plan), getattr(options, "udp_buffer", "default"))
    result = RepResult(experiment=exp.name, rep=rep, seed=s.seed, ok=False, stack=plan.stack_label(),
                       cc=plan.cc_label(), host_config=host.name)
    with Testbed(s, plan, host, rep_dir, on_wait=on_wait) as tb:
        tb.start_servers(qlog=bool(getattr(options, "qlog", False)))
        result.environment = environment([get_stack(n) for n in plan.stacks()], tb.settings)
        if tb.recovered:
            result.environment["recovered_before_run"] = tb.recovered
        write_json(rep_dir / "environment.json", result.environment)  # on disk before the clients start
        result = exp.measure(tb, s, plan, options, result)
    if (rep_dir / "dcemu-stats.jsonl").exists() and result.t0_ms is not None:
        exp.run_figure(rep_dir, result.record(), s.model_dump(mode="json"), rep_dir / exp.run_figure_name,
                       exp.run_title(s, options, result))
    write_json(rep_dir / "result.json", result.model_dump(mode="json"))
    return result


def failed_rep(exp: Experiment, scenario: Scenario, options: Options, rep: int, error: str) -> RepResult:
    """The record of a repetition that could not be measured (a part of the testbed died,
    or it could not be set up)."""
    s = build(exp.scenario(scenario, options), seed=rep_seed(scenario.seed, rep))
    plan = exp.plan(s, options)
    host = host_config_for(exp.host_transports(plan), getattr(options, "udp_buffer", "default"))
    return RepResult(experiment=exp.name, rep=rep, seed=s.seed, ok=False, error=error, stack=plan.stack_label(),
                     cc=plan.cc_label(), host_config=host.name)


def run_reps(exp: Experiment, scenario: Scenario, options: Options, reps: int, out: Path,
             on_rep: Callable[[int, RepResult], None] | None = None,
             on_wait: Callable[[], None] | None = None, on_error: str = "stop") -> Summary:
    """Runs ``reps`` repetitions into ``out``: scenario.toml, options.json,
    environment.json and the first repetition's figure at the top, results.json after each.
    A repetition that raises (a testbed part died, setup failed) ends the run with
    ``on_error="stop"``; with ``"continue"`` it is recorded as failed and the next one runs."""
    write_atomic(out / "scenario.toml", to_toml(scenario))
    write_json(out / "options.json", {"experiment": exp.name, "reps": reps, **options.model_dump(mode="json")})
    runs: list[RepResult] = []
    summary = exp.summarize(runs, scenario, options)
    for rep in range(1, reps + 1):
        rep_dir = out / f"rep-{rep:02d}"
        try:
            rec = run_rep(exp, scenario, options, rep_dir, rep, on_wait)
        except Exception as e:  # noqa: BLE001 - the policy decides; KeyboardInterrupt passes
            if on_error != "continue":
                raise
            rec = failed_rep(exp, scenario, options, rep, f"{type(e).__name__}: {e}")
            rep_dir.mkdir(parents=True, exist_ok=True)
            write_json(rep_dir / "result.json", rec.model_dump(mode="json"))
        if rep == 1 and rec.environment:
            write_json(out / "environment.json", rec.environment)
            if (rep_dir / exp.run_figure_name).exists():
                shutil.copy(rep_dir / exp.run_figure_name, out / exp.run_figure_name)
        runs.append(rec)
        summary = exp.summarize(runs, scenario, options)
        write_json(out / "results.json", summary.model_dump(mode="json"))
        if on_rep:
            on_rep(rep, rec)
    return summary


__all__ = ["run_rep", "run_reps", "rep_seed"]
