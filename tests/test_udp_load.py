"""The capacity experiment's UDP load (``--udp-mbps``, dclab/endpoints/iperf3/adapter.py):
the iperf3 command it runs, the report it reads (iperf3 3.12's JSON, kept in tests/data),
what it refuses, and, as root, UDP offered beyond two wired legs' capacity through dcemu."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_dclab
from measured import check_bound

from dclab.analysis.metrics import nearest
from dclab.dcemu.records import read_stats
from dclab.endpoints import get_stack
from dclab.endpoints.base import ClientSpec, StackError, Workload
from dclab.endpoints.iperf3.adapter import client_command, rate_of, report
from dclab.experiments import get_experiment

DATA = Path(__file__).parent / "data"


LEG_PACKET = 1430  # a 1,400-byte datagram's IP packet, 1,428 bytes, and its 2-byte PDCP header


def window_accounts(rep_dir: Path, t0_ms: float, warmup_s: float, duration_s: float) -> tuple[list[float], int]:
    """Over the window's records: by how many packets each downlink leg's rate stage served
    more than 20 Mbit/s (its output plus the growth of its delay line), and by how many
    packets the bearer delivered more than the legs put out to its PDCP receiver, less what
    that receiver discarded, plus what its reordering buffer released. A leg's output is
    what leaves its delay line, so the delay line is not in the bearer's account (it once
    was: its growth of 4 packets failed this check on an unchanged tree). Packets, not
    bytes: iperf3's control packets are of another size."""
    records = read_stats(rep_dir / "dcemu-stats.jsonl").intervals()
    a, b = nearest(records, t0_ms + warmup_s * 1e3), nearest(records, t0_ms + duration_s * 1e3)
    span_s = (b.t_ms - a.t_ms) / 1e3
    served, carried = [], 0
    for la, lb in zip(a.legs, b.legs, strict=True):
        out = lb.downlink.bytes_out - la.downlink.bytes_out
        carried += lb.downlink.packets_out - la.downlink.packets_out
        grown = lb.downlink.in_flight - la.downlink.in_flight
        served.append((out + grown * LEG_PACKET - 20e6 / 8 * span_s) / LEG_PACKET)
    ra, rb = a.bearers[0], b.bearers[0]
    assert ra.rx is not None and rb.rx is not None
    received = rb.rx.pdus_received - ra.rx.pdus_received
    assert received == carried, (received, carried)  # one snapshot: what left the legs reached PDCP
    discarded = sum(getattr(rb.rx, k) - getattr(ra.rx, k) for k in ("discarded_late", "discarded_duplicate", "discarded_hfn"))
    released = ra.reorder_buffer - rb.reorder_buffer
    return served, (rb.delivered_packets - ra.delivered_packets) - (carried - discarded + released)


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
    (rep_dir,) = out.glob("rep-*")
    rep = json.loads((rep_dir / "result.json").read_text())
    served, residual = window_accounts(rep_dir, rep["t0_ms"], warmup_s=2, duration_s=7)
    # A rate stage serves at its rate: within one packet of 20 Mbit/s x the window, the queue
    # never empty (13 kept runs, 6 busy: -0.26 or +0.74 packets on every leg).
    assert all(-2 <= n <= 1 for n in served), served
    # What the bearer delivers is what the legs carried, less what PDCP discarded, plus what
    # its reordering buffer held at the window's start less what it holds at its end: exactly,
    # as both records are one snapshot of the engine each.
    assert residual == 0, residual
    transfer = rep["flows"][0]["transfer"]
    iperf = transfer["extra"]["iperf3"]
    assert iperf["lost_packets"] > 0 and iperf["sent_bytes"] > transfer["bytes"] > 0, iperf
    assert rep["stack"] == "iperf3-udp" and rep["cc"] == "cbr"
