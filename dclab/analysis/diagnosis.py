"""Why a run's transfer stalled, in one line: ``diagnose`` reads a run's timeline
(``run_events.py``) and, when the stalls it can put down to a cause cost the transfer more
than THRESHOLD of its duration, names each such cause with how to avoid it. docs/run-figure.md says the same in prose.

What a stall is, and what it costs:

- a *stall* is a stretch of at least MIN_STALL_S inside the transfer (from the request to
  its last byte) in which what dcemu delivered to the clients stayed under NEAR_NOTHING of
  the transfer's mean delivered rate: nothing (or next to nothing) reached the client,
  whichever leg still carried packets (a reordering wait holds what both legs carry);
- a stall is *after* an event when the event was counted from LOOKBACK_S before the stall
  began until the interval in which delivery resumed (a t-Reordering expiry is counted
  when its wait ends, i.e. at the stall's end; drops come before the stall they cause,
  the sender's loss detection and probe timeout taking some round trips);
- a stall after events of several causes is put down to one. A stall that ends with a
  t-Reordering expiry is the PDCP receiver's wait for a gap: a datagram dropped at the
  client's socket cannot open a gap (it is lost after PDCP), so it is put down to the
  queue drops before it that can, else to t-Reordering itself. Any other stall is put
  down to the first in DIAGNOSED that happened around it (socket drops, then queue
  drops: the sender stopped for the datagrams it lost);
- a cause's *cost* is the summed duration of the stalls put down to it, over the
  transfer's duration; there is a diagnosis when the causes' costs together are more than
  THRESHOLD (several causes of 4 % each stall a transfer as much as one of 8 %). It names
  the costliest cause first and every other cause that stalled the transfer after it.

The sender's loss declarations and PTOs are consequences (of drops here or of random loss
on the legs), drawn on the figure but not diagnosed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .run_events import Cause, Timeline

THRESHOLD = 0.05  # a diagnosis when stalls after the causes cost more than 5 % of the transfer
NEAR_NOTHING = 0.05  # delivered under 5 % of the transfer's mean rate: a stall
MIN_STALL_S = 0.05  # five of dcemu's 10 ms intervals: shorter gaps are a burst's ordinary texture
LOOKBACK_S = 0.5  # drops this long before a stall may have caused it (loss detection, PTO)
DIAGNOSED: tuple[Cause, ...] = ("socket_drops", "queue_drops", "t_reordering")


@dataclass(frozen=True)
class Stall:
    """Delivery near nothing over [start_s, end_s] (s since the request); ``cause``: the
    one it is put down to (None: no event before it)."""

    start_s: float
    end_s: float
    cause: Cause | None

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


@dataclass(frozen=True)
class CauseCost:
    """One cause's stalls: their summed duration, their number, and the cause's events
    over the whole run (datagrams, packets or expiries)."""

    cause: Cause
    stalled_s: float
    stalls: int
    count: int


@dataclass(frozen=True)
class Diagnosis:
    """The costliest cause of a run's stalls, and every other cause that stalled it."""

    main: CauseCost
    transfer_s: float
    others: tuple[CauseCost, ...] = ()
    t_reordering_ms: float | None = 200.0

    @property
    def stalled_s(self) -> float:
        return self.main.stalled_s + sum(o.stalled_s for o in self.others)

    @property
    def share(self) -> float:
        """Of the transfer, the share its diagnosed stalls took."""
        return self.stalled_s / self.transfer_s

    def line(self) -> str:
        """e.g. ``diagnosis: 0.8 s stalled (9 % of the 8.5 s transfer) after 407
        datagrams dropped at the client's socket: see --udp-buffer large``; with several
        causes, the total first and then each cause's part, costliest first."""
        head = f"diagnosis: {self.stalled_s:.1f} s stalled ({100 * self.share:.0f} % of the {self.transfer_s:.1f} s transfer)"
        parts = [self.main, *self.others]
        if len(parts) == 1:
            m = self.main
            return f"{head} after {what(m.cause, m.count, self.t_reordering_ms)}: see {remedy(m.cause, self.t_reordering_ms)}"
        return head + ": " + "; ".join(
            f"{c.stalled_s:.1f} s after {what(c.cause, c.count, self.t_reordering_ms)} (see {remedy(c.cause, self.t_reordering_ms)})"
            for c in parts)


def what(cause: Cause, count: int, t_reordering_ms: float | None = None) -> str:
    """The events of a cause as the legend and the diagnosis name them."""
    s = "" if count == 1 else "s"
    wait = f" ({t_reordering_ms:g} ms wait each)" if t_reordering_ms is not None else ""
    return {
        "socket_drops": f"{count} datagram{s} dropped at the client's socket",
        "queue_drops": f"{count} packet{s} dropped in the legs' queues",
        "t_reordering": f"{count} t-Reordering expir{'y' if count == 1 else 'ies'}{wait}",
        "sender_loss": f"{count} packet{s} the sender declared lost",
        "pto": f"{count} probe timeout{s} (PTO) at the sender",
    }[cause]


def remedy(cause: Cause, t_reordering_ms: float | None = None) -> str:
    """What to change against a cause, as options of `dclab run`."""
    now = f", now {t_reordering_ms:g} ms" if t_reordering_ms is not None else ", now infinite"
    return {
        "socket_drops": "--udp-buffer large",
        "queue_drops": "a larger --queue, or a --split matched to the legs' rates",
        "t_reordering": f"a shorter --t-reordering{now}, or a --split matched to the legs",
        "sender_loss": "the sender's qlog",
        "pto": "the sender's qlog",
    }[cause]


def stalls(tl: Timeline) -> list[Stall]:
    """The transfer's stalls, each put down to a cause or to none."""
    inside = [(t, v) for t, v in zip(tl.t, tl.delivered, strict=True) if 0.0 < t <= tl.end_s + tl.dt_s / 2]
    if not inside or tl.end_s <= 0:
        return []
    mean = sum(v for _, v in inside) / len(inside)
    if mean <= 0:
        return []
    low = NEAR_NOTHING * mean
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for t, v in inside:
        if v < low:
            if start is None:
                start = t - tl.dt_s  # an interval record covers (t - dt, t]
        elif start is not None:
            spans.append((start, t - tl.dt_s))
            start = None
    if start is not None:
        spans.append((start, inside[-1][0]))
    out = []
    for a, b in spans:
        b = min(b, tl.end_s)
        if b - a < MIN_STALL_S - 1e-9:
            continue
        near = {e.cause for e in tl.events if a - LOOKBACK_S <= e.t_s <= b + tl.dt_s + 1e-9}
        waited = any(e.cause == "t_reordering" and b - tl.dt_s - 1e-9 <= e.t_s <= b + tl.dt_s + 1e-9
                     for e in tl.events)
        order = ("queue_drops", "t_reordering") if waited else DIAGNOSED
        out.append(Stall(max(a, 0.0), b, next((c for c in order if c in near), None)))
    return out


def costs(tl: Timeline, found: list[Stall] | None = None) -> list[CauseCost]:
    """Each diagnosed cause that stalled the transfer, costliest first."""
    found = stalls(tl) if found is None else found
    out = []
    for c in DIAGNOSED:
        mine = [s for s in found if s.cause == c]
        if mine:
            count = tl.socket_drops if c == "socket_drops" and tl.socket_drops is not None else tl.total(c)
            out.append(CauseCost(c, sum(s.duration_s for s in mine), len(mine), count))
    return sorted(out, key=lambda cc: -cc.stalled_s)


def diagnose(tl: Timeline, threshold: float = THRESHOLD) -> Diagnosis | None:
    """The run's diagnosis, None when the stalls put down to a cause cost no more than
    ``threshold`` of the transfer (request to last byte) together."""
    if tl.end_s <= 0:
        return None
    found = costs(tl)
    if not found or sum(c.stalled_s for c in found) / tl.end_s <= threshold:
        return None
    return Diagnosis(found[0], tl.end_s, tuple(found[1:]), tl.t_reordering_ms)
