"""BBR v1 congestion control for aioquic, registered as ``"bbr"``.

Follows draft-cardwell-iccrg-bbr-congestion-control-00 (BBR v1) with the delivery-rate
estimator of draft-cheng-iccrg-delivery-rate-estimation: STARTUP, DRAIN, PROBE_BW (eight
phase pacing-gain cycle) and PROBE_RTT, a windowed max filter of the delivery rate over
ten rounds, a 10 s min-RTT (RTprop) filter, full-pipe detection, cwnd = gain x BDP + three
send quanta, and packet conservation during loss recovery. docs/bbr.md says how it maps
onto aioquic and where it deviates from the draft.

The model reads no clock: every time comes from aioquic's callbacks (a packet's
``sent_time``, the ``now`` of an ACK or a loss), so the whole state machine can be driven
with synthetic times.

Pacing: aioquic's ``QuicPacketPacer`` derives its rate from cwnd / smoothed RTT, which for
BBR would be about 2 x the bottleneck rate. Importing this module wraps
``QuicPacketRecovery.__init__`` once so that a recovery whose controller is BBR gets a
``BbrPacketPacer``, a ``QuicPacketPacer`` that takes its rate from the controller's
``pacing_rate``; recoveries with any other controller are left exactly as they were.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from aioquic.quic.congestion.base import (
    K_INITIAL_WINDOW,
    QuicCongestionControl,
    register_congestion_control,
)
from aioquic.quic.packet_builder import QuicSentPacket
from aioquic.quic.recovery import K_MICRO_SECOND, K_SECOND, QuicPacketPacer, QuicPacketRecovery
from aioquic.tls import Epoch

# -- constants of the draft (section numbers of draft-cardwell-iccrg-bbr-congestion-control-00)

HIGH_GAIN = 2 / math.log(2)  # 2.885: STARTUP pacing and cwnd gain (4.3.2.1)
DRAIN_GAIN = 1 / HIGH_GAIN  # DRAIN pacing gain (4.3.3)
PROBE_BW_CWND_GAIN = 2.0  # 4.3.4
PACING_GAIN_CYCLE = (5 / 4, 3 / 4, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)  # 4.3.4.3
GAIN_CYCLE_LEN = len(PACING_GAIN_CYCLE)
BTLBW_FILTER_LEN = 10  # rounds (4.1.1.3)
RTPROP_FILTER_LEN = 10.0  # seconds (4.1.2.3)
PROBE_RTT_DURATION = 0.2  # seconds (4.3.5)
MIN_PIPE_CWND_PACKETS = 4  # BBRMinPipeCwnd (4.2.3.4)
FULL_BW_THRESH = 1.25  # growth that counts as the pipe still filling (4.3.2.2)
FULL_BW_COUNT = 3  # rounds without that growth: the pipe is full
MIN_RTT_FALLBACK = 0.001  # nominal RTT for the initial pacing rate before any sample (4.2.1)
# send quantum thresholds (4.2.2), in bytes per second
QUANTUM_1_PACKET_BELOW = 1.2e6 / 8
QUANTUM_2_PACKETS_BELOW = 24e6 / 8
QUANTUM_MAX_BYTES = 64 * 1024
QUANTUM_INTERVAL = 0.001  # send quantum = 1 ms of pacing above 24 Mbit/s

DEFAULT_SEED = 0x42B
_instances = itertools.count()  # each controller of a process gets its own seed, in order


class BbrState(Enum):
    STARTUP = "startup"
    DRAIN = "drain"
    PROBE_BW = "probe_bw"
    PROBE_RTT = "probe_rtt"


class WindowedMaxFilter:
    """Running maximum over a window of ``window`` time units (here: rounds), keeping the
    best, second best and third best samples of successive sub-windows (Kathleen Nichols'
    algorithm, as Linux's lib/win_minmax.c)."""

    def __init__(self, window: int) -> None:
        self.window = window
        self._s: list[tuple[int, float]] = [(0, 0.0)] * 3  # (time, value), best first

    def reset(self, time: int, value: float) -> float:
        self._s = [(time, value)] * 3
        return value

    def get(self) -> float:
        return self._s[0][1]

    def update(self, time: int, value: float) -> float:
        s = self._s
        if value >= s[0][1] or time - s[2][0] > self.window:
            return self.reset(time, value)  # a new best, or nothing left in the window
        if value >= s[1][1]:
            s[1] = s[2] = (time, value)
        elif value >= s[2][1]:
            s[2] = (time, value)
        # age the sub-window samples
        dt = time - s[0][0]
        if dt > self.window:
            s[0], s[1], s[2] = s[1], s[2], (time, value)
            if time - s[0][0] > self.window:
                s[0], s[1], s[2] = s[1], s[2], (time, value)
        elif s[1][0] == s[0][0] and dt > self.window / 4:
            s[1] = s[2] = (time, value)
        elif s[2][0] == s[1][0] and dt > self.window / 2:
            s[2] = (time, value)
        return s[0][1]


@dataclass(slots=True)
class SentState:
    """Delivery-rate state of one packet in flight, taken when it was sent."""

    delivered: int  # C.delivered when sent (bytes)
    delivered_time: float  # C.delivered_time when sent
    first_sent_time: float  # C.first_sent_time when sent
    is_app_limited: bool
    sent_time: float
    size: int


@dataclass(slots=True)
class RateSample:
    """The rate sample of one acknowledged packet (delivery-rate estimation draft)."""

    delivered: int  # bytes delivered over the interval
    interval: float  # max(send_elapsed, ack_elapsed)
    delivery_rate: float | None  # bytes per second, None when the sample is invalid
    prior_delivered: int
    is_app_limited: bool
    rtt: float


class BbrCongestionControl(QuicCongestionControl):
    """BBR v1. Per-packet delivery state lives in ``self.sent``, keyed by (epoch,
    packet number) since each packet number space starts from 0; every packet handed to
    ``on_packet_sent`` leaves it again through exactly one of acked, lost or expired.

    aioquic reports one acknowledged packet at a time, with no call that ends an ACK
    frame, so each acknowledged packet is processed as its own ACK (rate sample, model
    update, control update); docs/bbr.md explains why that matches per-ACK processing.
    """

    def __init__(self, *, max_datagram_size: int, seed: int | None = None) -> None:
        super().__init__(max_datagram_size=max_datagram_size)
        self.mss = max_datagram_size
        self.initial_cwnd = K_INITIAL_WINDOW * max_datagram_size
        self.min_pipe_cwnd = MIN_PIPE_CWND_PACKETS * max_datagram_size
        self.seed = DEFAULT_SEED + next(_instances) if seed is None else seed
        self._rng = random.Random(self.seed)
        self.pacer: BbrPacketPacer | None = None  # set by BbrPacketPacer

        # per-packet and connection delivery state (delivery-rate estimation)
        self.sent: dict[tuple[Epoch, int], SentState] = {}
        self.delivered = 0  # C.delivered, bytes
        self.delivered_time = 0.0
        self.first_sent_time = 0.0
        self.app_limited = 0  # C.app_limited: 0, or the delivered mark ending the bubble
        self.lost = 0  # bytes declared lost, for the record
        self.min_rtt = math.inf  # lowest RTT ever seen (the transport's min_rtt)
        self.last_sample: RateSample | None = None

        # model
        self.btlbw_filter = WindowedMaxFilter(BTLBW_FILTER_LEN)
        self.btlbw = 0.0  # bytes per second
        self.rtprop = math.inf
        self.rtprop_stamp = 0.0
        self.rtprop_expired = False
        self._rtprop_stamped = False  # rtprop_stamp is "Now()" at init: the first event's time

        # rounds
        self.next_round_delivered = 0
        self.round_start = False
        self.round_count = 0

        # full pipe
        self.filled_pipe = False
        self.full_bw = 0.0
        self.full_bw_count = 0

        # state machine and control parameters
        self.state = BbrState.STARTUP
        self.pacing_gain = HIGH_GAIN
        self.cwnd_gain = HIGH_GAIN
        self.cycle_index = 0
        self.cycle_stamp = 0.0
        self.probe_rtt_done_stamp: float | None = None
        self.probe_rtt_round_done = False
        self.idle_restart = False
        self.prior_cwnd = 0
        self.target_cwnd = self.initial_cwnd
        self.pacing_rate = HIGH_GAIN * self.initial_cwnd / MIN_RTT_FALLBACK
        self._pacing_rate_from_rtt = False
        self.send_quantum = 2 * max_datagram_size

        # loss recovery (packet conservation)
        self.in_recovery = False
        self.recovery_start_time = -math.inf
        self.packet_conservation = False
        self._conservation_until = 0  # conservation ends when a packet sent after this delivered mark is acked
        self._ack_now: float | None = None
        self._acked_at_now = 0  # bytes acknowledged at _ack_now (the current ACK)

        self._enter_startup()

    # -- aioquic callbacks ----------------------------------------------------------------

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        now = packet.sent_time if packet.sent_time is not None else self.delivered_time
        self._stamp_rtprop(now)
        if self.bytes_in_flight == 0:
            # Nothing in flight: the rate sample's intervals start here. BBR's cwnd is at
            # least 4 packets, so an empty pipe means the sender had nothing to send: mark
            # the connection application limited until this bubble is acknowledged.
            self.first_sent_time = self.delivered_time = now
            self.app_limited = max(self.delivered + self.bytes_in_flight, 1)
            self._handle_restart_from_idle()
        self.sent[(packet.epoch, packet.packet_number)] = SentState(
            delivered=self.delivered,
            delivered_time=self.delivered_time,
            first_sent_time=self.first_sent_time,
            is_app_limited=self.app_limited != 0,
            sent_time=now,
            size=packet.sent_bytes,
        )
        self.bytes_in_flight += packet.sent_bytes

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        prior_inflight = self.bytes_in_flight
        self.bytes_in_flight -= packet.sent_bytes
        if self._ack_now != now:
            self._ack_now, self._acked_at_now = now, 0
        self._acked_at_now += packet.sent_bytes
        p = self.sent.pop((packet.epoch, packet.packet_number), None)
        if p is None:  # not seen when sent: count it out of flight and learn nothing
            return
        self._stamp_rtprop(now)
        rtt = now - p.sent_time
        if rtt < self.min_rtt:
            self.min_rtt = rtt
        if not self._pacing_rate_from_rtt:
            # BBRInitPacingRate with the first RTT: InitialCwnd / SRTT x high gain
            self._pacing_rate_from_rtt = True
            if self.btlbw == 0:
                self.pacing_rate = self.pacing_gain * self.initial_cwnd / max(rtt, MIN_RTT_FALLBACK)

        rs = self._rate_sample(now, p, rtt)
        self.last_sample = rs

        # recovery bookkeeping
        if self.in_recovery and p.sent_time > self.recovery_start_time:
            self.in_recovery = False
            self.packet_conservation = False
            self._restore_cwnd()
        if self.packet_conservation and p.delivered >= self._conservation_until:
            self.packet_conservation = False  # one round in recovery has passed

        # BBRUpdateModelAndState
        self._update_btlbw(p, rs)
        self._check_cycle_phase(now, prior_inflight, lost=False)
        self._check_full_pipe(rs)
        self._check_drain(now)
        self._update_rtprop(now, rtt)
        self._check_probe_rtt(now)
        # BBRUpdateControlParameters
        self._set_pacing_rate(self.pacing_gain)
        self._set_send_quantum()
        self._set_cwnd(packet.sent_bytes)
        self._pace()

    def on_packets_expired(self, *, packets: Iterable[QuicSentPacket]) -> None:
        for packet in packets:
            self.bytes_in_flight -= packet.sent_bytes
            self.sent.pop((packet.epoch, packet.packet_number), None)

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        lost = 0
        largest_sent_time = -math.inf
        for packet in packets:
            self.bytes_in_flight -= packet.sent_bytes
            p = self.sent.pop((packet.epoch, packet.packet_number), None)
            lost += packet.sent_bytes
            sent_time = p.sent_time if p is not None else packet.sent_time
            if sent_time is not None and sent_time > largest_sent_time:
                largest_sent_time = sent_time
        if not lost:
            return
        self.lost += lost
        if largest_sent_time > self.recovery_start_time:
            # A loss of a packet sent after the last recovery period started: a new period
            # (RFC 9002 section 7.3.2), as aioquic's Reno and CUBIC count them.
            # Upon entering recovery: save cwnd, cwnd = inflight + delivered (at least one
            # packet), packet conservation for one round.
            self.prior_cwnd = self._save_cwnd()
            self.in_recovery = True
            self.recovery_start_time = now
            delivered_now = self._acked_at_now if self._ack_now == now else 0
            self.congestion_window = self.bytes_in_flight + max(delivered_now, self.mss)
            self.packet_conservation = True
            self._conservation_until = self.delivered
        else:
            # BBRModulateCwndForRecovery: later losses of the same period take their bytes off.
            self.congestion_window = max(self.congestion_window - lost, self.mss)
        if self.state == BbrState.PROBE_RTT:
            self.congestion_window = min(self.congestion_window, self.min_pipe_cwnd)
        self._check_cycle_phase(now, self.bytes_in_flight + lost, lost=True)
        self._pace()

    def on_persistent_congestion(self) -> None:
        # Like a retransmission timeout (draft 4.2.3.4): remember cwnd, restart from one
        # packet; it grows back with ACKs and is restored when recovery ends.
        self.prior_cwnd = self._save_cwnd()
        self.in_recovery = True
        self.packet_conservation = False
        self.congestion_window = self.mss

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        # BBR takes its RTT samples per acknowledged packet in on_packet_acked (now -
        # sent_time); aioquic's per-frame sample adds nothing.
        pass

    def get_log_data(self) -> dict[str, Any]:
        data = super().get_log_data()
        data.update(
            {
                "bbr_state": self.state.value,
                "btlbw_bps": int(self.btlbw * 8),
                "rtprop": None if math.isinf(self.rtprop) else self.rtprop,
                "pacing_rate_bps": int(self.pacing_rate * 8),
                "pacing_gain": self.pacing_gain,
                "cwnd_gain": self.cwnd_gain,
            }
        )
        return data

    # -- delivery rate ----------------------------------------------------------------------

    def _rate_sample(self, now: float, p: SentState, rtt: float) -> RateSample:
        """UpdateRateSample and GenerateRateSample for one acknowledged packet."""
        self.delivered += p.size
        self.delivered_time = now
        send_elapsed = p.sent_time - p.first_sent_time
        ack_elapsed = self.delivered_time - p.delivered_time
        self.first_sent_time = p.sent_time
        if self.app_limited and self.delivered > self.app_limited:
            self.app_limited = 0  # the bubble is acknowledged and gone
        interval = max(send_elapsed, ack_elapsed)
        delivered = self.delivered - p.delivered
        rate: float | None = None
        # An interval below the min RTT would overestimate (ACK compression): no sample.
        if interval >= self.min_rtt and interval > 0:
            rate = delivered / interval
        return RateSample(
            delivered=delivered,
            interval=interval,
            delivery_rate=rate,
            prior_delivered=p.delivered,
            is_app_limited=p.is_app_limited,
            rtt=rtt,
        )

    def mark_app_limited(self) -> None:
        """For a caller that knows the application has nothing more to send right now."""
        self.app_limited = max(self.delivered + self.bytes_in_flight, 1)

    # -- model ---------------------------------------------------------------------------

    def _stamp_rtprop(self, now: float) -> None:
        if not self._rtprop_stamped:
            self._rtprop_stamped = True
            self.rtprop_stamp = now

    def _update_round(self, p: SentState) -> None:
        if p.delivered >= self.next_round_delivered:
            self.next_round_delivered = self.delivered
            self.round_count += 1
            self.round_start = True
        else:
            self.round_start = False

    def _update_btlbw(self, p: SentState, rs: RateSample) -> None:
        self._update_round(p)
        if rs.delivery_rate is None:
            return
        if rs.delivery_rate >= self.btlbw or not rs.is_app_limited:
            self.btlbw = self.btlbw_filter.update(self.round_count, rs.delivery_rate)

    def _update_rtprop(self, now: float, rtt: float) -> None:
        self.rtprop_expired = now > self.rtprop_stamp + RTPROP_FILTER_LEN
        if rtt >= 0 and (rtt <= self.rtprop or self.rtprop_expired):
            self.rtprop = rtt
            self.rtprop_stamp = now

    def inflight(self, gain: float) -> int:
        """BBRInflight: gain x BDP plus three send quanta (ACK aggregation allowance)."""
        if math.isinf(self.rtprop):
            return self.initial_cwnd
        return int(gain * self.btlbw * self.rtprop) + 3 * self.send_quantum

    # -- states --------------------------------------------------------------------------

    def _enter_startup(self) -> None:
        self.state = BbrState.STARTUP
        self.pacing_gain = HIGH_GAIN
        self.cwnd_gain = HIGH_GAIN

    def _check_full_pipe(self, rs: RateSample) -> None:
        if self.filled_pipe or not self.round_start or rs.is_app_limited:
            return
        if self.btlbw >= self.full_bw * FULL_BW_THRESH:
            self.full_bw = self.btlbw
            self.full_bw_count = 0
            return
        self.full_bw_count += 1
        if self.full_bw_count >= FULL_BW_COUNT:
            self.filled_pipe = True

    def _check_drain(self, now: float) -> None:
        if self.state == BbrState.STARTUP and self.filled_pipe:
            self.state = BbrState.DRAIN
            self.pacing_gain = DRAIN_GAIN
            self.cwnd_gain = HIGH_GAIN
        if self.state == BbrState.DRAIN and self.bytes_in_flight <= self.inflight(1.0):
            self._enter_probe_bw(now)

    def _enter_probe_bw(self, now: float) -> None:
        self.state = BbrState.PROBE_BW
        self.pacing_gain = 1.0
        self.cwnd_gain = PROBE_BW_CWND_GAIN
        # a random phase other than 0.75 (index 1): index 7 - [0, 6] is 1..7, advanced to 2..7, 0
        self.cycle_index = GAIN_CYCLE_LEN - 1 - self._rng.randint(0, GAIN_CYCLE_LEN - 2)
        self._advance_cycle_phase(now)

    def _advance_cycle_phase(self, now: float) -> None:
        self.cycle_stamp = now
        self.cycle_index = (self.cycle_index + 1) % GAIN_CYCLE_LEN
        self.pacing_gain = PACING_GAIN_CYCLE[self.cycle_index]

    def _check_cycle_phase(self, now: float, prior_inflight: int, lost: bool) -> None:
        if self.state == BbrState.PROBE_BW and self._is_next_cycle_phase(now, prior_inflight, lost):
            self._advance_cycle_phase(now)

    def _is_next_cycle_phase(self, now: float, prior_inflight: int, lost: bool) -> bool:
        is_full_length = now - self.cycle_stamp > self.rtprop
        if self.pacing_gain == 1.0:
            return is_full_length
        if self.pacing_gain > 1.0:
            return is_full_length and (lost or prior_inflight >= self.inflight(self.pacing_gain))
        return is_full_length or prior_inflight <= self.inflight(1.0)

    def _handle_restart_from_idle(self) -> None:
        if self.app_limited:
            self.idle_restart = True
            if self.state == BbrState.PROBE_BW:
                self._set_pacing_rate(1.0)
                self._pace()

    def _check_probe_rtt(self, now: float) -> None:
        if self.state != BbrState.PROBE_RTT and self.rtprop_expired and not self.idle_restart:
            self.state = BbrState.PROBE_RTT
            self.pacing_gain = 1.0
            self.cwnd_gain = 1.0
            self.prior_cwnd = self._save_cwnd()  # after entering, as the draft orders it
            self.probe_rtt_done_stamp = None
        if self.state == BbrState.PROBE_RTT:
            self._handle_probe_rtt(now)
        self.idle_restart = False

    def _handle_probe_rtt(self, now: float) -> None:
        # ignore low rate samples during PROBE_RTT
        self.app_limited = max(self.delivered + self.bytes_in_flight, 1)
        if self.probe_rtt_done_stamp is None and self.bytes_in_flight <= self.min_pipe_cwnd:
            self.probe_rtt_done_stamp = now + PROBE_RTT_DURATION
            self.probe_rtt_round_done = False
            self.next_round_delivered = self.delivered
        elif self.probe_rtt_done_stamp is not None:
            if self.round_start:
                self.probe_rtt_round_done = True
            if self.probe_rtt_round_done and now > self.probe_rtt_done_stamp:
                self.rtprop_stamp = now
                self._restore_cwnd()
                if self.filled_pipe:
                    self._enter_probe_bw(now)
                else:
                    self._enter_startup()

    # -- control parameters --------------------------------------------------------------

    def _set_pacing_rate(self, gain: float) -> None:
        rate = gain * self.btlbw
        if self.filled_pipe or rate > self.pacing_rate:
            self.pacing_rate = rate

    def _set_send_quantum(self) -> None:
        if self.pacing_rate < QUANTUM_1_PACKET_BELOW:
            self.send_quantum = self.mss
        elif self.pacing_rate < QUANTUM_2_PACKETS_BELOW:
            self.send_quantum = 2 * self.mss
        else:
            self.send_quantum = min(int(self.pacing_rate * QUANTUM_INTERVAL), QUANTUM_MAX_BYTES)

    def _save_cwnd(self) -> int:
        if not self.in_recovery and self.state != BbrState.PROBE_RTT:
            return self.congestion_window
        return max(self.prior_cwnd, self.congestion_window)

    def _restore_cwnd(self) -> None:
        self.congestion_window = max(self.congestion_window, self.prior_cwnd)

    def _set_cwnd(self, acked: int) -> None:
        self.target_cwnd = self.inflight(self.cwnd_gain)
        cwnd = self.congestion_window
        if self.packet_conservation:
            cwnd = max(cwnd, self.bytes_in_flight + acked)
        else:
            if self.filled_pipe:
                cwnd = min(cwnd + acked, self.target_cwnd)
            elif cwnd < self.target_cwnd or self.delivered < self.initial_cwnd:
                cwnd = cwnd + acked
            cwnd = max(cwnd, self.min_pipe_cwnd)
        if self.state == BbrState.PROBE_RTT:
            cwnd = min(cwnd, self.min_pipe_cwnd)
        self.congestion_window = cwnd

    def _pace(self) -> None:
        if self.pacer is not None:
            self.pacer.refresh()


class BbrPacketPacer(QuicPacketPacer):
    """aioquic's token-bucket pacer with BBR's pacing rate instead of cwnd / SRTT.

    aioquic calls ``update_rate(congestion_window, smoothed_rtt)`` after each RTT sample
    and each loss; the controller also calls ``refresh`` after each ACK it processes. Both
    set the packet interval from ``cc.pacing_rate``. The burst allowance is aioquic's own
    (a quarter of cwnd, between 2 and 16 packets): the event loop wakes at best once a
    millisecond, and a smaller bucket would cap the rate below the pacing rate.
    """

    def __init__(self, *, max_datagram_size: int, cc: BbrCongestionControl) -> None:
        super().__init__(max_datagram_size=max_datagram_size)
        self.cc = cc
        cc.pacer = self
        self.refresh()

    def update_rate(self, congestion_window: int, smoothed_rtt: float) -> None:
        self.refresh()

    def refresh(self) -> None:
        mss = self._max_datagram_size
        rate = max(self.cc.pacing_rate, 1.0)
        self.packet_time = max(K_MICRO_SECOND, min(mss / rate, K_SECOND))
        self.bucket_max = max(2 * mss, min(self.cc.congestion_window // 4, 16 * mss)) / rate
        if self.bucket_time > self.bucket_max:
            self.bucket_time = self.bucket_max


def _install_pacer_hook() -> None:
    """Wrap QuicPacketRecovery.__init__ (once per process) so that a recovery created
    with the BBR controller paces at BBR's rate."""
    original = QuicPacketRecovery.__init__
    if getattr(original, "_dclab_bbr", False):
        return

    def __init__(self: QuicPacketRecovery, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        cc = self._cc
        if isinstance(cc, BbrCongestionControl):
            self._pacer = BbrPacketPacer(max_datagram_size=cc.mss, cc=cc)

    __init__._dclab_bbr = True  # type: ignore[attr-defined]
    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(QuicPacketRecovery, "__init__", __init__)  # noqa: B010 - mypy forbids assigning a method


_install_pacer_hook()
register_congestion_control("bbr", BbrCongestionControl)
