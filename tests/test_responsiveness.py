"""The responsiveness experiment's parts that need no testbed: the ping probe's output read
back, the window's summary (loss, percentiles, the draft's trimmed mean and RPM), each
leg's queue from dcemu's summary record, the plan (the probe's bearer first) and the
options refused before anything starts. The run itself: tests/test_responsiveness_run.py."""

from __future__ import annotations

import math

import pytest
from click.testing import CliRunner

from dclab.analysis.responsiveness import Echo, ce_seen, leg_queues, percentile, summarize, trimmed_mean
from dclab.cli import app
from dclab.dcemu.records import Aqm, Cell, DeliveredFlow, Device, Direction, Hist, Leg, Stats
from dclab.experiments import get_experiment
from dclab.scenario import Scenario
from dclab.testbed.ping import parse, ping_args

OUTPUT = """PING 198.18.0.1 (198.18.0.1) 56(84) bytes of data.
[100.500000] 64 bytes from 198.18.0.1: icmp_seq=1 ttl=63 time=40.0 ms
[100.720000] 64 bytes from 198.18.0.1: icmp_seq=3 ttl=63 time=20.0 ms
[100.730000] 64 bytes from 198.18.0.1: icmp_seq=3 ttl=63 time=30.0 ms (DUP!)
[100.950000] 64 bytes from 198.18.0.1: icmp_seq=4 ttl=63 time=150.0 ms

--- 198.18.0.1 ping statistics ---
5 packets transmitted, 3 received, +1 duplicates, 40% packet loss, time 402ms
"""


def test_ping_output_gives_every_request_sent_with_its_send_time_and_round_trip():
    echoes = parse(OUTPUT, start_wall=100.46, interval_s=0.1)
    assert [e.seq for e in echoes] == [1, 2, 3, 4, 5]
    assert [e.rtt_ms for e in echoes] == [40.0, None, 20.0, 150.0, None]  # a duplicate is not a second echo
    assert echoes[0].sent_wall == pytest.approx(100.46)  # the reply's arrival less its round trip
    assert echoes[1].sent_wall == pytest.approx(100.56)  # no reply: the start plus its number's intervals
    assert echoes[3].sent_wall == pytest.approx(100.80)
    assert ping_args("198.18.0.1", 0.05) == ["ping", "-n", "-D", "-i", "0.05", "198.18.0.1"]
    with pytest.raises(ValueError, match="interval: must be 0.01 to 10.0 s"):
        ping_args("198.18.0.1", 0.001)


def test_a_window_counts_its_echoes_loss_and_the_drafts_trimmed_mean():
    echoes = [Echo(k + 1, 10.0 + k * 0.1, float(k + 1) if k % 10 != 9 else None) for k in range(100)]
    s = summarize(echoes, 10.0, 19.95)
    assert s.sent == 100 and s.lost == 10 and s.loss == pytest.approx(0.1)
    rtts = [float(k + 1) for k in range(100) if k % 10 != 9]
    assert s.rtt_p50_ms == pytest.approx(percentile(rtts, 0.5)) and s.rtt_max_ms == 99.0
    # 90 replies: the fastest floor(0.95 * 90) = 85 kept
    assert s.rtt_trimmed_ms == pytest.approx(sum(sorted(rtts)[:85]) / 85)
    assert s.rpm == pytest.approx(60_000 / s.rtt_trimmed_ms)
    assert summarize(echoes, 15.0, 15.45).sent == 5  # the window's own echoes only
    none = summarize([Echo(1, 1.0, None)], 0.0, 2.0)
    assert none.sent == 1 and none.lost == 1 and none.rpm is None and none.rtt_p50_ms is None
    assert summarize([], 0.0, 1.0).loss is None


def test_percentile_and_trimmed_mean():
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert percentile([0.0, 10.0], 0.99) == pytest.approx(9.9)
    assert trimmed_mean([1.0] * 19 + [1000.0]) == 1.0  # the slowest 5 % left out
    assert trimmed_mean([5.0]) == 5.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_the_ce_marks_a_flows_receivers_saw_sum_its_connections():
    flows = [DeliveredFlow(protocol=6, server_port=4433, client_port=40000, packets=900, ect_packets=880, ce_packets=20),
             DeliveredFlow(protocol=6, server_port=4434, client_port=40001, packets=70, ect_packets=68, ce_packets=2),
             DeliveredFlow(protocol=6, server_port=4434, client_port=40002, packets=70, ect_packets=69, ce_packets=1),
             DeliveredFlow(protocol=1, packets=50)]
    summary = Stats(type="summary", version=9, t_ms=200.0, flows=flows)
    assert (ce_seen([summary], 4433), ce_seen([summary], 4434), ce_seen([summary], 9999)) == (20, 3, 0)
    # a dcemu from before it counted per flow, no summary, no port: unknown, not zero
    assert ce_seen([Stats(type="summary", version=8, t_ms=200.0)], 4433) is None
    assert ce_seen([Stats(type="interval", version=9, t_ms=100.0)], 4433) is None
    assert ce_seen([summary], None) is None


def test_each_legs_queue_from_the_summary_record():
    leg = Leg(name="leg1", downlink=Direction(packets_out=900, dropped_queue_packets=7,
                                             aqm=Aqm(dropped_packets=3, marked_packets=40),
                                             sojourn=Hist(count=900, p50_us=4_000, p99_us=18_500, max_us=30_000)))
    quiet = Leg(name="leg2")
    interval = Stats(type="interval", version=8, t_ms=100.0, legs=[quiet])
    summary = Stats(type="summary", version=8, t_ms=200.0, legs=[leg, quiet])
    (one, two) = leg_queues([interval, summary])
    assert (one.leg, one.sojourn_p50_ms, one.sojourn_p99_ms, one.sojourn_max_ms) == ("leg1", 4.0, 18.5, 30.0)
    assert (one.packets_out, one.dropped_full, one.aqm_dropped, one.aqm_marked) == (900, 7, 3, 40)
    assert two.sojourn_p99_ms is None and two.aqm_dropped == 0
    assert leg_queues([interval]) == []
    # a cell leg has no rate stage: the device that served the most packets, its AQM counted by the leg
    cell = Leg(name="lte", downlink=Direction(packets_out=500, aqm=Aqm(marked_packets=6)),
               cell=Cell(devices=[Device(device=0, packets_out=20, sojourn=Hist(p99_us=1_000)),
                                  Device(device=1, packets_out=480, sojourn=Hist(p50_us=2_000, p99_us=9_000))]))
    (lte,) = leg_queues([Stats(type="summary", version=8, t_ms=1.0, legs=[cell])])
    assert (lte.sojourn_p50_ms, lte.sojourn_p99_ms, lte.aqm_marked) == (2.0, 9.0, 6)


def test_the_plan_puts_every_flow_and_the_probe_on_one_bearer():
    exp = get_experiment("responsiveness")
    plan = exp.plan(Scenario(), exp.options())
    assert [b.name for b in plan.bearers] == ["dc"] and plan.default_bearer == "dc"
    assert [(f.name, f.stack, f.bearer) for f in plan.flows] == [("bulk", "tcp", "dc"), ("short", "tcp", "dc")]
    sc = exp.plan(Scenario(), exp.options(bearer="sc", stack="quinn", short="50kB"))
    assert (sc.bearers[0].mode, sc.bearers[0].legs) == ("sc", (1,))
    assert sc.flow("short").stack == "quinn" and sc.flow("short").workload.objects == (50_000,)
    assert not exp.simulates  # the simulation has no ICMP probe
    est = exp.estimate_s(Scenario(), exp.options(), 40.0)
    assert 5 < est < 60 and not math.isnan(est)


@pytest.mark.parametrize(("args", "message"), [
    (["--count", "0"], "--count: must be 1 to 200 (got 0)"),
    (["--probe-ms", "5"], "--probe-ms: Input should be greater than or equal to 10"),
    (["--bearer", "paths"], "'paths' is not one of 'dc', 'sc'"),
    (["--short", "-1"], "--short: expected a size"),
    (["--bulk-stack", "nope"], "'--bulk-stack': 'nope' is not one of"),
])
def test_bad_options_are_refused_before_anything_starts(args, message):
    r = CliRunner().invoke(app, ["run", "responsiveness", *args])
    assert r.exit_code == 2 and message in r.output, r.output
