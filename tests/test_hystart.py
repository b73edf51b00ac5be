"""The Chromium-style HyStart delay exit (dclab/endpoints/aioquic/hystart.py): its
thresholds, rounds of eight samples, the low-window rule and restart; and the mQUIC
controllers taking it instead of aioquic's RTT monitor."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aioquic.quic.congestion.reno import RenoCongestionControl

from dclab.endpoints.aioquic import hystart
from dclab.endpoints.aioquic.hystart import HyStart, threshold
from dclab.endpoints.aioquic.mquic.controllers import MquicCubic, MquicReno, groups
from dclab.endpoints.aioquic.mquic.engine import Params

MIN = 0.046  # s: the domestic preset's RTT; min_rtt / 8 = 5.75 ms


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    groups.clear()
    yield
    groups.clear()


def test_threshold_is_an_eighth_of_min_rtt_clamped_to_4_and_16_ms() -> None:
    assert threshold(0.010) == pytest.approx(0.004)  # 1.25 ms: raised to 4
    assert threshold(0.064) == pytest.approx(0.008)
    assert threshold(MIN) == pytest.approx(0.00575)
    assert threshold(0.5) == pytest.approx(0.016)  # 62.5 ms: capped at 16


def feed(h: HyStart, rtts: list[float], cwnd: float = 20) -> list[bool]:
    """A window of packets sent, then one sample per ACK of them in order: one round."""
    h.on_sent(len(rtts))
    out = []
    for k, rtt in enumerate(rtts):
        out.append(h.should_exit(rtt, MIN, cwnd))
        h.on_acked(k)
    return out


def test_exit_at_the_eighth_sample_of_a_round_above_the_threshold() -> None:
    h = HyStart()
    above = MIN + threshold(MIN) + 0.0005
    assert feed(h, [above] * 8) == [False] * 7 + [True]
    below = HyStart()
    assert feed(below, [MIN + threshold(MIN) - 0.0005] * 16) == [False] * 16
    # one low sample among a round's first eight keeps the round's minimum low
    mixed = HyStart()
    assert not any(feed(mixed, [above] * 7 + [MIN] + [above] * 4))


def test_only_a_rounds_first_eight_samples_count_and_the_next_round_starts_over() -> None:
    h = HyStart()
    h.on_sent(99)  # the round started by the first sample ends at the ACK of a packet after 99
    low, high = MIN, MIN + 0.02
    assert not any(h.should_exit(rtt, MIN, 20) for rtt in [low] * 8 + [high] * 20)  # samples 9+ ignored
    h.on_acked(100)  # a packet sent after the round began: its sample still counts in it
    assert not h.should_exit(high, MIN, 20)
    assert [h.should_exit(high, MIN, 20) for _ in range(8)] == [False] * 7 + [True]


def test_no_exit_below_sixteen_packets_but_the_finding_is_kept_until_restart() -> None:
    h = HyStart()
    high = MIN + 0.02
    assert feed(h, [high] * 8, cwnd=hystart.LOW_WINDOW - 1) == [False] * 8
    assert h.found
    assert h.should_exit(high, MIN, hystart.LOW_WINDOW)  # found: exits once the window allows
    h.restart()
    assert not h.found and not h.should_exit(high, MIN, 100)


def attached(kind: type, ss_exit: str, n: int = 3) -> list[MquicReno]:
    group = groups.get_or_create("g", Params.for_controller("reno" if kind is MquicReno else "cubic", n=n), 1200)
    out = []
    for c in range(n):
        cc = kind(max_datagram_size=1200)
        cc.attach(group, c, ss_exit)
        cc.congestion_window = 30_000  # 25 packets: above the low window
        out.append(cc)
    return out


@pytest.mark.parametrize("kind", [MquicReno, MquicCubic])
def test_controllers_take_hystart_instead_of_aioquics_monitor(kind: type) -> None:
    # aioquic's monitor exits after 5 samples 25 % up (1 ms apart); HyStart looks at a
    # round's first 8: 5 low then 3 high keeps it in slow start
    rtts = [MIN] * 5 + [2 * MIN] * 10
    plain = RenoCongestionControl(max_datagram_size=1200)
    for k, rtt in enumerate(rtts):
        plain.on_rtt_measurement(now=1 + k * 0.002, rtt=rtt)
    assert plain.ssthresh is not None  # aioquic's own monitor exits on this series
    for ss_exit, exits in (("aioquic", True), ("hystart", False)):
        groups.clear()
        cc = attached(kind, ss_exit)[0]
        for k, rtt in enumerate(rtts):
            cc.on_rtt_measurement(now=1 + k * 0.002, rtt=rtt)
        assert any(r.kind == "delay" for r in groups.log("g")) is exits, ss_exit
    # with HyStart: a new round of 8 high samples is an exit, reported as a delay NFE
    groups.clear()
    cc = attached(kind, "hystart")[0]
    for k in range(8):  # the first round, low: min_rtt
        cc.on_rtt_measurement(now=1 + k * 0.002, rtt=MIN)
    assert not groups.log("g")
    from aioquic.quic.packet import QuicPacketType
    from aioquic.quic.packet_builder import QuicSentPacket
    from aioquic.tls import Epoch

    p = QuicSentPacket(epoch=Epoch.ONE_RTT, in_flight=True, is_ack_eliciting=True, is_crypto_packet=False,
                       packet_number=5, packet_type=QuicPacketType.ONE_RTT, sent_time=1.1, sent_bytes=1200)  # fmt: skip
    cc.on_packet_sent(packet=p)
    cc.on_packet_acked(now=1.15, packet=p)  # ends the round (sent after it began)
    cc.on_rtt_measurement(now=1.15, rtt=MIN)  # the ending ACK's sample: still the old round
    for k in range(8):
        cc.on_rtt_measurement(now=1.2 + k * 0.002, rtt=MIN + 0.01)
    nfes = [r for r in groups.log("g") if r.event == "nfe"]
    assert [(r.kind, r.conn, r.action) for r in nfes] == [("delay", 0, "sync")]
    assert nfes[0].cwnd_before == 31_200  # 30000 and the ACK's packet in slow start
