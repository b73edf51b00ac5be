"""A scenario as an experiment renders it for dcemu, and its run key: shared by the tests
of scenario fields (test_scenario.py, test_aqm.py)."""

from __future__ import annotations

from dclab import scenario as sc
from dclab.campaign import plan as cp
from dclab.dcemu.config import to_dcemu
from dclab.experiments import get_experiment
from dclab.files import JsonObject


def render(s: sc.Scenario, kind: str = "throughput", topology: JsonObject | None = None) -> str:
    """The dcemu config `kind` writes for `s` (no namespaces unless `topology` names them)."""
    exp = get_experiment(kind)
    o = exp.options()
    return to_dcemu(exp.scenario(s, o), exp.plan(exp.scenario(s, o), o), topology or {})


def throughput_key(s: sc.Scenario) -> str:
    """The run key of a default throughput run (tcp:cubic, batch 10, repetition 1) on `s`."""
    options = get_experiment("throughput").options().model_dump(mode="json")
    return cp.run_key("throughput", cp.parse_config("tcp:cubic"), "batch", 10.0, 1, s, options)
