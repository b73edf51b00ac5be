"""Running an experiment: one repetition in a fresh testbed, and repetitions into a run
directory (each in its own `rep-NN/`, the summary rewritten after each, so an
interrupted run keeps what finished). Every repetition has its own seed: the scenario's
seed plus the repetition number minus one, recorded in its result.

An experiment with ``one_testbed`` (many short measurements, where a testbed's few
seconds of setup would dominate) runs its repetitions on one testbed kept by a
:class:`Session`: consecutive repetitions with the same scenario, plan and host
configuration share it, every one of them recording the testbed's seed (the scenario's
own); a repetition that raises closes it and the next one starts a fresh testbed."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dcemu.config import to_dcemu
from ..dcemu.process import check_scenario
from ..dcemu.records import stats_file
from ..dcemu.sim import workload_toml
from ..dcemu.sim_models import SimError
from ..dcemu.sim_models import used as used_stand_ins
from ..endpoints import get_stack
from ..errors import OptionError
from ..flowplan import FlowPlan
from ..paths import CLIENT_ADDR, SERVER_ADDR
from ..scenario import Scenario, ScenarioError, build, to_toml
from ..testbed import NotReady, Testbed
from ..testbed.environment import environment
from ..testbed.hostconfig import HostConfig, host_config_for
from ..testbed.inspection import Inspection
from ..testbed.rundir import write_atomic, write_json
from ..testbed.simbed import SimBed, rmem_for
from ..testbed.testbed import PartDied
from .base import Experiment, OptionsT, PacketSizeOptions, RepResult, RunChoices, Summary, plan_with_packet_sizes


@dataclass(frozen=True)
class RepSetup:
    """What one repetition runs, computed once (:func:`rep_setup`) and used by every step
    that needs it: measuring, recording a failure, checking before the start."""

    scenario: Scenario  # as run: the experiment's changes, the repetition's seed
    plan: FlowPlan  # with the options' packet sizes
    host: HostConfig
    choices: RunChoices

    @property
    def seed(self) -> int:
        return self.scenario.seed

    def result(self, exp: Experiment[Any], rep: int, error: str | None = None) -> RepResult:
        """The repetition's record before anything is measured (``ok`` False)."""
        return RepResult(experiment=exp.name, rep=rep, seed=self.seed, ok=False, error=error,
                         stack=self.plan.stack_label(), cc=self.plan.cc_label(), host_config=self.host.name)


def rep_seed(base: int, rep: int) -> int:
    return base + rep - 1


def rep_setup(exp: Experiment[OptionsT], scenario: Scenario, options: OptionsT, rep: int = 1,
              shared: bool = False) -> RepSetup:
    """Repetition ``rep``'s setup. Its seed is the scenario's plus ``rep`` - 1, except on a
    ``shared`` testbed (a session's, for a ``one_testbed`` experiment), whose repetitions
    all run on the testbed's seed, the scenario's own (a fresh testbed per repetition, as
    a cluster's worker starts, gets the repetition's seed, so that no two repetitions
    replay the same losses). Raises PlanError, StackError or ScenarioError."""
    s = build(exp.scenario(scenario, options), seed=scenario.seed if shared else rep_seed(scenario.seed, rep))
    plan = plan_with_packet_sizes(exp.plan(s, options), s, options)
    choices = RunChoices.of(options)
    return RepSetup(s, plan, host_config_for(exp.host_transports(plan), choices.udp_buffer, choices.ecn), choices)


# Seconds from the emulator's start to the clients' (namespaces, servers, handshakes) at
# most, for the check below: an event this much past the longest run still never happens.
START_SLACK_S = 60.0


def _events_within(s: Scenario, longest_s: float | None) -> None:
    """Refuses an outage or secondary node event that comes after the run can have ended."""
    if longest_s is None:
        return
    last = longest_s + START_SLACK_S
    events = [("--outage", s.outage.at_s)] if s.outage is not None else []
    events += [("--sn-events", e.at_s) for e in s.sn_events or []]
    for option, at in events:
        if at > last:
            raise ScenarioError(f"{option}: at {at:g} s, after this run has ended (its clients run {longest_s:.0f} s at "
                                f"most, starting within {START_SLACK_S:.0f} s): it would never happen")


def preflight(exp: Experiment[OptionsT], scenario: Scenario, options: OptionsT) -> FlowPlan:
    """Everything that can be checked before the host lock and the namespaces: the plan
    (returned), and the dcemu scenario it renders to, read by dcemu itself (trace files
    included). Raises PlanError, StackError or ScenarioError."""
    setup = rep_setup(exp, scenario, options, shared=exp.one_testbed)
    s, plan = setup.scenario, setup.plan
    topology = {"server_netns": "dclab-check-s", "client_netns": "dclab-check-c", "server_addr": SERVER_ADDR,
                "client_addr": CLIENT_ADDR}
    err = check_scenario(to_dcemu(s, plan, topology))
    if err:
        raise ScenarioError(f"the emulator refuses this scenario: {err}")
    _events_within(s, exp.longest_s(s, plan, options))
    if setup.choices.backend == "sim":
        if not exp.simulates:
            raise OptionError(f"backend: {exp.name} runs only on real stacks (emu); sim runs "
                                f"{', '.join(sorted(simulating()))}")
        asked = options.inspection().asked()
        asked += options.emulator_mode().asked()
        if asked:
            raise OptionError(f"{', '.join(asked)}: only with --backend emu (a simulated run has no packets on "
                                f"the wire, no TLS and no real-time emulator)")
        stand_in = setup.choices.stand_ins
        try:
            workload_toml(plan, plan.flows, rmem_for(setup.host), {}, 1.0, stand_in)  # a stack without a model, or a workload it cannot model
        except SimError as e:
            raise OptionError(f"backend sim: {e}") from None
        # A stand-in no flow runs on would be recorded and labelled for nothing.
        unused = sorted(set(stand_in) - set(used_stand_ins(_flows(plan), stand_in)))
        if unused:
            raise OptionError(f"--stand-in {unused[0]}={stand_in[unused[0]]}: no flow of this run is "
                                f"{unused[0].replace(':', ' ')} without a model of its own (its flows: "
                                f"{', '.join(f'{st} {cc}' for st, cc in dict.fromkeys(_flows(plan)))})")
    return plan


def _flows(plan: FlowPlan) -> list[tuple[str, str]]:
    return [(f.stack, f.cc or "") for f in plan.flows]


def simulating() -> list[str]:
    from . import experiments

    return [name for name, e in experiments().items() if e.simulates]


class Session:
    """Testbeds kept open across repetitions (for ``one_testbed`` experiments), in
    ``workdir/testbed-K``; use as a context manager, so that the last one is closed
    whatever happens."""

    def __init__(self, workdir: Path, on_wait: Callable[[], None] | None = None):
        self.workdir = Path(workdir)
        self.on_wait = on_wait
        self.bed: Testbed | None = None
        self._key: str | None = None
        self.opened = 0  # testbeds started so far

    def testbed(self, s: Scenario, plan: FlowPlan, host: HostConfig, inspect: Inspection,
                emulator_args: tuple[str, ...] = ()) -> tuple[Testbed, bool]:
        """The open testbed when it was made for the same scenario, plan, host
        configuration and dcemu options, else a fresh one with its servers up; and whether
        it is fresh."""
        key = repr((to_toml(s), plan, host.name, inspect, emulator_args))
        if self.bed is not None and key == self._key and not self.bed.dead_part():
            return self.bed, False
        self.close()
        self.opened += 1
        bed = Testbed(s, plan, host, self.workdir / f"testbed-{self.opened}", on_wait=self.on_wait, inspect=inspect,
                      emulator_args=emulator_args)
        bed.__enter__()
        try:
            bed.start_servers()
        except BaseException:
            bed.close()
            raise
        self.bed, self._key = bed, key
        return bed, True

    def close(self) -> None:
        if self.bed is not None:
            bed, self.bed, self._key = self.bed, None, None
            bed.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_rep(exp: Experiment[OptionsT], scenario: Scenario, options: OptionsT, rep_dir: Path, rep: int = 1,
            on_wait: Callable[[], None] | None = None, session: Session | None = None, draw: bool = True) -> RepResult:
    """One repetition in a fresh testbed (or, for a ``one_testbed`` experiment, on the
    session's); returns (and writes as result.json) its result, and draws the
    experiment's per-run figure (unless ``draw`` is off: `dclab plot --run` draws it later)."""
    shared = exp.one_testbed and session is not None
    setup = rep_setup(exp, scenario, options, rep, shared)
    s, plan, host = setup.scenario, setup.plan, setup.host
    result = setup.result(exp, rep)
    inspect = options.inspection()
    rep_dir.mkdir(parents=True, exist_ok=True)
    if shared:
        assert session is not None
        try:
            tb, fresh = session.testbed(s, plan, host, inspect, options.emulator_args())
            result.environment = environment([get_stack(n) for n in plan.stacks()], tb.settings)
            result.environment["testbed"] = str(tb.workdir)
            if fresh and tb.recovered:
                result.environment["recovered_before_run"] = tb.recovered
            write_json(rep_dir / "environment.json", result.environment)
            tb.state["rep_dir"] = rep_dir  # where the repetition's own files go (the testbed's are elsewhere)
            result = exp.measure(tb, s, plan, options, result)
            died = tb.dead_part()
        except BaseException:
            session.close()  # a part may be dead or the run interrupted: the next repetition starts afresh
            raise
        if died:
            session.close()
            raise PartDied(died)
    elif setup.choices.backend == "sim":
        with SimBed(s, plan, host, rep_dir, setup.choices.stand_ins) as sb:
            result.environment = environment([], sb.settings)
            result.environment["backend"] = "sim"
            result.environment["models"] = sb.models()
            if sb.stand_in:
                result.environment["stand_in"] = sb.stand_in
            write_json(rep_dir / "environment.json", result.environment)
            result = exp.measure(sb, s, plan, options, result)
    else:
        if session is not None:
            session.close()  # a kept testbed holds the host lock: this one would wait for it forever
        with Testbed(s, plan, host, rep_dir, on_wait=on_wait, inspect=inspect, emulator_args=options.emulator_args()) as tb:
            tb.start_servers()
            result.environment = environment([get_stack(n) for n in plan.stacks()], tb.settings)
            if tb.recovered:
                result.environment["recovered_before_run"] = tb.recovered
            write_json(rep_dir / "environment.json", result.environment)  # on disk before the clients start
            result = exp.measure(tb, s, plan, options, result)
    if isinstance(options, PacketSizeOptions):
        result.details.update(options.packet_sizes())  # in the record, so the store and the report show them
    result.details["jitter"] = s.jitter()  # the semantics as run: the field's None depends on the link
    # A one_testbed experiment draws from what its measure left in rep_dir (dcemu's stats are the testbed's).
    if draw and (exp.one_testbed or (stats_file(rep_dir) is not None and result.t0_ms is not None)):
        title = exp.run_title(s, options, result)
        if setup.choices.backend == "sim":  # a model's result is labelled wherever it appears
            title += " (simulated)"
        exp.run_figure(rep_dir, result.stored(s, options), rep_dir / exp.run_figure_name, title)
    write_json(rep_dir / "result.json", result.model_dump(mode="json"))
    return result


def failed_rep(exp: Experiment[OptionsT], scenario: Scenario, options: OptionsT, rep: int, error: str,
               shared: bool) -> RepResult:
    """The record of a repetition that could not be measured (a part of the testbed died,
    or it could not be set up); ``shared`` as it would have run (``rep_setup``)."""
    return rep_setup(exp, scenario, options, rep, shared).result(exp, rep, error)


def run_reps(exp: Experiment[OptionsT], scenario: Scenario, options: OptionsT, reps: int, out: Path,
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
    with Session(out, on_wait) as session:
        for rep in range(1, reps + 1):
            rep_dir = out / f"rep-{rep:02d}"
            try:
                rec = run_rep(exp, scenario, options, rep_dir, rep, on_wait, session)
            except NotReady:
                raise  # no repetition can run here: recording each as failed would say nothing more
            except Exception as e:  # noqa: BLE001 - the policy decides; KeyboardInterrupt passes
                if on_error != "continue":
                    raise
                rec = failed_rep(exp, scenario, options, rep, f"{type(e).__name__}: {e}", shared=exp.one_testbed)
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


__all__ = ["RepSetup", "Session", "rep_seed", "rep_setup", "run_rep", "run_reps"]
