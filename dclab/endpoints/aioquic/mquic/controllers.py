"""aioquic congestion controllers that run mQUIC's engine (docs/mquic.md, "The controllers").

aioquic creates a connection's controller from a name alone, before any HTTP request
says which download the connection belongs to. So a controller starts *unattached*,
behaving exactly like the NewReno or CUBIC it subclasses, and is attached later with
:meth:`MquicController.attach` (or :meth:`GroupRegistry.attach`): it then joins the
group, takes the engine's initial window IW/N, reports its NFEs (a congestion event, a
delay-based slow-start exit) and the ends of its rounds, and every decision is applied
to all the group's controllers and its record appended to the group's log.

Nothing here reads a clock: ``now`` is the time aioquic passes to the controller.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

from aioquic.quic.congestion.base import QuicCongestionControl, QuicRttMonitor, register_congestion_control
from aioquic.quic.congestion.cubic import CubicCongestionControl
from aioquic.quic.congestion.reno import RenoCongestionControl
from aioquic.quic.packet_builder import QuicSentPacket

from .engine import ConnId, ConnState, Decision, Group, NfeKind, Params, Record

RENO = "mquic-reno"
CUBIC = "mquic-cubic"


@dataclass
class GroupEntry:
    """A group, its attached controllers by connection, and its log of decisions."""

    group_id: str
    group: Group
    controllers: dict[ConnId, MquicController] = field(default_factory=dict)
    log: list[Record] = field(default_factory=list)


class GroupRegistry:
    """The process's groups by id. One instance, :data:`groups`, is shared by all
    connections of a server process (aioquic runs them all on one event loop)."""

    def __init__(self) -> None:
        self._by_id: dict[str, GroupEntry] = {}
        self._by_group: weakref.WeakKeyDictionary[Group, GroupEntry] = weakref.WeakKeyDictionary()

    def get_or_create(self, group_id: str, params: Params, mss: int) -> Group:
        """The group named ``group_id``, created with ``params`` and ``mss`` on first use.
        A later call with other parameters is refused (ValueError)."""
        if not isinstance(group_id, str) or not group_id:
            raise ValueError(f"group_id: must be a non-empty string (got {group_id!r})")
        entry = self._by_id.get(group_id)
        if entry is None:
            group = Group(params, mss=mss, name=group_id)
            entry = self._by_id[group_id] = GroupEntry(group_id, group)
            self._by_group[group] = entry
        elif entry.group.params != params or entry.group.mss != mss:
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

    def attach(self, group_id: str, conn_id: ConnId, controller: MquicController) -> None:
        """Attach ``controller`` to group ``group_id`` as connection ``conn_id``."""
        entry = self._by_id.get(group_id)
        if entry is None:
            raise ValueError(f"group_id: no group {group_id!r}")
        controller.attach(entry.group, conn_id)

    def log(self, group_id: str) -> list[Record]:
        """The group's records, oldest first (the list itself: it grows)."""
        entry = self._by_id.get(group_id)
        if entry is None:
            raise ValueError(f"group_id: no group {group_id!r}")
        return entry.log

    def jsonl(self, group_id: str) -> str:
        """The group's log as JSON lines."""
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


class MquicController(QuicCongestionControl):
    """The mQUIC part of :class:`MquicReno` and :class:`MquicCubic`: it comes first in
    their bases, so each aioquic callback reaches the wrapped controller (``super()``)
    before mQUIC looks at what it did."""

    _rtt_monitor: QuicRttMonitor
    _congestion_recovery_start_time: float

    def __init__(self, *, max_datagram_size: int) -> None:
        self._mq_init()  # before the wrapped controller's __init__: CUBIC's calls reset()
        super().__init__(max_datagram_size=max_datagram_size)

    def on_packet_acked(self, *, now: float, packet: QuicSentPacket) -> None:
        super().on_packet_acked(now=now, packet=packet)  # type: ignore[safe-super]  # a concrete controller follows in the MRO
        self._mq_acked(now, packet)

    def on_packet_sent(self, *, packet: QuicSentPacket) -> None:
        super().on_packet_sent(packet=packet)  # type: ignore[safe-super]  # a concrete controller follows in the MRO
        self._mq_sent(packet)

    def on_packets_lost(self, *, now: float, packets: Iterable[QuicSentPacket]) -> None:
        recovery_start = self._congestion_recovery_start_time
        super().on_packets_lost(now=now, packets=packets)  # type: ignore[safe-super]  # a concrete controller follows in the MRO
        if self._congestion_recovery_start_time != recovery_start:  # a congestion event
            self._mq_nfe(now, "loss")

    def on_rtt_measurement(self, *, now: float, rtt: float) -> None:
        ssthresh = self.ssthresh
        super().on_rtt_measurement(now=now, rtt=rtt)  # type: ignore[safe-super]  # a concrete controller follows in the MRO
        if ssthresh is None and self.ssthresh is not None:  # the delay-based exit
            self._mq_nfe(now, "delay")

    def _mq_init(self) -> None:
        self._mq_entry: GroupEntry | None = None
        self._mq_conn: ConnId = -1
        self._mq_last_sent: float | None = None  # sent_time of the latest packet sent
        self._mq_round_marker: float | None = None  # a round ends when a later-sent packet is acked

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

    def attach(self, group: Group, conn_id: ConnId) -> None:
        """Join ``group`` (from :data:`groups`) as ``conn_id``: the window becomes the
        engine's IW/N and the connection is in slow start (ssthresh None, delay detector
        reset), as the engine assumes of a connection that joins."""
        if self._mq_entry is not None:
            raise ValueError(f"controller is already attached (connection {self._mq_conn} of {self._mq_entry.group_id!r})")
        entry = groups.entry(group)
        cwnd = group.join(conn_id)
        entry.controllers[conn_id] = self
        self._mq_entry, self._mq_conn = entry, conn_id
        self._mq_round_marker = self._mq_last_sent
        self._mq_set(ConnState(cwnd, None, True))
        self._rtt_monitor._increases = 0

    def detach(self) -> None:
        """Leave the group (the byte range is done); from then on a plain controller."""
        entry = self._mq_entry
        if entry is None:
            return
        entry.group.leave(self._mq_conn)
        del entry.controllers[self._mq_conn]
        self._mq_entry = None

    def conn_state(self) -> ConnState:
        """The state the engine sees: aioquic is in slow start while cwnd < ssthresh."""
        ss = self.ssthresh is None or self.congestion_window < self.ssthresh
        return ConnState(self.congestion_window, self.ssthresh, ss)

    # -- events, called by the subclasses after the wrapped controller has reacted

    def _mq_sent(self, packet: QuicSentPacket) -> None:
        if packet.sent_time is not None:
            self._mq_last_sent = packet.sent_time

    def _mq_acked(self, now: float, packet: QuicSentPacket) -> None:
        entry = self._mq_entry
        if entry is None or packet.sent_time is None:
            return
        if self._mq_round_marker is None or packet.sent_time > self._mq_round_marker:
            # the packet was sent after the round began: the round is over
            self._mq_round_marker = self._mq_last_sent
            decision = entry.group.on_round(self._mq_conn, now, _states(entry))
            if decision is not None:
                _apply(entry, decision)

    def _mq_nfe(self, now: float, kind: NfeKind) -> None:
        entry = self._mq_entry
        if entry is None:
            return
        _apply(entry, entry.group.on_nfe(self._mq_conn, now, _states(entry), kind))

    # -- applying a decision

    def _mq_set(self, state: ConnState) -> None:
        """Take ``state`` (cwnd, ssthresh). A connection put back in slow start has its
        delay detector's count of RTT increases reset, else it would report an exit again
        on its next sample."""
        back_to_slow_start = state.ssthresh is None and self.ssthresh is not None
        self.congestion_window = state.cwnd
        self.ssthresh = state.ssthresh
        if back_to_slow_start:
            self._rtt_monitor._increases = 0
        self._mq_adjust(back_to_slow_start)

    def _mq_adjust(self, back_to_slow_start: bool) -> None:
        """Controller-specific state to fix after cwnd or ssthresh were set."""


def _states(entry: GroupEntry) -> dict[ConnId, ConnState]:
    return {c: ctl.conn_state() for c, ctl in entry.controllers.items()}


def _apply(entry: GroupEntry, decision: Decision) -> None:
    for c, state in decision.updates.items():
        controller = entry.controllers[c]
        if state != controller.conn_state():
            controller._mq_set(state)
    entry.log.append(decision.record)


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
            self._rtt_monitor._increases = 0

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


register_congestion_control(RENO, MquicReno)
register_congestion_control(CUBIC, MquicCubic)
