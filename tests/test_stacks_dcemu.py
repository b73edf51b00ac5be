"""Every stack, with every congestion controller it offers, downloads through dcemu's
default DC scenario at the goodput its kept runs allow (tests/measured.py); the study's
directions are tests/test_directions.py."""

from __future__ import annotations

import pytest
from measured import check_bound

from dclab.endpoints import STACKS, get_stack
from dclab.endpoints.base import Workload
from dclab.flowplan import Flow, single_bearer_plan
from dclab.scenario import Scenario
from dclab.testbed import Testbed
from dclab.testbed.hostconfig import host_config_for

pytestmark = pytest.mark.root

CASES = [(name, cc) for name in STACKS for cc in get_stack(name).ccs]


@pytest.mark.parametrize("stack_name, cc", CASES)
def test_short_download_through_dcemu(tmp_path, stack_name, cc):
    stack = get_stack(stack_name)
    size = 10_000_000  # long enough that one stall in slow start does not decide the goodput
    host = host_config_for(stack.transport, "default")
    plan = single_bearer_plan(Scenario(), [Flow("dc", stack_name, "dc", Workload.single(size), cc)])
    with Testbed(Scenario(), plan, host, tmp_path) as tb:
        tb.start_servers()
        r = tb.run_clients(timeout_s=60)["dc"]
        records = tb.finish()
    assert r.ok and r.bytes == size, r.error
    codes = r.extra.get("returncodes", [r.extra.get("returncode")])
    assert codes and all(c == 0 for c in codes), f"a successful client records exit status 0 ({codes})"
    check_bound(f"stacks.{stack_name}.{cc}.10mb_mbps", r.goodput_mbps)
    summary = records[-1]
    dc = summary.bearers[0]
    assert dc.delivered_bytes >= size, "the body crossed the DC bearer"
    [(_, first), (_, second)] = dc.tx_pdus
    assert 0 <= first - second <= 100, "batches of 100 split 1:1: the legs differ by one batch at most"
