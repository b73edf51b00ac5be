"""Flow plans: validation naming the flow or bearer, port allocation, labels, and their
rendering into dcemu scenario files that dcemu accepts (no root)."""

from __future__ import annotations

import subprocess
import tomllib

import pytest

from dclab.dcemu.config import to_dcemu
from dclab.dcemu.sim import workload_toml
from dclab.dcemu.sim_models import SimError
from dclab.endpoints.base import Workload
from dclab.flowplan import Bearer, Flow, FlowPlan, PlanError, parse_assignments, single_bearer_plan
from dclab.paths import DCEMU
from dclab.scenario import Scenario, build
from dclab.testbed.hostconfig import host_config_for
from dclab.testbed.simbed import rmem_for

W = Workload.single(1000)


def flow(name: str, stack: str = "aioquic", bearer: str = "dc", **kw) -> Flow:
    return Flow(name, stack, bearer, W, **kw)


def test_ports_are_allocated_around_the_given_ones():
    plan = FlowPlan.build([Bearer("dc")], [flow("a"), flow("b", port=4434), flow("c"), flow("d")], Scenario())
    assert [f.port for f in plan.flows] == [4433, 4434, 4435, 4436]
    assert len({f.port for f in plan.flows}) == 4


def test_congestion_control_is_resolved_per_stack():
    plan = FlowPlan.build([Bearer("dc")], [flow("q"), flow("t", "tcp"), flow("n", "ngtcp2", cc="bbr")], Scenario())
    assert [f.cc for f in plan.flows] == ["reno", "cubic", "bbr"]
    assert plan.tcp_ccs() == ("cubic",)
    assert plan.transports() == {"udp", "tcp"}
    assert plan.stack_label() == "q=aioquic,t=tcp,n=ngtcp2" and plan.cc_label() == "bbr,cubic,reno"
    assert host_config_for(plan.transports(), "large").name == "quic-large+tcp"
    one = single_bearer_plan(Scenario(), [flow("x", "tcp")])
    assert one.stack_label() == "tcp" and host_config_for(one.transports(), "large").name == "tcp"


@pytest.mark.parametrize(
    "bearers, flows, message",
    [
        ([], [flow("a")], "at least one bearer"),
        ([Bearer("dc")], [], "1 to 64 flows"),
        ([Bearer("dc"), Bearer("dc")], [flow("a")], "bearer names must be unique"),
        ([Bearer("dc")], [flow("a"), flow("a")], "flow names must be unique"),
        ([Bearer("dc")], [flow("a", port=5000), flow("b", port=5000)], "same port"),
        ([Bearer("dc")], [flow("a", bearer="sc9")], "flow a: no bearer 'sc9' (bearers: dc)"),
        ([Bearer("sc", "sc", (3,))], [flow("a", bearer="sc")], "bearer sc: leg 3 does not exist (the scenario has 2)"),
        ([Bearer("sc", "sc", (1, 2))], [flow("a", bearer="sc")], "an SC bearer is on exactly one leg"),
        ([Bearer("dc", split=(1, 2, 3))], [flow("a")], "split needs one share per leg of the bearer (2)"),
        ([Bearer("dc")], [flow("a", cc="vegas")], "flow a: --cc: aioquic offers reno, cubic, bbr (got 'vegas')"),
        ([Bearer("dc")], [flow("a", "nope")], "--stack: must be one of"),
        ([Bearer("mp", "paths", (1,))], [flow("a", "mptcp", "mp")], "bearer mp: a paths bearer spans 2 legs or more"),
        ([Bearer("mp", "paths", split=(1, 1))], [flow("a", "mptcp", "mp")], "and has no split"),
        ([Bearer("m1", "paths"), Bearer("m2", "paths")], [flow("a", "mptcp", "m1")],
         "at most one paths bearer (got m1, m2)"),
        ([Bearer("mp", "paths")], [flow("a", "tcp", "mp")],
         "flow a: tcp is one path; bearer mp needs a multipath stack (mptcp"),
    ],
)
def test_bad_plans_are_refused_naming_what_is_wrong(bearers, flows, message):
    with pytest.raises((PlanError, ValueError), match=message.replace("(", r"\(").replace(")", r"\)")):
        FlowPlan.build(bearers, flows, Scenario())


def test_a_workload_beyond_the_stack_is_refused_with_the_flow_named():
    w = Workload(objects=(10, 10), connections=1, streams="sequential")
    with pytest.raises(PlanError, match="flow a: ngtcp2 cannot run this workload"):
        FlowPlan.build([Bearer("dc")], [Flow("a", "ngtcp2", "dc", w)], Scenario())


def test_assignments():
    assert parse_assignments("dc=aioquic,sc2=tcp", ["dc", "sc1", "sc2"], "--stacks") == {"dc": "aioquic", "sc2": "tcp"}
    with pytest.raises(PlanError, match="--stacks: expected dc=VALUE,sc1=VALUE"):
        parse_assignments("xx=tcp", ["dc", "sc1"], "--stacks")


def rendered(s: Scenario, plan: FlowPlan, tmp_path) -> dict:
    """The plan as dcemu reads it back (`dcemu check` fills in every default)."""
    if not DCEMU.exists():
        pytest.skip("dcemu not built")
    f = tmp_path / "d.toml"
    f.write_text(to_dcemu(s, plan, {"server_netns": "dclab-a", "client_netns": "dclab-b"}))
    p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return tomllib.loads(p.stdout)


def test_many_flows_over_three_bearers_and_three_legs_render_for_dcemu(tmp_path):
    s = build(bw=[10.0, 20.0, 30.0], split=[1.0, 1.0, 1.0], delay=[5.0, 10.0, 20.0], loss=[0.0, 0.0, 0.0])
    bearers = [Bearer("dc"), Bearer("pair", "dc", (2, 3), split=(3.0, 1.0)), Bearer("sc3", "sc", (3,)),
               Bearer("dup", "dup", (1, 2))]
    flows = [flow(f"f{i}", bearer=b) for i, b in enumerate(["dc", "dc", "pair", "sc3", "sc3", "dup"])]
    plan = FlowPlan.build(bearers, flows, s, stats_interval_ms=50.0)
    d = rendered(s, plan, tmp_path)
    by = {b["name"]: b for b in d["bearers"]}
    assert d["default_bearer"] == "dc" and d["stats"]["interval_ms"] == 50.0
    assert [m["server_port"] for m in by["dc"]["match"]] == [4433, 4434]
    assert by["pair"]["legs"] == ["leg2", "leg3"] and by["pair"]["split"]["ratio"] == [3.0, 1.0]
    assert by["sc3"]["mode"] == "sc" and by["sc3"]["legs"] == ["leg3"] and len(by["sc3"]["match"]) == 2
    assert by["dup"]["mode"] == "dup"
    assert [leg["downlink"]["rate"] for leg in d["legs"]] == ["10.0mbit", "20.0mbit", "30.0mbit"]


def test_one_leg_and_duplication(tmp_path):
    one = build(bw=[20.0], split=[100.0], delay=[10.0], loss=[0.0])
    d = rendered(one, single_bearer_plan(one, [flow("a")]), tmp_path)
    assert len(d["legs"]) == 1 and d["bearers"][0]["mode"] == "dc"
    dup = build(duplicate=True)
    d = rendered(dup, FlowPlan.build([Bearer("dc"), Bearer("sc1", "sc", (1,))], [flow("a"), flow("b", bearer="sc1")], dup),
                 tmp_path)
    assert [b["mode"] for b in d["bearers"]] == ["dup", "sc"]  # duplication turns DC bearers only


def test_a_paths_bearer_is_a_path_bearer_per_leg_each_from_its_own_client_address(tmp_path):
    s = build(bw=[10.0, 20.0, 30.0], split=[1.0, 1.0, 1.0], delay=[5.0, 10.0, 20.0], loss=[0.0, 0.0, 0.0])
    bearers = [Bearer("mp", "paths"), Bearer("sc2", "sc", (2,)), Bearer("dc")]
    plan = FlowPlan.build(bearers, [flow("m", "mptcp", "mp"), flow("m2", "mptcp", "mp"), flow("s", "tcp", "sc2"),
                                    flow("d", "tcp", "dc")], s)
    addrs = ("198.18.0.2", "198.18.0.3", "198.18.0.4")
    assert plan.path_addresses(3) == {"mp": addrs}
    assert plan.client_paths(plan.flow("m"), 3) == addrs and plan.client_paths(plan.flow("s"), 3) == ()
    d = rendered(s, plan, tmp_path)
    assert d["topology"]["client_extra_addrs"] == ["198.18.0.3", "198.18.0.4"]  # .2 is the client's own
    by = {b["name"]: b for b in d["bearers"]}
    assert list(by) == ["mp-leg1", "mp-leg2", "mp-leg3", "sc2", "dc"] and d["default_bearer"] == "mp-leg1"
    for k, addr in enumerate(addrs, start=1):
        b = by[f"mp-leg{k}"]
        assert b["mode"] == "path" and b["legs"] == [f"leg{k}"]  # dcemu takes its own leg's uplink
        assert b["match"] == [{"server_port": 4433, "client_addr": addr}, {"server_port": 4434, "client_addr": addr}]
    # Every leg carries an uplink (each path's own; the DC and SC bearers' is the first, leg 1).
    assert all("uplink" in leg for leg in d["legs"])
    # Without a paths bearer the uplink is leg 1's only, as in the study.
    d = rendered(s, FlowPlan.build([Bearer("dc")], [flow("d", "mptcp")], s), tmp_path)
    assert ["uplink" in leg for leg in d["legs"]] == [True, False, False] and not d["topology"]["client_extra_addrs"]


def test_a_paths_bearer_is_refused_over_a_cell_and_by_the_simulation():
    cell = build(link="lte:good")
    with pytest.raises(PlanError, match=r"bearer mp: a paths bearer .* over cells \(--link lte:good\) it is not built"):
        FlowPlan.build([Bearer("mp", "paths", (1, 1))], [flow("a", "mptcp", "mp")], cell)
    # Two cells are two legs: still refused, and not as "one leg".
    with pytest.raises(PlanError, match=r"over cells \(--link endc:good,good\) it is not built"):
        FlowPlan.build([Bearer("mp", "paths")], [flow("a", "mptcp", "mp")], build(link="endc:good,good"))
    plan = FlowPlan.build([Bearer("mp", "paths")], [flow("a", "mptcp", "mp")], Scenario())
    with pytest.raises(SimError, match="flow a: the simulation has no model of a multipath transport .* --backend emu"):
        workload_toml(plan, plan.flows, rmem_for(host_config_for({"tcp"}, "default")), {}, 1.0)


def test_the_split_label_says_what_pdcp_does_with_the_plan():
    """A run's summary line shows the split only where a DC bearer splits."""
    s, dup = Scenario(), build(duplicate=True)
    assert FlowPlan.build([Bearer("dc")], [flow("a")], s).split_label(s) == "batch 100, split 50:50"
    assert FlowPlan.build([Bearer("dc")], [flow("a")], dup).split_label(dup) == "PDCP duplication"
    mp = FlowPlan.build([Bearer("mp", "paths")], [flow("a", "mptcp", "mp")], s)
    assert mp.split_label(s) == "no PDCP split (paths bearers)"
    sc = FlowPlan.build([Bearer("s1", "sc", (1,)), Bearer("s2", "sc", (2,))],
                        [flow("a", "tcp", "s1"), flow("b", "tcp", "s2")], s)  # fmt: skip
    assert sc.split_label(s) == "no PDCP split (sc bearers)"
