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
- a stall after events of several causes is put down to one. A PDU the PDCP receiver
  took for a later COUNT (HFN desynchronisation) comes first: after it the receiver
  discards what follows as late, whatever else happened. A leg's scheduled outage
  (``--outage``) comes next, for a stall or dip that overlaps it (from LOOKBACK_S before
  its start to its end): what the leg lost then explains the drops and waits around it. A stall that ends with a
  t-Reordering expiry is the PDCP receiver's wait for a gap: a datagram dropped at the
  client's socket cannot open a gap (it is lost after PDCP), so it is put down to the
  queue drops before it that can, else to t-Reordering itself. Any other stall is put
  down to the first in DIAGNOSED that happened around it (socket drops, then queue
  drops: the sender stopped for the datagrams it lost);
- a *dip* is a stretch outside the stalls, after delivery first reached DIP_BELOW of the
  run's own rate (the REFERENCE_PCT percentile of its SMOOTH_S means), in which those
  means stayed under DIP_BELOW of it: a sender that halved its window after a loss and
  takes seconds to grow it back. It is put down to a cause as a stall is (drops from
  LOOKBACK_S before it to its end; one with none of its own that begins within
  CONTINUES_S of a stall's or dip's end continues that one's recovery), and what it *lost* is the run's rate it did not
  deliver, in seconds of that rate. Only where every leg has a configured rate: under a
  trace or a cell the rate itself moves;
- a cause's *cost* is the summed duration of the stalls put down to it and what its dips
  lost, over the transfer's duration; there is a diagnosis when the causes' costs
  together are more than THRESHOLD (several causes of 4 % each slow a transfer as much as
  one of 8 %). It names the costliest cause first and every other cause after it.

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
# A misread COUNT first: after one the receiver discards what follows as late, whatever
# else happened around the stall.
DIAGNOSED: tuple[Cause, ...] = ("sn_misread", "outage", "socket_drops", "queue_drops", "aqm_drops", "t_reordering")
SMOOTH_S = 0.1  # dips are found on means over this long: one 10 ms record is mostly jitter
REFERENCE_PCT = 90  # the run's own rate: this percentile of those means inside the transfer
DIP_BELOW = 0.8  # under this share of the run's rate: a dip
CONTINUES_S = 0.2  # a dip this soon after another's (or a stall's) end continues its recovery


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
class Dip:
    """Delivery under DIP_BELOW of the run's rate over [start_s, end_s], not stalled;
    ``lost_s``: the run's rate it did not deliver, in seconds of that rate."""

    start_s: float
    end_s: float
    cause: Cause | None
    lost_s: float


@dataclass(frozen=True)
class CauseCost:
    """One cause's stalls (their summed duration, their number), what its dips lost, and
    the cause's events over the whole run (datagrams, packets or expiries)."""

    cause: Cause
    stalled_s: float
    stalls: int
    count: int
    dipped_s: float = 0.0

    @property
    def cost_s(self) -> float:
        return self.stalled_s + self.dipped_s

    def lost(self) -> str:
        """``0.9 s stalled``, ``2.3 s of the rate lost in dips``, or both."""
        parts = ([f"{self.stalled_s:.1f} s stalled"] if self.stalls else []) + (
            [f"{self.dipped_s:.1f} s of the rate lost in dips"] if self.dipped_s > 0 else [])
        return " and ".join(parts)


@dataclass(frozen=True)
class Diagnosis:
    """The costliest cause of a run's stalls, and every other cause that stalled it."""

    main: CauseCost
    transfer_s: float
    others: tuple[CauseCost, ...] = ()
    t_reordering_ms: float | None = 200.0

    @property
    def cost_s(self) -> float:
        return self.main.cost_s + sum(o.cost_s for o in self.others)

    @property
    def share(self) -> float:
        """Of the transfer, the share its diagnosed stalls and dips cost."""
        return self.cost_s / self.transfer_s

    def line(self) -> str:
        """e.g. ``diagnosis: 0.8 s stalled (9 % of the 8.5 s transfer) after 407
        datagrams dropped at the client's socket: see --udp-buffer large``; with several
        causes, the total first and then each cause's part, costliest first."""
        of = f"{100 * self.share:.0f} % of the {self.transfer_s:.1f} s transfer"
        parts = [self.main, *self.others]
        if len(parts) == 1:
            m = self.main
            return (f"diagnosis: {m.lost()} ({of}) after {what(m.cause, m.count, self.t_reordering_ms)}: see "
                    f"{remedy(m.cause, self.t_reordering_ms)}")
        return f"diagnosis: {self.cost_s:.1f} s lost ({of}): " + "; ".join(
            f"{c.lost()} after {what(c.cause, c.count, self.t_reordering_ms)} (see {remedy(c.cause, self.t_reordering_ms)})"
            for c in parts)


def what(cause: Cause, count: int, t_reordering_ms: float | None = None) -> str:
    """The events of a cause as the legend and the diagnosis name them."""
    s = "" if count == 1 else "s"
    wait = f" ({t_reordering_ms:g} ms wait each)" if t_reordering_ms is not None else ""
    return {
        "socket_drops": f"{count} datagram{s} dropped at the client's socket",
        "queue_drops": f"{count} packet{s} dropped in the legs' queues",
        "aqm_drops": f"{count} packet{s} dropped by the legs' AQM",
        "aqm_marks": f"{count} packet{s} marked CE by the legs' AQM",
        "t_reordering": f"{count} t-Reordering expir{'y' if count == 1 else 'ies'}{wait}",
        "sn_misread": (f"{count} PDU{s} the PDCP receiver took for a later COUNT (sent more than half the SN "
                       "space before what it awaited: HFN desynchronisation, after which it discards what "
                       "follows as late)"),
        "outage": f"{count} scheduled outage{s} of a leg (--outage: it lost every packet, both ways)",
        "sender_loss": f"{count} packet{s} the sender declared lost",
        "pto": f"{count} probe timeout{s} (PTO) at the sender",
    }[cause]


def remedy(cause: Cause, t_reordering_ms: float | None = None) -> str:
    """What to change against a cause, as options of `dclab run`."""
    now = f", now {t_reordering_ms:g} ms" if t_reordering_ms is not None else ", now infinite"
    return {
        "socket_drops": "--udp-buffer large",
        "queue_drops": "a larger --queue, or a --split matched to the legs' rates",
        "aqm_drops": ("--aqm-ecn with an ECN-capable stack (a mark instead of a drop), or a longer --aqm-target; "
                      "where PDCP reorders (two legs), each drop is also a gap its receiver waits for"),
        "aqm_marks": "the sender's reaction to ECN (its qlog, or ss -tni)",
        "t_reordering": f"a shorter --t-reordering{now}, or a --split matched to the legs",
        "sn_misread": "--sn-bits 18 (NR PDCP's long SN, 4 times the room of 16 bits)",
        "outage": "--duplicate (each packet on both legs), or --fallback-ms under a flow-controlled --split-policy",
        "sender_loss": "the sender's qlog",
        "pto": "the sender's qlog",
    }[cause]


def misread_line(count: int) -> str:
    """The line for a run whose PDCP receiver misread ``count`` COUNTs, whether or not its
    stalls were diagnosed (a split's run has no diagnosis, and a run the misreading stalls
    to the end fails)."""
    return f"diagnosis: {what('sn_misread', count)}: see {remedy('sn_misread')}"


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
        waited = any(e.cause == "t_reordering" and b - tl.dt_s - 1e-9 <= e.t_s <= b + tl.dt_s + 1e-9
                     for e in tl.events)
        order: tuple[Cause, ...] = (("sn_misread", "outage", "queue_drops", "aqm_drops", "t_reordering") if waited
                                    else DIAGNOSED)
        out.append(Stall(max(a, 0.0), b, _cause_near(tl, a, b, order)))
    return out


def _cause_near(tl: Timeline, a: float, b: float, order: tuple[Cause, ...] = DIAGNOSED) -> Cause | None:
    near = {e.cause for e in tl.events if a - LOOKBACK_S <= e.t_s <= b + tl.dt_s + 1e-9}
    if any(start - LOOKBACK_S <= b + 1e-9 and a <= end + 1e-9 for start, end, _ in tl.outages):
        near.add("outage")
    return next((c for c in order if c in near), None)


def _means(values: list[float], k: int) -> list[float]:
    """Each value's mean over the k values centred on it (fewer at the ends)."""
    out = []
    for i in range(len(values)):
        window = values[max(0, i - k // 2): max(0, i - k // 2) + k]
        out.append(sum(window) / len(window))
    return out


def dips(tl: Timeline, found: list[Stall] | None = None) -> list[Dip]:
    """The transfer's dips (outside its stalls), each put down to a cause or to none;
    none where a leg has no configured rate (a trace, a cell)."""
    if not tl.capacities or any(not c for c in tl.capacities.values()) or tl.end_s <= 0:
        return []
    found = stalls(tl) if found is None else found
    inside = [(t, v) for t, v in zip(tl.t, tl.delivered, strict=True) if 0.0 < t <= tl.end_s + tl.dt_s / 2]
    k = max(1, round(SMOOTH_S / tl.dt_s))
    if len(inside) < 2 * k:
        return []
    smooth = _means([v for _, v in inside], k)
    ref = sorted(smooth)[min(len(smooth) - 1, int(len(smooth) * REFERENCE_PCT / 100))]
    if ref <= 0:
        return []
    stalled = [any(s.start_s < t - 1e-9 and t <= s.end_s + 1e-9 for s in found) for t, _ in inside]
    up = next((i for i, m in enumerate(smooth) if m >= DIP_BELOW * ref), len(inside))  # after the ramp-up
    out: list[Dip] = []
    i = up
    while i < len(inside):
        if smooth[i] >= DIP_BELOW * ref or stalled[i]:
            i += 1
            continue
        j = i
        while j < len(inside) and smooth[j] < DIP_BELOW * ref and not stalled[j]:
            j += 1
        a, b = inside[i][0] - tl.dt_s, inside[j - 1][0]
        lost = sum(max(0.0, 1 - v / ref) for _, v in inside[i:j]) * tl.dt_s
        if b - a >= MIN_STALL_S - 1e-9 and lost >= tl.dt_s / 2:  # the means' edges around a stall lose nothing
            out.append(Dip(a, min(b, tl.end_s), _cause_near(tl, a, b), lost))
        i = j
    return _continued(out, found)


def _continued(found_dips: list[Dip], found: list[Stall]) -> list[Dip]:
    """A dip with no event of its own that begins within CONTINUES_S of a stall's or dip's
    end is the same slow recovery: it is put down to that one's cause."""
    ends = sorted([(s.end_s, s.cause) for s in found if s.cause is not None])
    out = []
    for d in found_dips:
        cause = d.cause
        if cause is None:
            before = [c for e, c in ends if d.start_s - CONTINUES_S <= e <= d.start_s + 1e-9]
            cause = before[-1] if before else None
        out.append(Dip(d.start_s, d.end_s, cause, d.lost_s))
        if cause is not None:
            ends = sorted([*ends, (d.end_s, cause)])
    return out


def costs(tl: Timeline, found: list[Stall] | None = None, dipped: list[Dip] | None = None) -> list[CauseCost]:
    """Each diagnosed cause that stalled or slowed the transfer, costliest first."""
    found = stalls(tl) if found is None else found
    dipped = dips(tl, found) if dipped is None else dipped
    out = []
    for c in DIAGNOSED:
        mine = [s for s in found if s.cause == c]
        theirs = [d for d in dipped if d.cause == c]
        if mine or theirs:
            count = tl.socket_drops if c == "socket_drops" and tl.socket_drops is not None else tl.total(c)
            out.append(CauseCost(c, sum(s.duration_s for s in mine), len(mine), count, sum(d.lost_s for d in theirs)))
    return sorted(out, key=lambda cc: -cc.cost_s)


def diagnose(tl: Timeline, threshold: float = THRESHOLD, found: list[Stall] | None = None,
             dipped: list[Dip] | None = None) -> Diagnosis | None:
    """The run's diagnosis, None when the stalls and dips put down to a cause cost no more
    than ``threshold`` of the transfer (request to last byte) together; ``found`` and
    ``dipped`` when the caller has them already (``costs``)."""
    if tl.end_s <= 0:
        return None
    causes = costs(tl, found, dipped)
    if not causes:
        return None
    d = Diagnosis(causes[0], tl.end_s, tuple(causes[1:]), tl.t_reordering_ms)
    return d if d.share > threshold else None
