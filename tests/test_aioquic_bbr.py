"""BBR v1 for aioquic (dclab/endpoints/aioquic/bbr.py).

Synthetic: the controller alone, driven by a small event simulation of one bottleneck
(fixed rate, fixed propagation delay, FIFO queue) with synthetic times, checking the state
machine and the model against the numbers the simulation is built from. Real: aioquic
with ``--cc bbr`` over a veth pair, and through dcemu's default scenario beside ngtcp2's
BBR (needs root).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from aioquic.quic.packet import QuicPacketType
from aioquic.quic.packet_builder import QuicSentPacket
from aioquic.quic.recovery import QuicPacketPacer, QuicPacketRecovery
from aioquic.tls import Epoch
from conftest import SERVER, ServerPool
from measured import check_bound

from dclab.endpoints.aioquic import bbr
from dclab.endpoints.aioquic.bbr import (
    HIGH_GAIN,
    BbrCongestionControl,
    BbrPacketPacer,
    BbrState,
    WindowedMaxFilter,
)

MSS = 1200
RATE = 10e6 / 8  # bottleneck, bytes per second
PROP = 0.100  # propagation RTT, seconds
MIN_RTT = PROP + MSS / RATE  # what an empty queue gives: propagation + one serialization
BDP = RATE * MIN_RTT


def sent_packet(pn: int, t: float, size: int = MSS, epoch: Epoch = Epoch.ONE_RTT) -> QuicSentPacket:
    return QuicSentPacket(epoch=epoch, in_flight=True, is_ack_eliciting=True, is_crypto_packet=False, packet_number=pn,
                          packet_type=QuicPacketType.ONE_RTT, sent_time=t, sent_bytes=size)  # fmt: skip


@dataclass
class Sample:
    t: float
    state: BbrState
    pacing_gain: float
    cwnd: int
    btlbw: float
    rtprop: float
    inflight: int
    pacing_rate: float
    rtprop_stamp: float


@dataclass
class Sim:
    """One flow through one bottleneck: the sender sends while cwnd allows, spaced at the
    controller's pacing rate; the link serializes at ``rate`` behind a FIFO queue of
    ``queue`` packets (None: unlimited), drops what does not fit, and each packet is
    acknowledged on its own after ``prop`` (``prop_after`` = (t, prop2) changes it for
    packets sent from t on). A dropped packet is declared lost when a packet three numbers
    later is acknowledged (RFC 9002's packet threshold). ``app_limit`` = (t, interval): from
    t on, the application hands over one packet every interval s, no more."""

    cc: BbrCongestionControl
    rate: float = RATE
    prop: float = PROP
    queue: int | None = None
    prop_after: tuple[float, float] | None = None
    app_limit: tuple[float, float] | None = None
    trace: list[Sample] = field(default_factory=list)
    losses: list[tuple[float, int]] = field(default_factory=list)  # (time, packet number)
    acked_bytes: int = 0

    def run(self, duration: float, observe: Callable[[float, BbrCongestionControl], None] | None = None) -> None:
        cc, seq, ev = self.cc, itertools.count(), []  # type: ignore[var-annotated]
        link_free, next_send, pn = 0.0, 0.0, 0
        send_pending = False
        in_queue: list[float] = []  # departure times of packets queued or on the link
        dropped: dict[int, QuicSentPacket] = {}

        def push(t: float, kind: str, pkt: QuicSentPacket | None = None) -> None:
            heapq.heappush(ev, (t, next(seq), kind, pkt))

        app_budget = 0

        def try_send(now: float) -> None:
            nonlocal link_free, next_send, pn, send_pending, app_budget
            while cc.bytes_in_flight + MSS <= cc.congestion_window:
                app_limited = self.app_limit is not None and now >= self.app_limit[0]
                if app_limited and app_budget == 0:
                    return
                if now < next_send:
                    if not send_pending:
                        send_pending = True
                        push(next_send, "send")
                    return
                if app_limited:
                    app_budget -= 1
                pkt = sent_packet(pn, now)
                pn += 1
                cc.on_packet_sent(packet=pkt)
                next_send = now + MSS / cc.pacing_rate
                while in_queue and in_queue[0] <= now:
                    in_queue.pop(0)
                if self.queue is not None and len(in_queue) > self.queue:
                    dropped[pkt.packet_number] = pkt
                    continue
                link_free = max(now, link_free) + MSS / self.rate
                in_queue.append(link_free)
                prop = self.prop if self.prop_after is None or now < self.prop_after[0] else self.prop_after[1]
                push(link_free + prop, "ack", pkt)

        if self.app_limit is not None:
            push(self.app_limit[0], "app")
        try_send(0.0)
        while ev:
            t, _, kind, pkt = heapq.heappop(ev)
            if t > duration:
                break
            if kind == "send":
                send_pending = False
            elif kind == "app":
                assert self.app_limit is not None
                app_budget += 1
                push(t + self.app_limit[1], "app")
            else:
                assert pkt is not None
                cc.on_packet_acked(now=t, packet=pkt)
                cc.on_rtt_measurement(now=t, rtt=t - pkt.sent_time)
                self.acked_bytes += pkt.sent_bytes
                lost = [p for n, p in dropped.items() if n <= pkt.packet_number - 3]
                if lost:
                    for p in lost:
                        del dropped[p.packet_number]
                        self.losses.append((t, p.packet_number))
                    cc.on_packets_lost(now=t, packets=lost)
            self.trace.append(Sample(t, cc.state, cc.pacing_gain, cc.congestion_window, cc.btlbw, cc.rtprop, cc.bytes_in_flight,
                                     cc.pacing_rate, cc.rtprop_stamp))  # fmt: skip
            if observe is not None:
                observe(t, cc)
            try_send(t)

    def first(self, state: BbrState) -> Sample:
        return next(s for s in self.trace if s.state == state)

    def spans(self, state: BbrState) -> list[tuple[float, float]]:
        """(start, end) of each stretch of the trace in ``state``."""
        out: list[tuple[float, float]] = []
        start: float | None = None
        for a, b in itertools.pairwise(self.trace):
            if b.state == state and a.state != state:
                start = b.t
            elif a.state == state and b.state != state and start is not None:
                out.append((start, b.t))
                start = None
        return out


def state_sequence(trace: list[Sample]) -> list[BbrState]:
    return [s.state for i, s in enumerate(trace) if i == 0 or trace[i - 1].state != s.state]


# -- synthetic ------------------------------------------------------------------------------


def test_windowed_max_filter_forgets_after_its_window():
    f = WindowedMaxFilter(window=10)
    assert f.update(1, 5.0) == 5.0
    assert f.update(2, 9.0) == 9.0  # a new maximum replaces everything
    for t in range(3, 12):
        assert f.update(t, 4.0) == 9.0  # still within 10 rounds of round 2
    assert f.update(13, 4.0) < 9.0  # round 2 has left the window
    assert f.update(30, 1.0) == 1.0  # nothing left: the new sample is the maximum


@pytest.fixture(scope="module")
def long_run() -> Sim:
    """13 s of one flow at 10 Mbit/s over a 100 ms path, whose propagation delay grows by
    5 ms at t = 2 s: from then on no RTT sample is as low as the one BBR holds."""
    sim = Sim(BbrCongestionControl(max_datagram_size=MSS, seed=7), prop_after=(2.0, PROP + 0.005))
    sim.run(13.0)
    return sim


def test_startup_drain_probe_bw(long_run):
    seq = state_sequence(long_run.trace)
    assert seq[:3] == [BbrState.STARTUP, BbrState.DRAIN, BbrState.PROBE_BW], seq
    startup = [s for s in long_run.trace if s.state == BbrState.STARTUP]
    assert all(s.pacing_gain == pytest.approx(2 / math.log(2)) for s in startup)
    drain = long_run.first(BbrState.DRAIN)
    assert drain.pacing_gain == pytest.approx(math.log(2) / 2)
    # DRAIN ends once the queue STARTUP built is gone: inflight down to about one BDP
    probe_bw = long_run.first(BbrState.PROBE_BW)
    assert probe_bw.inflight <= long_run.cc.inflight(1.0) + MSS
    assert drain.t < 3.0 and probe_bw.t > drain.t


def test_bandwidth_estimate_converges(long_run):
    probe_bw = [s for s in long_run.trace if s.state == BbrState.PROBE_BW]
    assert probe_bw
    for s in probe_bw:
        assert abs(s.btlbw - RATE) <= 0.1 * RATE, f"btlbw {s.btlbw * 8 / 1e6:.2f} Mbit/s at {s.t:.3f} s"
    # and the pacing rate is the gain times that estimate
    assert all(s.pacing_rate == pytest.approx(s.pacing_gain * s.btlbw) for s in probe_bw)


def test_cwnd_is_twice_the_bdp_in_probe_bw(long_run):
    cc = long_run.cc
    assert cc.state == BbrState.PROBE_BW
    # between the first PROBE_BW round and PROBE_RTT (the path is unchanged until 2 s, and
    # the 5 ms more are 5 % of the RTT)
    t0 = long_run.first(BbrState.PROBE_BW).t + 2 * MIN_RTT
    settled = [s for s in long_run.trace if s.state == BbrState.PROBE_BW and t0 <= s.t < 10.0]
    assert settled
    for s in settled:
        assert abs(s.rtprop - MIN_RTT) < 1e-9
        assert abs(s.cwnd - 2 * BDP) <= 0.1 * 2 * BDP, f"cwnd {s.cwnd} vs 2 x BDP {2 * BDP:.0f} at {s.t:.3f} s"
    # cwnd is the target: 2 x the model's BDP + 3 send quanta (2 packets each below 24 Mbit/s)
    last = settled[-1]
    assert last.cwnd == int(2 * last.btlbw * last.rtprop) + 3 * 2 * MSS


def test_gain_cycle_visits_125_and_075(long_run):
    gains = [s.pacing_gain for s in long_run.trace if s.state == BbrState.PROBE_BW]
    assert 1.25 in gains and 0.75 in gains and 1.0 in gains
    # the phases follow the cycle: 1.25 is always followed by 0.75
    changes = [g for i, g in enumerate(gains) if i == 0 or gains[i - 1] != g]
    for a, b in itertools.pairwise(changes):
        if a == 1.25:
            assert b == 0.75
    # a 1.0 phase lasts one RTprop, so eight phases take about 8 RTTs (more for 1.25,
    # which waits until inflight reaches 1.25 x BDP)
    starts = [s.t for i, s in enumerate(long_run.trace) if s.state == BbrState.PROBE_BW and s.pacing_gain == 1.25
              and long_run.trace[i - 1].pacing_gain != 1.25]  # fmt: skip
    periods = [b - a for a, b in itertools.pairwise(starts) if b < 10.0]
    assert periods and all(8 * MIN_RTT <= p < 8 * (MIN_RTT + 0.005) + 0.02 for p in periods), periods


def test_probe_rtt_after_10_s_without_a_lower_rtt(long_run):
    trace = long_run.trace
    spans = long_run.spans(BbrState.PROBE_RTT)
    assert len(spans) == 1, spans
    start, end = spans[0]
    before = [s for s in trace if s.t < start]
    # the min RTT was last confirmed (a sample at or below it) before the delay grew at 2 s
    stamp = before[-1].rtprop_stamp
    assert stamp < 2.0 + MIN_RTT + 0.01 and before[-1].rtprop == pytest.approx(MIN_RTT)
    # PROBE_RTT begins on the first ACK more than 10 s after that, and not before
    assert 10.0 < start - stamp < 10.0 + 0.01
    assert all(s.state != BbrState.PROBE_RTT for s in before)
    # cwnd is 4 packets; once inflight is down to that, it holds for 200 ms and a round
    during = [s for s in trace if start <= s.t < end]
    assert all(s.cwnd <= 4 * MSS for s in during)
    low = next(s.t for s in during if s.inflight <= 4 * MSS)
    assert end - low >= 0.2 and end - low >= MIN_RTT
    assert end - start < 0.2 + 2 * (MIN_RTT + 0.005) + 0.01  # and then it ends
    assert all(s.pacing_gain == 1.0 for s in during)
    # it takes the new, higher RTT, restamps it, and goes back to PROBE_BW with its cwnd back
    after = [s for s in trace if s.t >= end]
    assert after[0].state == BbrState.PROBE_BW and after[0].rtprop_stamp == pytest.approx(end)
    assert after[0].rtprop == pytest.approx(PROP + 0.005 + MSS / RATE, abs=1e-6)
    assert after[0].cwnd >= 2 * BDP * 0.9


def test_random_start_phase_is_seeded_and_never_075():
    first_gains = []
    for seed in range(40):
        cc = BbrCongestionControl(max_datagram_size=MSS, seed=seed)
        cc.filled_pipe = True
        cc._enter_probe_bw(1.0)
        assert cc.cycle_index != 1 and cc.pacing_gain != 0.75
        first_gains.append(cc.cycle_index)
        again = BbrCongestionControl(max_datagram_size=MSS, seed=seed)
        again._enter_probe_bw(1.0)
        assert again.cycle_index == cc.cycle_index  # same seed, same phase
    assert set(first_gains) == {0, 2, 3, 4, 5, 6, 7}


def test_same_seed_same_trajectory():
    a = Sim(BbrCongestionControl(max_datagram_size=MSS, seed=3))
    b = Sim(BbrCongestionControl(max_datagram_size=MSS, seed=3))
    a.run(4.0)
    b.run(4.0)
    assert a.trace == b.trace


def test_loss_recovery_conserves_packets_and_restores_cwnd():
    """A 40-packet queue (a BDP is 105): STARTUP overflows it, the losses start a recovery period (cwnd
    = inflight + delivered, then packet conservation), cwnd is restored when it ends, and
    BBR still finds the bottleneck rate."""
    events: list[tuple[float, bool, bool, int, int]] = []

    def watch(t: float, cc: BbrCongestionControl) -> None:
        events.append((t, cc.in_recovery, cc.packet_conservation, cc.congestion_window, cc.bytes_in_flight))

    sim = Sim(BbrCongestionControl(max_datagram_size=MSS, seed=1), queue=40)
    sim.run(6.0, observe=watch)
    assert sim.losses, "STARTUP overflows the queue"
    assert sim.cc.lost == len(sim.losses) * MSS
    first_loss = sim.losses[0][0]
    rec = [e for e in events if e[0] >= first_loss and e[1]]
    assert rec and any(e[2] for e in rec)
    # during conservation cwnd never drops below what is in flight
    assert all(cwnd >= inflight for _, _, cons, cwnd, inflight in rec if cons)
    assert not sim.cc.in_recovery and sim.cc.state in (BbrState.PROBE_BW, BbrState.PROBE_RTT)
    assert abs(sim.cc.btlbw - RATE) <= 0.1 * RATE
    assert len(sim.cc.sent) * MSS == sim.cc.bytes_in_flight


def test_app_limited_samples_do_not_lower_the_estimate():
    """From 3 s on the application sends one packet every 150 ms (more than an RTT, so
    each leaves from an empty pipe): those samples are marked application limited and,
    being far below the estimate, do not replace it, even once the 10-round window has
    passed; each restart from idle in PROBE_BW paces at the estimate (gain 1)."""
    rounds_at_3s: list[int] = []

    def watch(t: float, cc: BbrCongestionControl) -> None:
        if t < 3.0:
            rounds_at_3s[:] = [cc.round_count]

    sim = Sim(BbrCongestionControl(max_datagram_size=MSS, seed=1), app_limit=(3.0, 0.15))
    sim.run(8.0, observe=watch)
    cc = sim.cc
    assert cc.state == BbrState.PROBE_BW and cc.round_count - rounds_at_3s[0] > 3 * bbr.BTLBW_FILTER_LEN
    assert abs(cc.btlbw - RATE) <= 0.1 * RATE
    assert cc.last_sample is not None and cc.last_sample.is_app_limited
    assert cc.last_sample.delivery_rate is not None and cc.last_sample.delivery_rate < 0.1 * RATE
    assert cc.pacing_rate == pytest.approx(cc.btlbw)
    # the one packet in flight was sent from an empty pipe, marked so
    assert [p.is_app_limited for p in cc.sent.values()] in ([], [True])


def test_per_packet_state_is_keyed_by_space():
    cc = BbrCongestionControl(max_datagram_size=MSS, seed=1)
    # packet number 0 exists in each packet number space
    for i, epoch in enumerate((Epoch.INITIAL, Epoch.HANDSHAKE, Epoch.ONE_RTT)):
        cc.on_packet_sent(packet=sent_packet(0, 0.001 * i, epoch=epoch))
    assert len(cc.sent) == 3 and cc.bytes_in_flight == 3 * MSS
    assert cc.sent[(Epoch.INITIAL, 0)].is_app_limited  # sent from an empty pipe
    cc.on_packet_acked(now=0.05, packet=sent_packet(0, 0.0, epoch=Epoch.INITIAL))
    cc.on_packets_expired(packets=[sent_packet(0, 0.001, epoch=Epoch.HANDSHAKE)])
    cc.on_packets_lost(now=0.06, packets=[sent_packet(0, 0.002)])
    assert cc.sent == {} and cc.bytes_in_flight == 0
    assert cc.delivered == MSS and cc.lost == MSS
    assert cc.min_rtt == pytest.approx(0.05)


def test_no_clock_reads():
    """The model's times are only those aioquic hands it."""
    src = open(bbr.__file__).read()
    assert "import time" not in src and "monotonic" not in src and "datetime" not in src


def test_bbr_recovery_paces_at_bbr_rate():
    def recovery(cc: str) -> QuicPacketRecovery:
        return QuicPacketRecovery(congestion_control_algorithm=cc, initial_rtt=0.1, max_datagram_size=MSS,
                                  peer_completed_address_validation=True, send_probe=lambda: None)  # fmt: skip

    reno = recovery("reno")
    assert type(reno._pacer) is QuicPacketPacer  # others are untouched
    r = recovery("bbr")
    cc = r._cc
    assert isinstance(cc, BbrCongestionControl) and isinstance(r._pacer, BbrPacketPacer) and cc.pacer is r._pacer
    cc.pacing_rate = 1e6
    r._pacer.update_rate(congestion_window=10**7, smoothed_rtt=0.001)  # what recovery passes: cwnd / srtt = 10 GB/s
    assert r._pacer.packet_time == pytest.approx(MSS / 1e6)
    cc.pacing_rate = 2e6
    cc._pace()  # the controller pushes its rate after each ACK
    assert r._pacer.packet_time == pytest.approx(MSS / 2e6)
    # installing the hook again does not wrap twice
    init = QuicPacketRecovery.__init__
    bbr._install_pacer_hook()
    assert QuicPacketRecovery.__init__ is init
    assert not getattr(init.__wrapped__, "_dclab_bbr", False)  # type: ignore[attr-defined]
    assert HIGH_GAIN == pytest.approx(2.885, abs=1e-3)


# -- real -----------------------------------------------------------------------------------


@pytest.mark.root
def test_download_5mb_over_veth(veth_pair, certs, tmp_path):
    from dclab.endpoints.aioquic.adapter import AioquicStack
    from dclab.endpoints.base import ClientSpec, ServerSpec, Workload

    stack, size, port = AioquicStack(), 5_000_000, 4433
    assert "bbr" in stack.ccs
    pool = ServerPool(veth_pair.server, "udp", tmp_path)
    try:
        pool.start(stack.server_command(ServerSpec(port=port, cc="bbr", workdir=tmp_path / "srv", certs=certs, address=SERVER)),
                   port)  # fmt: skip
        spec = ClientSpec(address=SERVER, port=port, workload=Workload.single(size), cc="bbr", workdir=tmp_path / "cli",
                          certs=certs, timeout_s=30)  # fmt: skip
        r = stack.run(spec, ["ip", "netns", "exec", veth_pair.client])
    finally:
        pool.close()
    assert r.ok, r.error
    assert r.bytes == size and r.objects[0].bytes == size
    print(f"aioquic bbr 5 MB over veth: {r.goodput_mbps:.1f} Mbit/s")


def dcemu_download(tmp_path, stack_name: str, size: int):
    from dclab.endpoints import get_stack
    from dclab.endpoints.base import Workload
    from dclab.flowplan import Flow, single_bearer_plan
    from dclab.scenario import Scenario
    from dclab.testbed import Testbed
    from dclab.testbed.hostconfig import host_config_for

    stack = get_stack(stack_name)
    assert "bbr" in stack.ccs
    plan = single_bearer_plan(Scenario(), [Flow("dc", stack_name, "dc", Workload.single(size), "bbr")])
    with Testbed(Scenario(), plan, host_config_for(stack.transport, "default"), tmp_path / stack_name) as tb:
        tb.start_servers()
        r = tb.run_clients(timeout_s=45)["dc"]
        tb.finish()
    assert r.ok and r.bytes == size, f"{stack_name}: {r.error}"
    return r


@pytest.mark.root
@pytest.mark.slow
def test_dcemu_default_scenario_against_ngtcp2_bbr(tmp_path):
    """The BBR goodputs of docs/explanation/stacks.md through dcemu (20 MB, `-s` prints them). Slow: every make
    test runs both stacks with BBR through the same scenario (tests/test_stacks_dcemu.py)."""
    size = 20_000_000
    aq = dcemu_download(tmp_path, "aioquic", size)
    ng = dcemu_download(tmp_path, "ngtcp2", size)
    print(f"dcemu default scenario, 20 MB, bbr: aioquic {aq.goodput_mbps:.2f} Mbit/s, ngtcp2 {ng.goodput_mbps:.2f} Mbit/s")
    check_bound("bbr.aioquic_dcemu_20mb_mbps", aq.goodput_mbps)
    check_bound("bbr.ngtcp2_dcemu_20mb_mbps", ng.goodput_mbps)
