"""The capacity experiment's UDP load (``--udp-mbps``, dclab/endpoints/iperf3/adapter.py):
the iperf3 command it runs, the report it reads (iperf3 3.12's JSON, kept in tests/data),
what it refuses, and, as root, UDP offered beyond two wired legs' capacity through dcemu."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_dclab
from measured import check_bound

from dclab.endpoints import get_stack
from dclab.endpoints.base import ClientSpec, StackError, Workload
from dclab.endpoints.iperf3.adapter import client_command, rate_of, report
from dclab.experiments import get_experiment

DATA = Path(__file__).parent / "data"


def spec(rate: str | None = "400", timeout_s: float = 37.0) -> ClientSpec:
    options = ({"rate_mbps": rate},) if rate is not None else ()
    return ClientSpec(address="198.18.0.1", port=4433, workload=Workload(objects=(10**9,), cc_options=options),
                      cc="cbr", workdir=Path("/nonexistent"), certs=None, timeout_s=timeout_s)  # type: ignore[arg-type]


def test_the_client_offers_the_rate_from_the_server_and_ends_before_the_deadline():
    cmd = client_command(spec(), ["ip", "netns", "exec", "c"])
    assert cmd[:5] == ["ip", "netns", "exec", "c", "iperf3"]
    text = " ".join(cmd)
    assert "--udp --reverse --bitrate 400M" in text and "--port 4433" in text and "--json" in text
    assert cmd[cmd.index("--time") + 1] == "36"  # 1 s before the testbed's deadline: it reports itself
    assert "--bytes" not in cmd  # iperf3 takes one end condition


@pytest.mark.parametrize("rate", [None, "0.5", "x", "nan", "20001"])
def test_a_missing_or_out_of_range_rate_is_refused_naming_the_knob(rate):
    with pytest.raises(ValueError, match=r"rate_mbps: the offered UDP rate must be 1 to 20000"):
        rate_of(spec(rate).workload)


def test_the_report_is_what_the_client_received():
    r = report((DATA / "iperf3-udp-reverse.json").read_text())
    assert r["bytes"] == 6241200 and r["packets"] == 4458  # sum_received, not the sender's 6255200
    assert (r["sent_bytes"], r["sent_packets"]) == (6255200, 4468)
    assert r["lost_packets"] == 0 and 0 < r["jitter_ms"] < 1
    with pytest.raises(ValueError, match="iperf3: unable to connect to server: Connection refused"):
        report((DATA / "iperf3-refused.json").read_text())
    with pytest.raises(ValueError, match="no JSON report"):
        report("iperf3: error - control socket has closed unexpectedly\n")


def test_the_stack_takes_only_its_rate_knob():
    stack = get_stack("iperf3-udp")
    assert (stack.transport, stack.listens_on, stack.ccs) == ("udp", "tcp", ("cbr",))
    with pytest.raises(StackError, match="congestion control options pacing"):
        stack.check("cbr", Workload(cc_options=({"pacing": "1"},)))


def test_capacity_with_udp_plans_the_load_and_refuses_a_stack_given_with_it():
    from dclab.scenario import Scenario

    exp = get_experiment("capacity")
    plan = exp.plan(Scenario(), exp.options(udp_mbps=60))
    (flow,) = plan.flows
    assert (flow.stack, flow.cc, flow.workload.cc_options) == ("iperf3-udp", "cbr", ({"rate_mbps": "60"},))
    assert exp.plan(Scenario(), exp.options()).flows[0].stack == "aioquic"
    r = run_dclab("run", "capacity", "--udp-mbps", "60", "--stack", "tcp", "--duration", "4", "--warmup", "1")
    assert r.returncode == 2 and "--stack" in r.stderr and "--udp-mbps" in r.stderr, r.stderr
    r = run_dclab("run", "capacity", "--udp-mbps", "0.5", "--duration", "4", "--warmup", "1")
    assert r.returncode == 2 and "--udp-mbps" in r.stderr, r.stderr


@pytest.mark.root
def test_udp_beyond_two_legs_gets_their_capacity(tmp_path):
    """60 Mbit/s of UDP offered to two 20 Mbit/s legs (static 50:50): the DC bearer carries
    what the legs carry, and the client reports the datagrams lost in their queues."""
    out = tmp_path / "udp"
    r = run_dclab("run", "capacity", "--udp-mbps", "60", "--duration", "7", "--warmup", "2", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    import json

    result = json.loads(r.stdout)
    share = result["metrics"]["capacity_share"]["mean"]
    check_bound("udp_load.two_legs_60mbps_share", share)
    (rep,) = [json.loads(p.read_text()) for p in out.glob("rep-*/result.json")]
    transfer = rep["flows"][0]["transfer"]
    iperf = transfer["extra"]["iperf3"]
    assert iperf["lost_packets"] > 0 and iperf["sent_bytes"] > transfer["bytes"] > 0, iperf
    assert rep["stack"] == "iperf3-udp" and rep["cc"] == "cbr"
