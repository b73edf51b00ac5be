"""mQUIC's synchronization engine (Qian, Wang, Tafazolli, IEEE Access 2018), sans-IO.

N connections of one client fetch one object as N byte ranges; a :class:`Group` in the
server keeps their congestion state in step. Connections report events with plain method
calls (a network fluctuation event, the end of a round, a delivery rate) and get
decisions back as data; the caller applies them to its congestion controllers. Nothing
here reads a clock, a socket or a file: ``now`` is only copied into the log record.
docs/mquic.md describes the algorithm and every choice the paper leaves open.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ....files import JsonObject

ConnId: TypeAlias = int  # e.g. the index of the connection's byte range
SyncMode = Literal["full", "cwnd", "off"]  # "off": observe only (docs/mquic-implementation.md, "Observer mode")
NfeKind = Literal["loss", "delay"]
Action = Literal["sync", "mean", "stop", "merged", "none"]

MAX_CONNECTIONS = 64


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}: must be a finite number (got {value!r})")
    return float(value)


def _count(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name}: must be an integer from {lo} to {hi} (got {value!r})")
    return value


@dataclass(frozen=True)
class Params:
    """The group's parameters. ``delta_r`` is the growth per RTT assumed for the hit
    connection inside the γ recursion, ``delta`` the congestion-avoidance growth per RTT
    the recursion is stopped against (one value in the paper's Eq. 7; see docs/mquic.md)."""

    n: int = 3  # connections in the group
    beta: float = 0.7  # multiplicative back-off on loss
    gamma0: float = 1.5  # slow-start growth per RTT
    delta: float = 1.05  # congestion-avoidance growth per RTT: the stop test
    delta_r: float = 1.0  # the hit connection's growth inside the recursion
    ca_ratio: float = 1.5  # equalize cwnds in congestion avoidance above this max/min
    rate_ratio: float = 2.0  # equalize BBR delivery rates above this max/min
    sync: SyncMode = "full"
    min_window_packets: int = 2  # no cwnd set below this many datagrams (aioquic's floor)
    # An NFE within one RTT of the NFE that began the group's current network event is
    # that same event: counted, its connection's own reaction undone, no γ step
    # (docs/mquic.md, "Choices the paper leaves open", choice 15). Not the paper's printed rule: off by default.
    merge_within_rtt: bool = False

    def __post_init__(self) -> None:
        _count("n", self.n, 1, MAX_CONNECTIONS)
        _count("min_window_packets", self.min_window_packets, 1, 1000)
        for name in ("beta", "gamma0", "delta", "delta_r", "ca_ratio", "rate_ratio"):
            _number(name, getattr(self, name))
        if not 0 < self.beta <= 1:
            raise ValueError(f"beta: must be in (0, 1] (got {self.beta})")
        if not self.delta_r > 0:
            raise ValueError(f"delta_r: must be > 0 (got {self.delta_r})")
        if not self.delta >= self.delta_r:
            raise ValueError(f"delta: must be >= delta_r ({self.delta_r}) (got {self.delta})")
        if not self.gamma0 > self.delta:
            raise ValueError(f"gamma0: must be > delta ({self.delta}) (got {self.gamma0})")
        for name in ("ca_ratio", "rate_ratio"):
            if not getattr(self, name) > 1:
                raise ValueError(f"{name}: must be > 1 (got {getattr(self, name)})")
        if self.sync not in ("full", "cwnd", "off"):
            raise ValueError(f"sync: must be 'full', 'cwnd' or 'off' (got {self.sync!r})")
        if not isinstance(self.merge_within_rtt, bool):
            raise ValueError(f"merge_within_rtt: must be true or false (got {self.merge_within_rtt!r})")

    @classmethod
    def paper(cls, n: int = 3, sync: SyncMode = "full", merge_within_rtt: bool = False) -> Params:
        """The paper's values, tuned to Chromium's CUBIC: β 0.7, γ_0 1.5, δ 1.05."""
        return cls(n=n, beta=0.7, gamma0=1.5, delta=1.05, delta_r=1.0, sync=sync, merge_within_rtt=merge_within_rtt)

    @classmethod
    def for_controller(cls, controller: str, n: int = 3, sync: SyncMode = "full",
                       merge_within_rtt: bool = False) -> Params:  # fmt: skip
        """Values matching aioquic 1.7.2's controller: slow start doubles per RTT (γ_0 2.0);
        NewReno halves cwnd on loss (β 0.5), CUBIC keeps 0.7 of the bytes in flight. For
        ``bbr`` (whose NFEs are never synchronized: only ``rate_ratio`` and the window floor
        matter) the CUBIC values: BBR's STARTUP also doubles the delivery rate per round."""
        betas = {"reno": 0.5, "cubic": 0.7, "bbr": 0.7}
        if controller not in betas:
            raise ValueError(f"controller: must be one of {', '.join(betas)} (got {controller!r})")
        return cls(n=n, beta=betas[controller], gamma0=2.0, delta=1.05, delta_r=1.0, sync=sync,
                   merge_within_rtt=merge_within_rtt)  # fmt: skip


def next_gamma(params: Params, n: int, gamma: float) -> float:
    """γ_i from γ_{i-1} for a group of ``n`` connections (Eq. 7, with δ_r for δ)."""
    return (params.beta * params.delta_r + (n - 1) * gamma) / (params.beta + n - 1)


def gamma_sequence(params: Params, count: int, n: int | None = None) -> list[float]:
    """γ_1 .. γ_count, ignoring the stop test (the curve of the paper's Fig. 7)."""
    n = params.n if n is None else n
    out, gamma = [], params.gamma0
    for _ in range(count):
        gamma = next_gamma(params, n, gamma)
        out.append(gamma)
    return out


def stop_nfe(params: Params, n: int | None = None, limit: int = 1000) -> int | None:
    """The NFE at which full synchronization stops (γ_i <= δ), None if not within ``limit``."""
    for i, gamma in enumerate(gamma_sequence(params, limit, n), start=1):
        if not gamma > params.delta:
            return i
    return None


@dataclass(frozen=True)
class ConnState:
    """A loss-based controller's state as aioquic keeps it: bytes, ``ssthresh`` None means
    none yet (slow start without a bound)."""

    cwnd: int
    ssthresh: int | None
    in_slow_start: bool


@dataclass(frozen=True)
class Record:
    """One log line: an NFE, or an equalization at the end of a round (cwnd or rate). ``before`` and
    ``after`` map each connection to its cwnd in bytes (delivery rate in bit/s for
    ``event`` "rate"); ``after`` is ``before`` when nothing changed."""

    time: float
    group: str
    event: Literal["nfe", "round", "rate"]
    conn: ConnId
    action: Action
    stopped: bool  # the group is in congestion avoidance after this event (Group.in_congestion_avoidance)
    before: dict[ConnId, float]
    after: dict[ConnId, float]
    i: int | None = None  # the group's NFE number, from 1
    kind: NfeKind | None = None
    gamma: float | None = None  # γ_i when the NFE ran the recursion
    spread: float | None = None  # max/min compared with the ratio threshold
    # NFEs: counters the caller passes in (copied, never used in a decision)
    packets: int | None = None  # packets the hit connection sent since it joined
    group_packets: int | None = None  # packets all members sent since they joined
    cwnd_before: int | None = None  # the hit connection's cwnd before its own reaction
    # NFEs: whether it fell within one RTT of the NFE that began the group's current
    # network event (None: no RTT known to the engine)
    within_rtt: bool | None = None

    def to_dict(self) -> JsonObject:
        d: JsonObject = {
            "time": self.time, "group": self.group, "event": self.event, "conn": self.conn,
            "action": self.action, "stopped": self.stopped,
        }  # fmt: skip
        for key in ("i", "kind", "gamma", "spread", "packets", "group_packets", "cwnd_before", "within_rtt"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        d["before"] = {str(c): v for c, v in self.before.items()}
        d["after"] = {str(c): v for c, v in self.after.items()}
        return d


@dataclass(frozen=True)
class Decision:
    """What to apply to loss-based controllers: the new state of each listed connection
    (none listed: leave every controller as it is), and the log record."""

    updates: dict[ConnId, ConnState]
    record: Record


@dataclass(frozen=True)
class RateDecision:
    """The delivery-rate estimate (bit/s) each BBR connection takes, and the log record."""

    rates: dict[ConnId, float]
    record: Record


def _nfe_counts(packets: int | None, group_packets: int | None, cwnd_before: int | None) -> dict[str, int | None]:
    counts = {"packets": packets, "group_packets": group_packets, "cwnd_before": cwnd_before}
    for key, value in counts.items():
        if value is not None:
            _count(key, value, 0, 2**63)
    return counts


def _with_cwnd(state: ConnState, cwnd: int) -> ConnState:
    # The connection keeps its phase: aioquic is in slow start while cwnd < ssthresh, so
    # ssthresh moves only where the new cwnd would otherwise cross it.
    if state.in_slow_start:
        ssthresh = state.ssthresh if state.ssthresh is None or cwnd < state.ssthresh else None
    else:
        ssthresh = cwnd if state.ssthresh is None else min(state.ssthresh, cwnd)
    return ConnState(cwnd, ssthresh, state.in_slow_start)


class Group:
    """The connections of one mQUIC download and their shared congestion state.

    A connection joins (its initial cwnd is returned), reports every NFE with the state
    of every member, the end of each of its rounds, and (BBR) its delivery rate; it
    leaves when its byte range is done. ``mss`` defaults to aioquic's max_datagram_size,
    ``iw_bytes`` (one connection's initial window) to 10 datagrams as in aioquic."""

    def __init__(self, params: Params, *, mss: int = 1200, iw_bytes: int | None = None, name: str = "") -> None:
        self.params = params
        self.mss = _count("mss", mss, 1, 65535)
        self.iw_bytes = _count("iw_bytes", 10 * mss if iw_bytes is None else iw_bytes, 1, 2**31)
        self.name = name
        self._members: list[ConnId] = []
        self._joined = 0
        self._slow_start: dict[ConnId, bool] = {}  # each member's phase as last known
        self._gamma = params.gamma0
        self._nfes = 0
        self._synchronizing = params.sync == "full"
        self._round_pending: set[ConnId] = set()
        self._rate_pending: set[ConnId] = set()
        self._rates: dict[ConnId, float] = {}
        self._event_end: float | None = None  # the current network event lasts until then
        self._within_rtt = 0

    @property
    def members(self) -> tuple[ConnId, ...]:
        return tuple(self._members)

    @property
    def joined(self) -> int:
        """Connections that joined so far, those that left included: a member whose
        request comes late (its handshake or request lost and sent again) joins after the
        others may have left, and the download is only over when all ``n`` did."""
        return self._joined

    @property
    def gamma(self) -> float:
        """γ of the last synchronized NFE (γ_0 before the first)."""
        return self._gamma

    @property
    def nfes(self) -> int:
        """NFEs reported so far, synchronized or not."""
        return self._nfes

    @property
    def nfes_within_rtt(self) -> int:
        """NFEs that fell within one RTT of the NFE that began their network event."""
        return self._within_rtt

    @property
    def synchronizing(self) -> bool:
        """Full mode: slow-start synchronization is still on (no γ_i <= δ yet)."""
        return self._synchronizing

    @property
    def in_congestion_avoidance(self) -> bool:
        """Full mode: synchronization has stopped. Cwnd and off modes: no member is in slow start."""
        if self.params.sync == "full":
            return not self._synchronizing
        return bool(self._slow_start) and not any(self._slow_start.values())

    @property
    def min_window(self) -> int:
        return self.params.min_window_packets * self.mss

    @property
    def initial_cwnd(self) -> int:
        """IW/N, but never below the minimum window (docs/mquic.md); the whole IW with
        ``sync="off"`` (plain connections, observed only)."""
        if self.params.sync == "off":
            return max(self.iw_bytes, self.min_window)
        return max(self.iw_bytes // self.params.n, self.min_window)

    def join(self, conn: ConnId) -> int:
        """Add a connection, which starts in slow start; returns its initial cwnd in bytes."""
        _count("conn", conn, 0, 2**63)
        if conn in self._slow_start:
            raise ValueError(f"connection {conn!r} is already in group {self.name!r}")
        if len(self._members) >= self.params.n:
            raise ValueError(f"group {self.name!r} is full ({self.params.n} connections)")
        self._members.append(conn)
        self._joined += 1
        self._slow_start[conn] = True
        self._round_pending.add(conn)
        self._rate_pending.add(conn)
        return self.initial_cwnd

    def leave(self, conn: ConnId) -> None:
        """Remove a connection; its window is not handed to the others."""
        self._member(conn)
        self._members.remove(conn)
        del self._slow_start[conn]
        self._round_pending.discard(conn)
        self._rate_pending.discard(conn)
        self._rates.pop(conn, None)

    def on_nfe(
        self, conn: ConnId, now: float, states: dict[ConnId, ConnState], kind: NfeKind = "loss", *,
        packets: int | None = None, group_packets: int | None = None, cwnd_before: int | None = None,
        rtt: float | None = None, prior: ConnState | None = None,
    ) -> Decision:  # fmt: skip
        """A network fluctuation event of ``conn``: a congestion event (loss) or a
        delay-based slow-start exit. ``states`` holds every member's state, ``conn``'s
        after its own controller reacted (cut cwnd, ssthresh set). ``packets``,
        ``group_packets`` and ``cwnd_before`` are only copied into the record. With
        ``sync="off"`` the NFE is counted and logged (action "none") and nothing changes.

        ``rtt`` (s, the hit connection's latest sample) opens a network event that lasts
        one RTT; an NFE inside it is marked ``within_rtt``. With ``merge_within_rtt`` such
        an NFE is that same event (action "merged"): while the group reacts to NFEs (full:
        synchronizing; cwnd: the connection was in slow start), ``conn`` goes back to
        ``prior``, its state before its own reaction, and γ does not step."""
        self._member(conn)
        self._check_states(states)
        if kind not in ("loss", "delay"):
            raise ValueError(f"kind: must be 'loss' or 'delay' (got {kind!r})")
        counts = _nfe_counts(packets, group_packets, cwnd_before)
        if rtt is not None and not (_number("rtt", rtt) >= 0):
            raise ValueError(f"rtt: must be >= 0 (got {rtt})")
        if prior is not None and (isinstance(prior.cwnd, bool) or not isinstance(prior.cwnd, int) or prior.cwnd <= 0):
            raise ValueError(f"prior.cwnd: must be a positive integer (got {prior.cwnd!r})")
        was_slow_start = self._slow_start[conn]
        self._nfes += 1
        within = self._within(now, rtt)
        n, total = len(states), sum(s.cwnd for s in states.values())
        updates: dict[ConnId, ConnState] = {}
        action: Action = "none"
        gamma: float | None = None
        reacting = self.synchronizing or (self.params.sync == "cwnd" and was_slow_start)
        if within and self.params.merge_within_rtt and reacting:
            if prior is not None:
                updates = {conn: prior}
            action = "merged"
        elif self.synchronizing:
            gamma = self._gamma = next_gamma(self.params, n, self._gamma)
            if gamma > self.params.delta:
                each = self._floor(round(total * gamma / (self.params.gamma0 * n)))
                updates = {c: _with_cwnd(s, each) for c, s in states.items()}
                updates[conn] = ConnState(each, None, True)
                action = "sync"
            else:
                updates = {c: ConnState(s.cwnd, s.cwnd, False) for c, s in states.items()}
                self._synchronizing = False
                action = "stop"
        elif self.params.sync == "cwnd" and was_slow_start:
            mean = self._floor(round(total / n))
            updates = {c: _with_cwnd(s, mean) for c, s in states.items()}
            action = "mean"
        self._track(states, updates)
        record = self._record(now, "nfe", conn, action, states, updates, i=self._nfes, kind=kind, gamma=gamma,
                              within_rtt=within if rtt is not None or within else None, **counts)  # fmt: skip
        return Decision(updates, record)

    def _within(self, now: float, rtt: float | None) -> bool:
        """Whether an NFE at ``now`` is inside the current network event; if not, it
        begins one lasting ``rtt`` (None: an event of no known length)."""
        if self._event_end is not None and now < self._event_end:
            self._within_rtt += 1
            return True
        self._event_end = None if rtt is None else now + rtt
        return False

    def note_nfe(
        self, conn: ConnId, now: float, states: dict[ConnId, ConnState], kind: NfeKind = "loss", *,
        packets: int | None = None, group_packets: int | None = None, cwnd_before: int | None = None,
        rtt: float | None = None,
    ) -> Record:  # fmt: skip
        """An NFE that is only counted and logged, whatever the sync mode (BBR's losses):
        the record of an ``on_nfe`` with action "none"; nothing changes."""
        self._member(conn)
        self._check_states(states)
        if kind not in ("loss", "delay"):
            raise ValueError(f"kind: must be 'loss' or 'delay' (got {kind!r})")
        counts = _nfe_counts(packets, group_packets, cwnd_before)
        if rtt is not None and not (_number("rtt", rtt) >= 0):
            raise ValueError(f"rtt: must be >= 0 (got {rtt})")
        self._nfes += 1
        within = self._within(now, rtt)
        self._track(states, {})
        return self._record(now, "nfe", conn, "none", states, {}, i=self._nfes, kind=kind,
                            within_rtt=within if rtt is not None or within else None, **counts)  # fmt: skip

    def on_round(self, conn: ConnId, now: float, states: dict[ConnId, ConnState]) -> Decision | None:
        """``conn`` finished a round. Once every member has finished one since the last
        check, and the group is in congestion avoidance, equalize the cwnds if their
        max/min exceeds ``ca_ratio``. None when nothing is to be done."""
        self._member(conn)
        self._check_states(states)
        self._slow_start.update({c: s.in_slow_start for c, s in states.items()})
        self._round_pending.discard(conn)
        if self._round_pending:
            return None
        self._round_pending = set(self._members)
        if self.params.sync == "off" or not self.in_congestion_avoidance:
            return None
        cwnds = [s.cwnd for s in states.values()]
        spread = max(cwnds) / min(cwnds)
        if not spread > self.params.ca_ratio:
            return None
        mean = self._floor(round(sum(cwnds) / len(cwnds)))
        updates = {c: _with_cwnd(s, mean) for c, s in states.items()}
        self._track(states, updates)
        return Decision(updates, self._record(now, "round", conn, "mean", states, updates, spread=spread))

    def on_rate(self, conn: ConnId, now: float, delivery_rate_bps: float) -> RateDecision | None:
        """BBR: ``conn``'s delivery rate over its previous round. Once every member has
        reported since the last check, and the rates' max/min exceeds ``rate_ratio``,
        every connection takes the mean. None when nothing is to be done."""
        self._member(conn)
        rate = _number("delivery_rate_bps", delivery_rate_bps)
        if rate < 0:
            raise ValueError(f"delivery_rate_bps: must be >= 0 (got {rate})")
        self._rates[conn] = rate
        self._rate_pending.discard(conn)
        if self._rate_pending:
            return None
        if self.params.sync == "off":
            self._rates, self._rate_pending = {}, set(self._members)
            return None
        rates, self._rates, self._rate_pending = self._rates, {}, set(self._members)
        hi, lo = max(rates.values()), min(rates.values())
        spread = hi / lo if lo > 0 else (math.inf if hi > 0 else 1.0)
        if not spread > self.params.rate_ratio:
            return None
        mean = sum(rates.values()) / len(rates)
        after = {c: mean for c in rates}
        record = Record(now, self.name, "rate", conn, "mean", self.in_congestion_avoidance, dict(rates), after, spread=spread)
        return RateDecision(after, record)

    def _member(self, conn: ConnId) -> None:
        if conn not in self._slow_start:
            raise ValueError(f"connection {conn!r} is not in group {self.name!r}")

    def _check_states(self, states: dict[ConnId, ConnState]) -> None:
        if set(states) != set(self._members):
            raise ValueError(f"states: must cover exactly the members {self._members} (got {list(states)})")
        for c, s in states.items():
            if isinstance(s.cwnd, bool) or not isinstance(s.cwnd, int) or s.cwnd <= 0:
                raise ValueError(f"states[{c!r}].cwnd: must be a positive integer (got {s.cwnd!r})")

    def _floor(self, cwnd: int) -> int:
        return max(cwnd, self.min_window)

    def _track(self, states: dict[ConnId, ConnState], updates: dict[ConnId, ConnState]) -> None:
        for c, s in states.items():
            self._slow_start[c] = updates.get(c, s).in_slow_start

    def _record(
        self, now: float, event: Literal["nfe", "round"], conn: ConnId, action: Action,
        states: dict[ConnId, ConnState], updates: dict[ConnId, ConnState], **extra: Any,
    ) -> Record:  # fmt: skip
        before: dict[ConnId, float] = {c: s.cwnd for c, s in states.items()}
        after: dict[ConnId, float] = {c: updates.get(c, s).cwnd for c, s in states.items()}
        return Record(now, self.name, event, conn, action, self.in_congestion_avoidance, before, after, **extra)
