"""A run's timeline: what each downlink leg carried and what reached the clients per dcemu
interval, and the events that explain its shape, each where and when it happened:

- ``socket_drops``: datagrams the client's UDP sockets dropped for a full receive buffer
  (the testbed's samples, ``socket_drops.py``; a run without samples has its total only);
- ``queue_drops``: packets a leg's downlink queue dropped (dcemu's records, per leg);
- ``aqm_drops`` and ``aqm_marks``: packets a leg's AQM (``--aqm``) dropped, or marked CE
  (dcemu's records, per leg);
- ``t_reordering``: the PDCP receiver's t-Reordering expiries (dcemu's records, per
  bearer): each one ends a wait of t-Reordering for a gap that never filled;
- ``sender_loss`` and ``pto``: the QUIC sender's loss declarations and probe timeouts, from
  its qlog (``--qlog``; ``qlog_recovery.py``);
- ``outage``: a leg's scheduled outage (``--outage``), from the run's scenario: an event at
  its start, and its span (``Timeline.outages``).

Times are seconds since ``t0`` (the request), the end of the interval or sample in which
the event was counted. The run figure draws this (``run_figure.py``), and the diagnosis
reads it (``diagnosis.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..dcemu.records import Stats
from .qlog_recovery import SenderEvent, sender_events
from .socket_drops import DropSample, read_samples
from .stored_run import StoredRun

Cause = Literal["socket_drops", "queue_drops", "aqm_drops", "aqm_marks", "t_reordering", "sn_misread", "outage",
                "sender_loss", "pto"]
CAUSES: tuple[Cause, ...] = ("socket_drops", "queue_drops", "aqm_drops", "aqm_marks", "t_reordering", "sn_misread",
                             "outage", "sender_loss", "pto")
PER_LEG: tuple[Cause, ...] = ("queue_drops", "aqm_drops", "aqm_marks")  # events with the leg as ``where``


@dataclass(frozen=True)
class Event:
    """``count`` of one cause in the interval (or sample) ending at ``t_s``; ``where``: the
    leg (queue drops) or bearer (t-Reordering) it happened at, "" where it is the client's
    or the sender's."""

    t_s: float
    cause: Cause
    count: int
    where: str = ""


@dataclass(frozen=True)
class RunFacts:
    """What a run's own record says beside dcemu's records: when its request was (on
    dcemu's clock and as Unix time), when its transfer ended, the client's socket drops
    in all, the t-Reordering it ran with (None: infinity), and its scheduled outage: the
    leg (1-based), its start on dcemu's clock and its length, ms."""

    t0_ms: float = 0.0
    end_s: float | None = None  # the last byte of the slowest flow, s since t0
    request_wall: float | None = None
    socket_drops: int | None = None
    t_reordering_ms: float | None = 200.0
    outage: tuple[int, float, float] | None = None

    @classmethod
    def of(cls, run: StoredRun[Any]) -> RunFacts:
        """From a run (``RepResult.stored`` or the store's)."""
        ends = [f.completion_s for f in run.flows if f.completion_s is not None]
        walls = [f.request_wall for f in run.flows if f.request_wall is not None]
        drops = run.metric("client_udp_drops")
        o = run.scenario.outage
        return cls(t0_ms=run.t0_ms, end_s=max(ends) if ends else None,
                   request_wall=min(walls) if walls else None,
                   socket_drops=int(drops) if drops is not None else None,
                   t_reordering_ms=run.scenario.t_reordering,
                   outage=(o.leg, o.at_s * 1e3, o.duration_s * 1e3) if o is not None else None)


@dataclass(frozen=True)
class Timeline:
    """Per interval record (its end ``t``, s since t0): each leg's downlink Mbit/s out and
    the Mbit/s delivered to the clients (all bearers); the events; the transfer's end."""

    t: tuple[float, ...]
    dt_s: float
    legs: dict[str, tuple[float, ...]]
    delivered: tuple[float, ...]
    end_s: float
    events: tuple[Event, ...] = ()
    socket_drops: int | None = None  # in all, timed or not
    socket_drops_timed: bool = False  # the testbed sampled when they happened
    t_reordering_ms: float | None = 200.0
    sender_logged: bool = False  # a sender's qlog was read
    # per leg: its configured downlink rate (None: a trace or unknown)
    capacities: dict[str, float | None] = field(default_factory=dict)
    # the scheduled outages: start and end (s since t0) and the leg
    outages: tuple[tuple[float, float, str], ...] = ()

    def of(self, cause: Cause) -> list[Event]:
        return [e for e in self.events if e.cause == cause]

    def total(self, cause: Cause) -> int:
        return sum(e.count for e in self.events if e.cause == cause)


def dcemu_events(records: Sequence[Stats], t0_ms: float) -> list[Event]:
    """Queue and AQM drops and marks per leg, t-Reordering expiries and misread COUNTs per bearer, per
    interval, from the cumulative counters of dcemu's interval records."""
    out: list[Event] = []
    prev: dict[tuple[Cause, str], int] = {}
    for r in records:
        if r.type != "interval":
            continue
        t = (r.t_ms - t0_ms) / 1e3
        counts: list[tuple[Cause, str, int]] = [("queue_drops", leg.name, leg.downlink.dropped_queue_packets)
                                                for leg in r.legs]
        for leg in r.legs:
            if (aqm := leg.downlink.aqm) is not None:
                counts += [("aqm_drops", leg.name, aqm.dropped_packets), ("aqm_marks", leg.name, aqm.marked_packets)]
        counts += [("t_reordering", b.name, b.rx.timer_expiries) for b in r.bearers if b.rx is not None]
        counts += [("sn_misread", b.name, b.rx.counts_misread) for b in r.bearers if b.rx is not None]
        for cause, where, n in counts:
            new = n - prev.get((cause, where), 0)
            prev[(cause, where)] = n
            if new > 0:
                out.append(Event(t, cause, new, where))
    return out


def drop_events(samples: Sequence[DropSample], t0_ms: float) -> list[Event]:
    return [Event((s.t_ms - t0_ms) / 1e3, "socket_drops", s.drops) for s in samples if s.drops > 0]


def timeline(records: Sequence[Stats], facts: RunFacts, samples: Sequence[DropSample] | None = None,
             sender: Sequence[Event] | None = None, leg_capacities: Sequence[float | None] = ()) -> Timeline:
    """The run's timeline from dcemu's records, the socket drop samples (None: not taken)
    and the sender's events (None: no qlog); the transfer ends at ``facts.end_s``, or at
    the last interval record without it."""
    intervals = [r for r in records if r.type == "interval"]
    t = tuple((r.t_ms - facts.t0_ms) / 1e3 for r in intervals)
    names = list(dict.fromkeys(leg.name for r in intervals for leg in r.legs))
    legs = {n: tuple(next((leg.downlink.out_mbps for leg in r.legs if leg.name == n), 0.0) for r in intervals)
            for n in names}
    delivered = tuple(sum(b.delivered_mbps for b in r.bearers) for r in intervals)
    dts = [r.dt_ms for r in intervals if r.dt_ms > 0]
    events = dcemu_events(intervals, facts.t0_ms) + drop_events(samples or [], facts.t0_ms) + list(sender or [])
    outages: tuple[tuple[float, float, str], ...] = ()
    if facts.outage is not None:
        leg, at_ms, length_ms = facts.outage
        where = names[leg - 1] if leg <= len(names) else f"leg{leg}"
        start = (at_ms - facts.t0_ms) / 1e3
        outages = ((start, start + length_ms / 1e3, where),)
        events.append(Event(start, "outage", 1, where))
    timed = sum(e.count for e in events if e.cause == "socket_drops")
    total = facts.socket_drops if facts.socket_drops is not None else (timed if samples is not None else None)
    end = facts.end_s if facts.end_s is not None else (t[-1] if t else 0.0)
    return Timeline(t=t, dt_s=(sorted(dts)[len(dts) // 2] / 1e3) if dts else 0.01, legs=legs, delivered=delivered,
                    end_s=end, events=tuple(sorted(events, key=lambda e: e.t_s)), socket_drops=total,
                    socket_drops_timed=samples is not None, t_reordering_ms=facts.t_reordering_ms,
                    sender_logged=sender is not None,
                    capacities={n: leg_capacities[i] if i < len(leg_capacities) else None for i, n in enumerate(names)},
                    outages=outages)


def read_timeline(run_dir: Path, records: Sequence[Stats], facts: RunFacts,
                  leg_capacities: Sequence[float | None] = ()) -> Timeline:
    """``timeline`` with the run directory's socket drop samples and sender qlogs."""
    logged = sender_events(Path(run_dir), facts.request_wall) if facts.request_wall is not None else None
    sender = None if logged is None else [qlog_event(e) for e in logged]
    return timeline(records, facts, read_samples(Path(run_dir)), sender, leg_capacities)


def qlog_event(e: SenderEvent) -> Event:
    return Event(e.t_s, "sender_loss" if e.kind == "loss" else "pto", e.count)
