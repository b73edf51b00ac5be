"""aioquic congestion controllers that run mQUIC's engine (docs/mquic-implementation.md, "The controllers").

aioquic creates a connection's controller from a name alone, before any HTTP request
says which download the connection belongs to. So a controller starts *unattached*,
behaving exactly like the NewReno or CUBIC it subclasses, and is attached later with
:meth:`MquicController.attach` (or :meth:`GroupRegistry.attach`): it then joins the
group, takes the engine's initial window IW/N, reports its NFEs (a congestion event, a
delay-based slow-start exit) and the ends of its rounds, and every decision is applied
to all the group's controllers and its record appended to the group's log.
``mquic-bbr`` (:class:`MquicBbr`) wraps our BBR v1 and shares delivery rates instead.
Every controller also counts its packets since attach and leaves cwnd samples in its
group's entry (docs/mquic-implementation.md, "Counters" and "cwnd samples").

Nothing here reads a clock: ``now`` is the time aioquic passes to the controller.
"""

from __future__ import annotations

import json
import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

from aioquic.quic.congestion.base import QuicCongestionControl, QuicRttMonitor, register_congestion_control
from aioquic.quic.congestion.cubic import CubicCongestionControl
from aioquic.quic.congestion.reno import RenoCongestionControl
from aioquic.quic.packet_builder import QuicSentPacket

from ....files import JsonObject
from .. import bbr as _bbr
from ..hystart import HyStart, SlowStartExit
from .engine import ConnId, ConnState, Decision, Group, NfeKind, Params, RateDecision, Record

RENO = "mquic-reno"
CUBIC = "mquic-cubic"
BBR = "mquic-bbr"
MAX_SAMPLES = 20_000  # cwnd samples kept per group; later ones are counted, not kept


@dataclass
class GroupEntry:
    """A group, its attached controllers by connection, its log of decisions and its cwnd
    samples (at most :data:`MAX_SAMPLES`, the first ones; ``samples_dropped`` counts the
    rest)."""

    group_id: str
    group: Group
    controllers: dict[ConnId, MquicMember] = field(default_factory=dict)
    log: list[Record] = field(default_factory=list)
    samples: list[JsonObject] = field(default_factory=list)
    samples_dropped: int = 0
    departed_packets: int = 0  # packets sent by members that left, while they were members
    packets: dict[ConnId, int] = field(default_factory=dict)  # packets of members that left, by connection

    def group_packets(self) -> int:
        """Packets every member sent since it joined, those that left included."""
        return self.departed_packets + sum(c.packets for c in self.controllers.values())

    def sample(self, now: float, conn: ConnId, controller: MquicMember) -> None:
        """A ``{"event": "cwnd", ...}`` line of ``controller``'s state now."""
        if len(self.samples) >= MAX_SAMPLES:
            self.samples_dropped += 1
            return
        self.samples.append({"time": now, "group": self.group_id, "event": "cwnd", "conn": conn,
                             **controller.sample_fields()})  # fmt: skip


class GroupRegistry:
    """The process's groups by id. One instance, :data:`groups`, is shared by all
    connections of a server process (aioquic runs them all on one event loop)."""

    def __init__(self) -> None:
        self._by_id: dict[str, GroupEntry] = {}
        self._by_group: weakref.WeakKeyDictionary[Group, GroupEntry] = weakref.WeakKeyDictionary()

    def get_or_create(self, group_id: str, params: Params, mss: int, iw_bytes: int | None = None) -> Group:
        """The group named ``group_id``, created with ``params``, ``mss`` and ``iw_bytes``
        (None: 10 datagrams) on first use. A later call with other values is refused
        (ValueError)."""
        if not isinstance(group_id, str) or not group_id:
            raise ValueError(f"group_id: must be a non-empty string (got {group_id!r})")
        entry = self._by_id.get(group_id)
        if entry is None:
            group = Group(params, mss=mss, iw_bytes=iw_bytes, name=group_id)
            entry = self._by_id[group_id] = GroupEntry(group_id, group)
            self._by_group[group] = entry
        elif (entry.group.params != params or entry.group.mss != mss
              or entry.group.iw_bytes != (10 * mss if iw_bytes is None else iw_bytes)):  # fmt: skip
            raise ValueError(f"group_id: group {group_id!r} exists with other parameters")
        return entry.group

    def get(self, group_id: str) -> Group | None:
        entry = self._by_id.get(group_id)
        return None if entry is None else entry.group

    def entry(self, group: Group) -> GroupEntry:
        """The registry's entry of ``group``; ValueError if it was not created here."""
        try:
            return self._by_group[group]
        except KeyError:
            raise ValueError(f"group {group.name!r} is not in the registry (use get_or_create)") from None

    def attach(self, group_id: str, conn_id: ConnId, controller: MquicMember) -> None:
        """Attach ``controller`` to group ``group_id`` as connection ``conn_id``."""
        entry = self._by_id.get(group_id)
        if entry is None:
            raise ValueError(f"group_id: no group {group_id!r}")
        controller.attach(entry.group, conn_id)

    def _entry(self, group_id: str) -> GroupEntry:
        entry = self._by_id.get(group_id)
        if entry is None:
            raise ValueError(f"group_id: no group {group_id!r}")
        return entry

    def log(self, group_id: str) -> list[Record]:
        """The group's records, oldest first (the list itself: it grows)."""
        return self._entry(group_id).log

    def samples(self, group_id: str) -> list[JsonObject]:
        """The group's cwnd samples, oldest first (the list itself: it grows)."""
        return self._entry(group_id).samples

    def lines(self, group_id: str) -> list[JsonObject]:
        """The group's records (``Record.to_dict()``) and cwnd samples, ordered by time
        (stable: at equal times a decision's record precedes the samples it caused)."""
        entry = self._entry(group_id)
        return sorted([r.to_dict() for r in entry.log] + entry.samples, key=lambda d: d["time"])

    def jsonl(self, group_id: str) -> str:
        """The group's log of decisions as JSON lines."""
        return "".join(json.dumps(r.to_dict()) + "\n" for r in self.log(group_id))

    def remove(self, group_id: str) -> None:
        """Forget a group; its attached controllers are detached."""
        entry = self._by_id.pop(group_id, None)
        if entry is None:
            return
        for controller in list(entry.controllers.values()):
            controller.detach()
        self._by_group.pop(entry.group, None)

    def clear(self) -> None:
        for group_id in list(self._by_id):
            self.remove(group_id)

    def __contains__(self, group_id: object) -> bool:
        return group_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)


groups = GroupRegistry()


class MquicMember(QuicCongestionControl):
    """What every mQUIC controller shares: attaching to a group, counting the packets sent
    since, and cwnd samples. It comes first in the bases of :class:`MquicReno`,
    :class:`MquicCubic` and :class:`MquicBbr`, so each aioquic callback reaches the wrapped
    controller (``super()``) before mQUIC looks at what it did."""

    def __init__(self, *, max_datagram_size: int) -> None:
        self._mq_init()  # before the wrapped controller's __init__: CUBIC's calls reset()
        super().__init__(max_datagram_size=max_datagram_size)

    def _mq_init(self) -> None:
        self._mq_entry: GroupEntry | None = None
        self._mq_conn: ConnId = -1
        self._mq_packets = 0  # packets sent since attach
        self._mq_last_sent: float | None = None  # sent_time of the latest packet sent
        self._mq_round_marker: float | None = None  # a round ends when a later-sent packet is acked
        self._mq_rtt: float | None = None  # the latest RTT sample (s)
        self._mq_min_rtt = math.inf  # the smallest RTT sample (s), the handshake's included
        self._mq_hystart: HyStart | None = None  # the slow-start exit "hystart" (attach)

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        super().on_packet_sent(packet=packet)  # type: ignore[safe-super]  # a concrete controller follows in the MRO
        if self._mq_entry is not None:
            self._mq_packets += 1
        if packet.sent_time is not None:
            self._mq_last_sent = packet.sent_time
        if self._mq_hystart is not None:
            self._mq_hystart.on_sent(packet.packet_number)

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        self._mq_rtt = rtt
        self._mq_min_rtt = min(self._mq_min_rtt, rtt)
        super().on_rtt_measurement(now=now, rtt=rtt)  # type: ignore[safe-super]  # a concrete controller follows in the MRO

    # -- attachment

    @property
    def group(self) -> Group | None:
        return None if self._mq_entry is None else self._mq_entry.group

    @property
    def conn_id(self) -> ConnId | None:
        return None if self._mq_entry is None else self._mq_conn

    @property
    def attached(self) -> bool:
        return self._mq_entry is not None

    @property
    def packets(self) -> int:
        """Packets sent (in flight, as aioquic reports them) since attach."""
        return self._mq_packets

    def attach(self, group: Group, conn_id: ConnId, ss_exit: SlowStartExit = "aioquic") -> None:
        """Join ``group`` (from :data:`groups`) as ``conn_id``: the window becomes the
        engine's initial window (IW/N; IW with sync "off") and the connection starts over
        as the engine assumes of a connection that joins. ``ss_exit`` "hystart" replaces
        a loss-based controller's delay exit with :class:`HyStart` (BBR has none)."""
        if self._mq_entry is not None:
            raise ValueError(f"controller is already attached (connection {self._mq_conn} of {self._mq_entry.group_id!r})")
        entry = groups.entry(group)
        cwnd = group.join(conn_id)
        entry.controllers[conn_id] = self
        self._mq_entry, self._mq_conn = entry, conn_id
        self._mq_packets = 0
        self._mq_round_marker = self._mq_last_sent
        self._mq_use_exit(ss_exit)
        self._mq_join(cwnd)

    def _mq_use_exit(self, ss_exit: SlowStartExit) -> None:
        """Take the slow-start exit ``ss_exit`` (a controller without one ignores it)."""

    def detach(self) -> None:
        """Leave the group (the byte range is done); from then on a plain controller."""
        entry = self._mq_entry
        if entry is None:
            return
        entry.group.leave(self._mq_conn)
        del entry.controllers[self._mq_conn]
        entry.departed_packets += self._mq_packets
        entry.packets[self._mq_conn] = entry.packets.get(self._mq_conn, 0) + self._mq_packets
        self._mq_entry = None

    def conn_state(self) -> ConnState:
        """The state the engine sees."""
        raise NotImplementedError

    def sample_fields(self) -> JsonObject:
        """The fields of a cwnd sample line after time, group, event and conn."""
        s = self.conn_state()
        return {"cwnd": s.cwnd, "ssthresh": s.ssthresh, "in_slow_start": s.in_slow_start}

    def _mq_join(self, cwnd: int) -> None:
        """Take the initial window ``cwnd`` at attach."""
        raise NotImplementedError

    def _mq_sample(self, now: float) -> None:
        if self._mq_entry is not None:
            self._mq_entry.sample(now, self._mq_conn, self)


class MquicController(MquicMember):
    """The mQUIC part of the loss-based :class:`MquicReno` and :class:`MquicCubic`."""

    _rtt_monitor: QuicRttMonitor
    _congestion_recovery_start_time: float
    _max_datagram_size: int

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        super().on_packet_acked(now=now, packet=packet)  # type: ignore[safe-super]  # a concrete controller follows in the MRO
        if self._mq_hystart is not None:
            self._mq_hystart.on_acked(packet.packet_number)
        self._mq_acked(now, packet)

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        recovery_start, prior = self._congestion_recovery_start_time, self.conn_state()
        super().on_packets_lost(now=now, packets=packets)  # type: ignore[safe-super]  # a concrete controller follows in the MRO
        if self._congestion_recovery_start_time != recovery_start:  # a congestion event
            self._mq_nfe(now, "loss", prior)

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        if self.ssthresh is not None:  # no delay exit to look for (the common case: keep it cheap)
            super().on_rtt_measurement(now=now, rtt=rtt)
            return
        prior = self.conn_state()
        hystart = self._mq_hystart
        if hystart is not None:
            # HyStart decides (aioquic's monitor is _NoDelayExit); with ssthresh set
            # first, the wrapped controller below only records the RTT (CUBIC)
            if hystart.should_exit(rtt, min(self._mq_min_rtt, rtt), self.congestion_window / self._max_datagram_size):
                self.ssthresh = self.congestion_window
        super().on_rtt_measurement(now=now, rtt=rtt)
        if self.ssthresh is not None:  # the delay-based exit
            self._mq_nfe(now, "delay", prior)

    def _mq_join(self, cwnd: int) -> None:
        """In slow start (ssthresh None, delay detector reset)."""
        self._mq_set(ConnState(cwnd, None, True))
        self._mq_restart_exit()

    def _mq_use_exit(self, ss_exit: SlowStartExit) -> None:
        if ss_exit == "hystart":
            self._mq_hystart = HyStart()
            self._rtt_monitor = _NoDelayExit()

    def _mq_restart_exit(self) -> None:
        """The delay detector starts over (its count of RTT increases; HyStart's round and
        found exit), as for a connection's first slow start."""
        self._rtt_monitor._increases = 0
        if self._mq_hystart is not None:
            self._mq_hystart.restart()

    def conn_state(self) -> ConnState:
        """aioquic is in slow start while cwnd < ssthresh."""
        ss = self.ssthresh is None or self.congestion_window < self.ssthresh
        return ConnState(self.congestion_window, self.ssthresh, ss)

    # -- events, after the wrapped controller has reacted

    def _mq_acked(self, now: float, packet: QuicSentPacket) -> None:
        entry = self._mq_entry
        if entry is None or packet.sent_time is None:
            return
        if self._mq_round_marker is None or packet.sent_time > self._mq_round_marker:
            # the packet was sent after the round began: the round is over
            self._mq_round_marker = self._mq_last_sent
            decision = entry.group.on_round(self._mq_conn, now, _states(entry))
            if decision is not None:
                _apply(entry, decision, now)  # samples this connection too
            else:
                self._mq_sample(now)

    def _mq_nfe(self, now: float, kind: NfeKind, prior: ConnState) -> None:
        """Reports an NFE; ``prior`` is the state before the wrapped controller's reaction."""
        entry = self._mq_entry
        if entry is None:
            return
        decision = entry.group.on_nfe(self._mq_conn, now, _states(entry), kind, packets=self._mq_packets,
                                      group_packets=entry.group_packets(), cwnd_before=prior.cwnd,
                                      rtt=self._mq_rtt, prior=prior)  # fmt: skip
        _apply(entry, decision, now)

    # -- applying a decision

    def _mq_set(self, state: ConnState) -> None:
        """Take ``state`` (cwnd, ssthresh). A connection put back in slow start has its
        delay detector's count of RTT increases reset, else it would report an exit again
        on its next sample."""
        back_to_slow_start = state.ssthresh is None and self.ssthresh is not None
        self.congestion_window = state.cwnd
        self.ssthresh = state.ssthresh
        if back_to_slow_start:
            self._mq_restart_exit()
        self._mq_adjust(back_to_slow_start)

    def _mq_adjust(self, back_to_slow_start: bool) -> None:
        """Controller-specific state to fix after cwnd or ssthresh were set."""


class _NoDelayExit(QuicRttMonitor):
    """aioquic's monitor that never reports an increase: with HyStart, the only delay exit
    is HyStart's."""

    def is_rtt_increasing(self, *, now: float, rtt: float) -> bool:
        return False


def _states(entry: GroupEntry) -> dict[ConnId, ConnState]:
    return {c: ctl.conn_state() for c, ctl in entry.controllers.items()}


def _apply(entry: GroupEntry, decision: Decision, now: float) -> None:
    """Sets the listed states, logs the record, and samples the reporting connection and
    every listed one."""
    for c, state in decision.updates.items():
        controller = entry.controllers[c]
        assert isinstance(controller, MquicController)
        if state != controller.conn_state():
            controller._mq_set(state)
    entry.log.append(decision.record)
    for c in dict.fromkeys([decision.record.conn, *decision.updates]):
        if c in entry.controllers:
            entry.sample(now, c, entry.controllers[c])


class MquicReno(MquicController, RenoCongestionControl):
    """aioquic's NewReno with mQUIC; registered as "mquic-reno". Its recovery period is
    left as NewReno keeps it: a connection put back in slow start still does not grow on
    ACKs of packets sent before the loss."""


class MquicCubic(MquicController, CubicCongestionControl):
    """aioquic's CUBIC with mQUIC; registered as "mquic-cubic".

    When put back in slow start, CUBIC's state is that of a first slow start (its next
    delay exit starts an epoch at W_max = cwnd, its next loss sets W_max itself); when its
    cwnd is set in congestion avoidance, a new epoch starts at the next ACK with W_max the
    new cwnd, so that neither the Reno-friendly estimate nor the cubic curve of the old
    epoch undoes the change. An idle reset (2 s) takes IW/N instead of IW."""

    def reset(self) -> None:
        super().reset()
        entry = self._mq_entry
        if entry is not None:
            self.congestion_window = self._W_max = entry.group.initial_cwnd
            self._mq_restart_exit()

    def _mq_adjust(self, back_to_slow_start: bool) -> None:
        if self.ssthresh is None:
            if back_to_slow_start:
                self._first_slow_start = True
                self._starting_congestion_avoidance = False
                self._W_max = self.congestion_window
        elif self.congestion_window >= self.ssthresh and not (self._first_slow_start and not self._starting_congestion_avoidance):
            # in congestion avoidance with an epoch (a pending first exit starts its own)
            self._starting_congestion_avoidance = True
            self._W_max = self.congestion_window


class MquicBbr(MquicMember, _bbr.BbrCongestionControl):
    """Our BBR v1 (``bbr.py``) with mQUIC's rate sharing; registered as "mquic-bbr".

    Attached, it starts at the engine's initial window (IW/N, or IW with sync "off"),
    which also becomes BBR's ``initial_cwnd``. At the start of each of its BBR rounds it
    reports the round that just ended to ``Group.on_rate``: the largest delivery-rate
    sample of that round that BBR's bandwidth filter took (bytes/s, reported in bit/s); a
    round without such a sample reports nothing. A :class:`RateDecision` resets each
    member's bandwidth filter to the given rate and refreshes pacing rate, send quantum
    and target cwnd from it (a cwnd above the new target is lowered at once once the pipe
    is full; below, it grows on ACKs as BBR's own). Each new loss recovery period is
    logged as an NFE (action "none") in every mode: BBR's NFEs are never synchronized, and
    no RTT or loss state is shared."""

    def __init__(self, *, max_datagram_size: int, seed: int | None = None) -> None:
        self._mq_init()
        self._mq_round_max: float | None = None  # the current round's largest filtered sample (bytes/s)
        _bbr.BbrCongestionControl.__init__(self, max_datagram_size=max_datagram_size, seed=seed)

    def conn_state(self) -> ConnState:
        """No ssthresh; "slow start" is STARTUP."""
        return ConnState(self.congestion_window, None, self.state == _bbr.BbrState.STARTUP)

    def sample_fields(self) -> JsonObject:
        fields = super().sample_fields()
        fields.update({"bbr_state": self.state.value, "btlbw_bps": round(self.btlbw * 8),
                       "pacing_rate_bps": round(self.pacing_rate * 8)})  # fmt: skip
        return fields

    def _mq_join(self, cwnd: int) -> None:
        self.congestion_window = self.initial_cwnd = cwnd
        self.target_cwnd = self.inflight(self.cwnd_gain)
        if self.btlbw == 0:  # BBRInitPacingRate with the new initial window
            rtt = self.min_rtt if math.isfinite(self.min_rtt) else _bbr.MIN_RTT_FALLBACK
            self.pacing_rate = self.pacing_gain * cwnd / max(rtt, _bbr.MIN_RTT_FALLBACK)
        self._mq_round_max = None
        self._pace()

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        rounds, btlbw, last = self.round_count, self.btlbw, self.last_sample
        super().on_packet_acked(now=now, packet=packet)
        entry = self._mq_entry
        if entry is None:
            return
        ended: float | None = None
        round_over = self.round_count != rounds
        if round_over:
            ended, self._mq_round_max = self._mq_round_max, None
        rs = self.last_sample if self.last_sample is not last else None
        if rs is not None and rs.delivery_rate is not None and (rs.delivery_rate >= btlbw or not rs.is_app_limited):
            # a sample the bandwidth filter took (_update_btlbw): it belongs to the new round
            self._mq_round_max = max(self._mq_round_max or 0.0, rs.delivery_rate)
        if not round_over:
            return
        decision = None if ended is None else entry.group.on_rate(self._mq_conn, now, ended * 8)
        if decision is not None:
            _apply_rates(entry, decision, now)  # samples this connection too
        else:
            self._mq_sample(now)

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        recovery_start, cwnd = self.recovery_start_time, self.congestion_window
        super().on_packets_lost(now=now, packets=packets)
        entry = self._mq_entry
        if entry is not None and self.recovery_start_time != recovery_start:  # a new recovery period
            entry.log.append(entry.group.note_nfe(self._mq_conn, now, _states(entry), "loss", packets=self._mq_packets,
                                                  group_packets=entry.group_packets(), cwnd_before=cwnd,
                                                  rtt=self._mq_rtt))  # fmt: skip
            self._mq_sample(now)

    def _mq_set_rate(self, rate: float) -> None:
        """The group's rate (bytes/s) becomes the bandwidth estimate."""
        self.btlbw = self.btlbw_filter.reset(self.round_count, rate)
        if not self.filled_pipe:
            # a lowered estimate is not the pipe filling up: compare the next rounds with it
            self.full_bw = min(self.full_bw, self.btlbw)
        if self.btlbw > 0:
            self.pacing_rate = self.pacing_gain * self.btlbw
        self._set_send_quantum()
        self.target_cwnd = self.inflight(self.cwnd_gain)
        if self.filled_pipe and not self.packet_conservation and self.state != _bbr.BbrState.PROBE_RTT:
            self.congestion_window = max(min(self.congestion_window, self.target_cwnd), self.min_pipe_cwnd)
        self._pace()


def _apply_rates(entry: GroupEntry, decision: RateDecision, now: float) -> None:
    """Sets every listed BBR member's bandwidth estimate, logs the record, samples them."""
    for c, rate in decision.rates.items():
        controller = entry.controllers[c]
        assert isinstance(controller, MquicBbr)
        controller._mq_set_rate(rate / 8)
    entry.log.append(decision.record)
    for c in dict.fromkeys([decision.record.conn, *decision.rates]):
        if c in entry.controllers:
            entry.sample(now, c, entry.controllers[c])


register_congestion_control(RENO, MquicReno)
register_congestion_control(CUBIC, MquicCubic)
register_congestion_control(BBR, MquicBbr)
