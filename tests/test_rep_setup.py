"""One repetition's setup (experiments/reps.py ``rep_setup``): computed once, with one
seed rule for a measured repetition and for the record of one that could not be measured."""

from __future__ import annotations

from dclab.experiments import get_experiment
from dclab.experiments.base import Options, RunChoices
from dclab.experiments.reps import failed_rep, rep_setup
from dclab.scenario import Scenario


def test_the_seed_is_the_repetitions_unless_the_testbed_is_shared():
    exp = get_experiment("throughput")
    s = Scenario(seed=7)
    o = exp.options()
    assert [rep_setup(exp, s, o, rep).seed for rep in (1, 2, 5)] == [7, 8, 11]
    assert [rep_setup(exp, s, o, rep, shared=True).seed for rep in (1, 2, 5)] == [7, 7, 7]


def test_a_failed_repetition_records_what_a_measured_one_would():
    exp = get_experiment("mquic")  # one_testbed: shared on a session, not on a cluster's worker
    s, o = Scenario(seed=3), get_experiment("mquic").options(sizes="400KB")
    for shared, seed in ((True, 3), (False, 6)):
        setup = rep_setup(exp, s, o, 4, shared)
        rec = failed_rep(exp, s, o, 4, "boom", shared=shared)
        assert (rec.seed, rec.rep, rec.ok, rec.error) == (seed, 4, False, "boom")
        assert (rec.stack, rec.cc, rec.host_config) == (setup.plan.stack_label(), setup.plan.cc_label(), setup.host.name)
        changed = {k for k in Scenario.model_fields if getattr(setup.scenario, k) != getattr(s, k)} - {"seed"}
        assert changed, "the experiment's own scenario (its preset's links), not the one given"


def test_run_choices_come_from_stack_options_and_default_elsewhere():
    exp = get_experiment("throughput")
    o = exp.options(backend="sim", udp_buffer="large", stand_in="ngtcp2=aioquic")
    c = RunChoices.of(o)
    assert (c.backend, c.udp_buffer, c.stand_ins) == ("sim", "large", {"ngtcp2": "aioquic"})
    assert RunChoices.of(Options()) == RunChoices()  # options without stacks: real time, default buffers
    assert rep_setup(exp, Scenario(), exp.options(udp_buffer="large")).host.name != rep_setup(
        exp, Scenario(), exp.options()).host.name
