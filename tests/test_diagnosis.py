"""The run's timeline, its stalls and their diagnosis (dclab/analysis/run_events.py,
diagnosis.py), the socket drop samples' file, the sender's qlog events and the run figure,
on hand-made records: no root, no run."""

from __future__ import annotations

import json

import pytest
from figure_checks import figure
from typed_rows import runs

from dclab.analysis import diagnosis, qlog_recovery, socket_drops
from dclab.analysis.diagnosis import THRESHOLD, diagnose, stalls
from dclab.analysis.run_events import RunFacts, Timeline, timeline
from dclab.analysis.run_figure import run_figure
from dclab.analysis.socket_drops import DropSample
from dclab.analysis.stored_run import StoredFlow, StoredRun
from dclab.dcemu.records import Aqm, Bearer, Direction, Leg, Rx, Stats
from dclab.experiments import get_experiment
from dclab.scenario import Scenario

DT_MS = 10.0
TRANSFER_S = 10.0


def records(stall: tuple[float, float] | None = None, queue_drops_at: float | None = None,
            expiry_at: float | None = None, misread_at: float | None = None) -> list[Stats]:
    """dcemu's interval records of a 10 s transfer (t0 = 0): both legs carry 20 Mbit/s and
    40 reach the client, except in ``stall`` (start, end s) where nothing does; leg1's
    queue drops 5 packets in the interval ending at ``queue_drops_at``, t-Reordering
    expires once at ``expiry_at``, the receiver misreads one COUNT at ``misread_at``."""
    out = []
    queue = expiries = misread = 0
    for i in range(1, int(TRANSFER_S * 1e3 / DT_MS) + 1):
        t = i * DT_MS / 1e3
        idle = stall is not None and stall[0] < t - 1e-9 and t <= stall[1] + 1e-9
        if queue_drops_at is not None and abs(t - queue_drops_at) < 1e-9:
            queue += 5
        if expiry_at is not None and abs(t - expiry_at) < 1e-9:
            expiries += 1
        if misread_at is not None and abs(t - misread_at) < 1e-9:
            misread += 1
        rate = 0.0 if idle else 20.0
        legs = [Leg(name="leg1", downlink=Direction(out_mbps=rate, dropped_queue_packets=queue)),
                Leg(name="leg2", downlink=Direction(out_mbps=rate))]
        out.append(Stats(type="interval", t_ms=i * DT_MS, dt_ms=DT_MS, legs=legs,
                         bearers=[Bearer(name="dc", delivered_mbps=2 * rate, rx=Rx(timer_expiries=expiries, counts_misread=misread))]))
    return out


def line_of(tl: Timeline) -> str | None:
    d = diagnose(tl)
    return d.line() if d is not None else None


FACTS = RunFacts(t0_ms=0.0, end_s=TRANSFER_S, socket_drops=407, t_reordering_ms=200.0)


def test_socket_drops_before_a_stall_are_named_with_their_remedy():
    tl = timeline(records(stall=(4.0, 4.8)), FACTS, [DropSample(3800.0, 400), DropSample(3820.0, 7)])
    [s] = stalls(tl)
    assert (s.start_s, s.end_s, s.cause) == (pytest.approx(4.0), pytest.approx(4.8), "socket_drops")
    d = diagnose(tl)
    assert d is not None and d.main.cause == "socket_drops" and d.share == pytest.approx(0.08)
    assert d.line() == ("diagnosis: 0.8 s stalled (8 % of the 10.0 s transfer) after 407 datagrams dropped at the "
                        "client's socket: see --udp-buffer large")


def test_the_threshold_is_five_percent_of_the_transfer():
    assert THRESHOLD == 0.05
    drops = [DropSample(3900.0, 50)]
    below = timeline(records(stall=(4.0, 4.48)), FACTS, drops)  # 4.8 %
    above = timeline(records(stall=(4.0, 4.53)), FACTS, drops)  # 5.3 %
    assert [s.cause for s in stalls(below)] == ["socket_drops"] and diagnose(below) is None
    assert diagnose(above) is not None


def test_t_reordering_expiry_ending_a_stall_is_named_with_a_shorter_timer_or_a_matched_split():
    tl = timeline(records(stall=(5.0, 5.7), expiry_at=5.71), FACTS, [])
    d = diagnose(tl)
    assert d is not None and d.main.cause == "t_reordering" and d.main.count == 1
    assert "1 t-Reordering expiry (200 ms wait each)" in d.line()
    assert d.line().endswith("see a shorter --t-reordering, now 200 ms, or a --split matched to the legs")


def with_aqm(recs: list[Stats], drops_at: float, marks_at: float) -> list[Stats]:
    """``recs`` with leg2 running an AQM that drops 3 packets in the interval ending at
    ``drops_at`` and marks 4 in the one ending at ``marks_at``."""
    out, drops, marks = [], 0, 0
    for r in recs:
        t = r.t_ms / 1e3
        drops += 3 if abs(t - drops_at) < 1e-9 else 0
        marks += 4 if abs(t - marks_at) < 1e-9 else 0
        leg1, leg2 = r.legs
        down = leg2.downlink.model_copy(update={"aqm": Aqm(dropped_packets=drops, marked_packets=marks)})
        out.append(r.model_copy(update={"legs": [leg1, leg2.model_copy(update={"downlink": down})]}))
    return out


def test_aqm_drops_before_a_wait_are_named_with_ecn_and_marks_are_events_not_causes():
    tl = timeline(with_aqm(records(stall=(2.0, 2.9), expiry_at=2.91), drops_at=1.8, marks_at=1.0), FACTS, [])
    assert [(e.cause, e.where, e.count) for e in tl.events if e.cause.startswith("aqm")] == [
        ("aqm_marks", "leg2", 4), ("aqm_drops", "leg2", 3)]
    d = diagnose(tl)
    assert d is not None and d.main.cause == "aqm_drops" and d.main.count == 3
    assert "3 packets dropped by the legs' AQM" in d.line() and "--aqm-ecn" in d.line()
    marked_only = timeline(with_aqm(records(stall=(2.0, 2.9)), drops_at=-1, marks_at=1.8), FACTS, [])
    assert [s.cause for s in stalls(marked_only)] == [None], "a mark loses nothing"


def test_the_figure_gives_a_legs_aqm_drops_and_marks_rows_of_their_own(tmp_path):
    """Marks at 1.0 s and drops at 1.8 s on leg2: each a scatter at its time (the
    t-Reordering expiry at 2.91 s has its row too)."""
    tl = timeline(with_aqm(records(stall=(2.0, 2.9), expiry_at=2.91), drops_at=1.8, marks_at=1.0), FACTS, [])
    info = figure(run_figure(tl, stalls(tl), diagnose(tl), tmp_path / "f.png", "a run"),
                  ["whole transfer (10.0 s, 0.02 s means)", "", "the first 3 s (10 ms intervals)"], "a run")
    strip = info.axes[1]
    at = sorted(sc.x for sc in strip.series if sc.kind == "scatter" and sc.x is not None)
    assert at == [pytest.approx((1.0, 1.0)), pytest.approx((1.8, 1.8)), pytest.approx((2.91, 2.91))], strip.series
    assert strip.y is not None and strip.y[1] - strip.y[0] == pytest.approx(2), "three rows: marks, drops, expiry"


def test_queue_drops_are_named_before_the_expiry_they_cause():
    tl = timeline(records(stall=(2.0, 2.9), queue_drops_at=1.8, expiry_at=2.91), FACTS, [])
    d = diagnose(tl)
    assert d is not None and d.main.cause == "queue_drops" and d.main.count == 5
    assert "5 packets dropped in the legs' queues" in d.line()
    assert "--queue" in d.line() and "--split" in d.line()


def test_a_misread_count_is_named_before_the_drops_and_the_expiry_around_it():
    """HFN desynchronisation: a PDU held past half the SN space is taken for a later COUNT,
    the receiver waits for the gap that opens and then discards what follows as late; the
    stall is the misreading's, whatever queue drops or expiry came with it."""
    tl = timeline(records(stall=(3.0, 9.0), queue_drops_at=2.8, misread_at=3.0, expiry_at=3.2), FACTS, [])
    assert [s.cause for s in stalls(tl)] == ["sn_misread"]
    d = diagnose(tl)
    assert d is not None and d.main.cause == "sn_misread" and d.main.count == 1
    assert "1 PDU the PDCP receiver took for a later COUNT" in d.line()
    assert d.line().endswith("see --sn-bits 18 (NR PDCP's long SN, 4 times the room of 16 bits)")


def test_a_scheduled_outage_is_named_for_the_stall_it_overlaps_before_the_drops_and_expiry_in_it():
    """--outage 2:3:2 (dcemu's clock, t0 at 0.5 s): the stall from 2.6 to 4.4 s after the
    request overlaps leg2's outage; the expiry that ends it and the queue drops before it are
    the outage's consequences. A stall long after the outage is not put down to it."""
    facts = RunFacts(t0_ms=500.0, end_s=TRANSFER_S, socket_drops=0, t_reordering_ms=200.0, outage=(2, 3000.0, 2000.0))
    tl = timeline(records(stall=(2.6, 4.4), queue_drops_at=2.4, expiry_at=4.4), facts, [])
    assert tl.outages == ((2.5, 4.5, "leg2"),) and [e.where for e in tl.of("outage")] == ["leg2"]
    assert [s.cause for s in stalls(tl)] == ["outage"]
    d = diagnose(tl)
    assert d is not None and d.main.cause == "outage" and d.main.count == 1
    assert "after 1 scheduled outage of a leg (--outage: it lost every packet, both ways)" in d.line()
    assert d.line().endswith("see --duplicate (each packet on both legs), or --fallback-ms under a flow-controlled "
                             "--split-policy")
    later = timeline(records(stall=(7.0, 7.6), queue_drops_at=6.9), facts, [])
    assert [s.cause for s in stalls(later)] == ["queue_drops"]
    [run] = runs([{"ok": 1, "metrics": {"t0_ms": 500.0}, "scenario": {"outage": {"leg": 2, "at_s": 3.0, "duration_s": 2.0}}}])
    assert RunFacts.of(run).outage == (2, 3000.0, 2000.0)


def test_the_figure_marks_a_scheduled_outage_in_its_event_strip(tmp_path):
    facts = RunFacts(t0_ms=500.0, end_s=TRANSFER_S, socket_drops=0, t_reordering_ms=200.0, outage=(2, 3000.0, 2000.0))
    tl = timeline(records(stall=(2.6, 4.4)), facts, [])
    info = figure(run_figure(tl, stalls(tl), diagnose(tl), tmp_path / "f.png", "a run",
                             [(a, b, f"{leg}'s scheduled outage") for a, b, leg in tl.outages]),
                  ["whole transfer (10.0 s, 0.02 s means)", "", "the first 3 s (10 ms intervals)"], "a run")
    assert info.axes[1].scatters == 1  # the outage's start, its own row


def test_a_reordering_wait_is_put_down_to_the_queue_drops_before_it_not_to_socket_drops():
    # socket drops inside the wait (a release burst) cannot open a PDCP gap
    tl = timeline(records(stall=(2.0, 2.9), queue_drops_at=1.8, expiry_at=2.9), FACTS, [DropSample(2100.0, 60)])
    assert [s.cause for s in stalls(tl)] == ["queue_drops"]
    alone = timeline(records(stall=(2.0, 2.9), expiry_at=2.9), FACTS, [DropSample(2100.0, 60)])
    assert [s.cause for s in stalls(alone)] == ["t_reordering"]


def test_socket_drops_come_first_and_every_other_cause_follows():
    recs = records(stall=(2.0, 2.9), queue_drops_at=1.9)
    # a second stall, after socket drops only, and longer
    for r in recs:
        if 6.0 < r.t_ms / 1e3 <= 7.2:
            recs[recs.index(r)] = r.model_copy(update={"bearers": [Bearer(name="dc", delivered_mbps=0.0, rx=Rx())]})
    tl = timeline(recs, FACTS, [DropSample(5900.0, 407)])
    d = diagnose(tl)
    assert d is not None and d.main.cause == "socket_drops" and [o.cause for o in d.others] == ["queue_drops"]
    assert d.line() == ("diagnosis: 2.1 s lost (21 % of the 10.0 s transfer): 1.2 s stalled after 407 datagrams "
                        "dropped at the client's socket (see --udp-buffer large); 0.9 s stalled after 5 packets dropped "
                        "in the legs' queues (see a larger --queue, or a --split matched to the legs' rates)")


def stalled_twice(first: float, second: float) -> list[Stats]:
    """A stall of ``first`` s from 2.0 s after leg1's queue drops and, where ``second`` is
    not 0, a stall of ``second`` s from 6.0 s after nothing but the socket drops before it."""
    recs = records(stall=(2.0, 2.0 + first), queue_drops_at=1.9)
    for i, r in enumerate(recs):
        if second and 6.0 < r.t_ms / 1e3 <= 6.0 + second + 1e-9:
            recs[i] = r.model_copy(update={"bearers": [Bearer(name="dc", delivered_mbps=0.0, rx=Rx())]})
    return recs


def test_causes_under_the_threshold_each_are_diagnosed_when_together_above_it():
    """4 % after queue drops and 4 % after socket drops stall the transfer 8 %: a diagnosis
    naming both; either alone (4 %) gets none."""
    both = diagnose(timeline(stalled_twice(0.4, 0.4), FACTS, [DropSample(5900.0, 407)]))
    assert both is not None and both.share == pytest.approx(0.08)
    assert {both.main.cause, *(o.cause for o in both.others)} == {"queue_drops", "socket_drops"}
    assert both.line().startswith("diagnosis: 0.8 s lost (8 % of the 10.0 s transfer): 0.4 s stalled after ")
    assert diagnose(timeline(stalled_twice(0.4, 0.0), FACTS, [])) is None
    assert diagnose(timeline(stalled_twice(0.0, 0.4), FACTS, [DropSample(5900.0, 407)])) is None


def test_a_stall_after_no_event_or_long_after_one_is_not_diagnosed():
    assert diagnose(timeline(records(stall=(4.0, 5.0)), FACTS, [])) is None
    far = timeline(records(stall=(4.0, 5.0)), FACTS, [DropSample(4000.0 - 1e3 * (diagnosis.LOOKBACK_S + 0.1), 407)])
    assert [s.cause for s in stalls(far)] == [None] and diagnose(far) is None


def test_short_dips_and_the_time_after_the_last_byte_are_not_stalls():
    tl = timeline(records(stall=(4.0, 4.03)), FACTS, [DropSample(3990.0, 3)])  # 30 ms: under MIN_STALL_S
    assert stalls(tl) == []
    ended = timeline(records(stall=(9.0, 10.0)), RunFacts(end_s=8.9), [DropSample(8950.0, 9)])
    assert stalls(ended) == [] and diagnose(ended) is None


def test_timeline_counts_events_per_interval_from_cumulative_counters():
    tl = timeline(records(queue_drops_at=1.0, expiry_at=2.0), FACTS, [DropSample(500.0, 3)])
    assert [(e.cause, e.where, e.count, e.t_s) for e in tl.events] == [
        ("socket_drops", "", 3, pytest.approx(0.5)), ("queue_drops", "leg1", 5, pytest.approx(1.0)),
        ("t_reordering", "dc", 1, pytest.approx(2.0))]
    assert tl.socket_drops == 407 and tl.socket_drops_timed and not tl.sender_logged
    untimed = timeline(records(), FACTS, None)
    assert untimed.socket_drops == 407 and not untimed.socket_drops_timed


def test_run_facts_from_a_record_and_its_scenario():
    options = get_experiment("throughput").options()
    run = StoredRun(experiment="throughput", scenario=Scenario(t_reordering=None), options=options, ok=True,
                    metrics={"t0_ms": 812.5, "client_udp_drops": 407},
                    flows=(StoredFlow(name="dc", completion_s=8.5, request_wall=1000.0),))
    assert RunFacts.of(run) == RunFacts(812.5, 8.5, 1000.0, 407, None)
    bare = StoredRun(experiment="throughput", scenario=Scenario(), options=options, ok=True)
    assert RunFacts.of(bare) == RunFacts(0.0, None, None, None, 200.0)


def test_socket_drop_samples_round_trip_and_a_torn_line_is_skipped(tmp_path):
    assert socket_drops.read_samples(tmp_path) is None
    socket_drops.append_samples(tmp_path, [DropSample(20.0, 3)])
    socket_drops.append_samples(tmp_path, [DropSample(10.0, 1)])
    with open(tmp_path / socket_drops.DROPS_FILE, "ab") as f:
        f.write(b'{"t_ms": 30')
    assert socket_drops.read_samples(tmp_path) == [DropSample(10.0, 1), DropSample(20.0, 3)]


def test_sender_losses_and_ptos_from_the_server_qlog(tmp_path):
    assert qlog_recovery.sender_events(tmp_path, 1000.0) is None
    events = [{"name": "recovery:packet_lost", "time": 1000_500.0, "data": {}},
              {"name": "recovery:packet_lost", "time": 1000_505.0, "data": {}},
              {"name": "recovery:loss_timer_updated", "time": 1001_200.0,
               "data": {"event_type": "expired", "timer_type": "pto"}},
              {"name": "recovery:loss_timer_updated", "time": 1001_300.0,
               "data": {"event_type": "set", "timer_type": "pto"}}]
    client = {"vantage_point": {"type": "client"}, "events": events}
    server = {"vantage_point": {"type": "server"}, "events": events}
    (tmp_path / "server" / "q").mkdir(parents=True)
    (tmp_path / "server" / "q" / "a.qlog").write_text(json.dumps({"traces": [client, server]}))
    got = qlog_recovery.sender_events(tmp_path, 1000.0)
    assert [(e.kind, e.count, e.t_s) for e in got or []] == [("loss", 2, pytest.approx(0.51)),
                                                           ("pto", 1, pytest.approx(1.21))]


def test_the_figure_shows_the_whole_transfer_its_events_and_its_first_seconds(tmp_path):
    tl = timeline(records(stall=(4.0, 4.8), queue_drops_at=1.0), FACTS, [DropSample(3800.0, 407)], [],
                  [20.0, 20.0])
    found = stalls(tl)
    info = figure(run_figure(tl, found, diagnose(tl), tmp_path / "f.png", "a run"),
                  ["whole transfer (10.0 s, 0.02 s means)", "", "the first 3 s (10 ms intervals)"], "a run")
    whole, strip, first = info.axes
    assert whole.x == pytest.approx((0.01, 9.99)) and [s.label for s in whole.series] == ["leg1", "leg2"]
    assert strip.scatters == 2  # socket drops, leg1's queue drops
    assert first.lines == 2 and first.x == pytest.approx((0.01, 3.01))


def test_a_transfer_shorter_than_the_first_seconds_is_drawn_once_at_every_record(tmp_path):
    """A 2 s transfer: the whole of it at dcemu's 10 ms records, no third panel that
    would repeat it; its events still in the strip."""
    short = RunFacts(t0_ms=0.0, end_s=2.0, socket_drops=None, t_reordering_ms=200.0)
    tl = timeline(records(queue_drops_at=1.0), short, None, [], [20.0, 20.0])
    info = figure(run_figure(tl, stalls(tl), diagnose(tl), tmp_path / "f.png", "a short run"),
                  ["whole transfer (2.0 s, 10 ms intervals)", ""], "a short run")
    whole, strip = info.axes
    assert whole.lines == 2 and whole.x == pytest.approx((0.01, 2.01))
    assert strip.scatters == 1  # leg1's queue drops


def shaped(*slow: tuple[float, float, float]) -> list[Stats]:
    """A 10 s transfer at 40 Mbit/s (20 per leg) but for each (start, end, Mbit/s) in
    ``slow``: a sender that halved its window and grows it back, never stopping."""
    recs = records()
    for i, r in enumerate(recs):
        t = r.t_ms / 1e3
        rate = next((m for a, b, m in slow if a < t - 1e-9 and t <= b + 1e-9), None)
        if rate is not None:
            legs = [leg.model_copy(update={"downlink": leg.downlink.model_copy(update={"out_mbps": rate / 2})})
                    for leg in r.legs]
            recs[i] = r.model_copy(update={"legs": legs, "bearers": [Bearer(name="dc", delivered_mbps=rate, rx=Rx())]})
    return recs


def test_dips_after_socket_drops_are_diagnosed_as_the_rate_they_lost():
    """Half the rate for 2 s after socket drops, no stall: 1 s of the run's rate lost, 10 %."""
    tl = timeline(shaped((3.0, 5.0, 20.0)), FACTS, [DropSample(2950.0, 407)], [], [20.0, 20.0])
    assert stalls(tl) == []
    [d] = diagnosis.dips(tl)
    assert (d.start_s, d.end_s, d.cause) == (pytest.approx(3.0, abs=0.06), pytest.approx(5.0, abs=0.06), "socket_drops")
    assert d.lost_s == pytest.approx(1.0, abs=0.01)
    assert line_of(tl) == ("diagnosis: 1.0 s of the rate lost in dips (10 % of the 10.0 s transfer) after 407 datagrams "
                           "dropped at the client's socket: see --udp-buffer large")
    # a quarter as long costs 2.5 %: no line
    short = timeline(shaped((3.0, 3.5, 20.0)), FACTS, [DropSample(2950.0, 407)], [], [20.0, 20.0])
    assert diagnose(short) is None
    # without the legs' configured rates (a trace, a cell) the run's rate is not known: no dips
    unknown = timeline(shaped((3.0, 5.0, 20.0)), FACTS, [DropSample(2950.0, 407)], [])
    assert diagnosis.dips(unknown) == [] and diagnose(unknown) is None


def test_the_ramp_up_is_no_dip_and_a_dip_soon_after_another_continues_it():
    ramp = timeline(shaped((0.0, 0.4, 10.0)), FACTS, [DropSample(100.0, 3)], [], [20.0, 20.0])
    assert diagnosis.dips(ramp) == []
    # a second dip 0.15 s after the first, long after the drops: the same recovery
    tl = timeline(shaped((3.0, 4.0, 20.0), (4.15, 5.0, 20.0)), FACTS, [DropSample(2950.0, 407)], [], [20.0, 20.0])
    found = diagnosis.dips(tl)
    assert len(found) == 2 and {d.cause for d in found} == {"socket_drops"}
    alone = timeline(shaped((4.15, 5.0, 20.0)), FACTS, [DropSample(2950.0, 407)], [], [20.0, 20.0])
    assert [d.cause for d in diagnosis.dips(alone)] == [None]


def test_the_figure_shades_dips_and_names_them_in_the_legend(tmp_path):
    tl = timeline(shaped((3.0, 5.0, 20.0)), FACTS, [DropSample(2950.0, 407)], [], [20.0, 20.0])
    found = stalls(tl)
    texts: list[str] = []
    import dclab.analysis.run_figure as rf

    save = rf.save_figure

    def capture(fig, path):
        texts.extend(t.get_text() for leg in fig.legends for t in leg.get_texts())
        return save(fig, path)

    rf.save_figure = capture
    try:
        run_figure(tl, found, diagnose(tl), tmp_path / "f.png", "a run", dips=diagnosis.dips(tl, found))
    finally:
        rf.save_figure = save
    assert "1 dip after socket drops (1.00 s of the rate)" in texts
