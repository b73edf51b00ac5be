"""Every stack, with every congestion controller it offers, downloads through dcemu's
default DC scenario; and the directions the study found show up in short runs."""

from __future__ import annotations

import json

import pytest
from conftest import run_dclab

from dclab.endpoints import STACKS, get_stack
from dclab.endpoints.base import Workload
from dclab.flows import Flow, single_bearer_plan
from dclab.scenario import Scenario
from dclab.testbed import Testbed
from dclab.testbed.hostconfig import host_config_for

pytestmark = pytest.mark.root

CASES = [(name, cc) for name in STACKS for cc in get_stack(name).ccs]


@pytest.mark.parametrize("stack_name, cc", CASES)
def test_short_download_through_dcemu(tmp_path, stack_name, cc):
    stack = get_stack(stack_name)
    size = 2_000_000
    host = host_config_for(stack.transport, "default")
    plan = single_bearer_plan(Scenario(), [Flow("dc", stack_name, "dc", Workload.single(size), cc)])
    with Testbed(Scenario(), plan, host, tmp_path) as tb:
        tb.start_servers()
        r = tb.run_clients(timeout_s=60)["dc"]
        records = tb.finish()
    assert r.ok and r.bytes == size, r.error
    codes = r.extra.get("returncodes", [r.extra.get("returncode")])
    assert codes and all(c == 0 for c in codes), f"a successful client records exit status 0 ({codes})"
    # Two 20 Mbit/s legs: faster than one leg alone is possible, beyond 40 is not.
    assert 1 < r.goodput_mbps < 40.5
    summary = records[-1]
    dc = summary["bearers"][0]
    assert dc["delivered_bytes"] >= size, "the body crossed the DC bearer"
    assert all(n > 0 for _, n in dc["tx_pdus"]), "both legs carried the download"


def throughput(*args: str) -> float:
    p = run_dclab("run", "throughput", "--json", *args, timeout=1800)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["goodput_mbps"]["mean"]


@pytest.mark.slow
def test_directions_of_the_study(tmp_path):
    """Short versions of the checks a user makes (full runs: see the README)."""
    common = ["--stack", "tcp", "--size", "30MB", "--reps", "2"]
    sc = throughput(*common, "--split", "100:0", "--out", str(tmp_path / "sc"))
    dc = throughput(*common, "--out", str(tmp_path / "dc"))
    assert sc < 21 and dc > sc * 1.2
    b500 = throughput(*common, "--batch", "500", "--out", str(tmp_path / "b500"))
    assert b500 < dc
    even = throughput(*common, "--bw", "33.33,6.67", "--split", "50:50", "--out", str(tmp_path / "even"))
    match = throughput(*common, "--bw", "33.33,6.67", "--split", "83:17", "--out", str(tmp_path / "match"))
    assert match > even * 1.3
