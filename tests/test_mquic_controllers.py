"""mQUIC's aioquic controllers (docs/mquic-implementation.md, "The controllers"), driven by synthetic
sends, ACKs, RTT samples and losses of aioquic's QuicSentPacket: unattached they are
plain NewReno/CUBIC; attached they start at IW/N, synchronize on NFEs, stop, and
equalize in congestion avoidance."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from aioquic.quic.congestion.base import QuicCongestionControl, create_congestion_control
from aioquic.quic.congestion.cubic import CubicCongestionControl
from aioquic.quic.congestion.reno import RenoCongestionControl
from aioquic.quic.packet import QuicPacketType
from aioquic.quic.packet_builder import QuicSentPacket
from aioquic.quic.recovery import QuicPacketRecovery
from aioquic.tls import Epoch

from dclab.endpoints.aioquic.mquic import controllers
from dclab.endpoints.aioquic.mquic.controllers import MquicController, MquicCubic, MquicReno, groups
from dclab.endpoints.aioquic.mquic.engine import ConnState, Group, Params, next_gamma, stop_nfe

MSS = 1200
RTT = 0.05


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    groups.clear()
    yield
    groups.clear()


class Conn:
    """One connection's sender: packets in flight, a clock it is told."""

    def __init__(self, cc: QuicCongestionControl) -> None:
        self.cc = cc
        self.pn = 0
        self.flight: list[QuicSentPacket] = []

    def send(self, t: float, count: int | None = None) -> list[QuicSentPacket]:
        out = []
        while (len(out) < count) if count is not None else (self.cc.bytes_in_flight + MSS <= self.cc.congestion_window):
            p = QuicSentPacket(epoch=Epoch.ONE_RTT, in_flight=True, is_ack_eliciting=True, is_crypto_packet=False,
                               packet_number=self.pn, packet_type=QuicPacketType.ONE_RTT, sent_time=t, sent_bytes=MSS)  # fmt: skip
            self.pn += 1
            self.cc.on_packet_sent(packet=p)
            self.flight.append(p)
            out.append(p)
        return out

    def ack(self, now: float, count: int | None = None, rtt: float | None = RTT) -> None:
        n = len(self.flight) if count is None else count
        acked, self.flight = self.flight[:n], self.flight[n:]
        for p in acked:
            self.cc.on_packet_acked(now=now, packet=p)
        if rtt is not None and acked:
            self.cc.on_rtt_measurement(now=now, rtt=rtt)

    def lose(self, now: float, count: int = 1) -> None:
        lost, self.flight = self.flight[:count], self.flight[count:]
        self.cc.on_packets_lost(now=now, packets=lost)

    def round(self, t: float, lose: bool = False) -> float:
        """Send a window at ``t``; at ``t + RTT`` the first packet is lost (if ``lose``)
        and the rest acknowledged, ACKs before losses as aioquic's recovery does."""
        self.send(t)
        now = t + RTT
        if lose:
            self.flight = self.flight[1:] + self.flight[:1]
            self.ack(now, count=len(self.flight) - 1)
            self.lose(now)
        else:
            self.ack(now)
        return now

    def delay_exit(self, t: float, limit: int = 100) -> float:
        """RTT samples 2 ms apart, low then doubled, until the delay detector exits slow
        start (an attached controller: reports an NFE); returns the time of the exit."""
        group = self.cc.group if isinstance(self.cc, MquicController) else None
        records = len(groups.log(group.name)) if group is not None else 0
        for k in range(limit):
            t += 0.002
            self.cc.on_rtt_measurement(now=t, rtt=RTT if k < 5 else 2 * RTT)
            if self.cc.ssthresh is not None or (group is not None and len(groups.log(group.name)) > records):
                return t
        raise AssertionError("no delay exit")


def state(cc: QuicCongestionControl) -> tuple[int, int | None, int]:
    return cc.congestion_window, cc.ssthresh, cc.bytes_in_flight


def script(cc: QuicCongestionControl) -> list[tuple[int, int | None, int]]:
    """A fixed sequence of slow start, a delay exit, losses, congestion avoidance and an
    idle period; the controller's state after every step."""
    c, out, t = Conn(cc), [], 1.0
    for _ in range(4):
        t = c.round(t)
        out.append(state(cc))
    t = c.delay_exit(t)
    out.append(state(cc))
    for k in range(12):
        t = c.round(t + 0.001, lose=k in (3, 4, 9))
        out.append(state(cc))
    c.send(t)
    c.lose(t + RTT, count=3)
    out.append(state(cc))
    c.ack(t + RTT)
    t += 3.0  # idle: CUBIC resets
    for _ in range(3):
        t = c.round(t)
        out.append(state(cc))
    return out


@pytest.mark.parametrize(("plain", "mquic"), [(RenoCongestionControl, MquicReno), (CubicCongestionControl, MquicCubic)])
def test_unattached_is_the_plain_controller(plain: type, mquic: type) -> None:
    expected = script(plain(max_datagram_size=MSS))
    got = script(mquic(max_datagram_size=MSS))
    assert got == expected
    assert len({s[0] for s in got}) > 10  # the script exercises the window


def test_registered_in_aioquic() -> None:
    assert isinstance(create_congestion_control("mquic-reno", max_datagram_size=MSS), MquicReno)
    assert isinstance(create_congestion_control("mquic-cubic", max_datagram_size=MSS), MquicCubic)
    rec = QuicPacketRecovery(congestion_control_algorithm=controllers.CUBIC, initial_rtt=0.1, max_datagram_size=MSS,
                             peer_completed_address_validation=True, send_probe=lambda: None)  # fmt: skip
    assert isinstance(rec._cc, MquicCubic) and not rec._cc.attached


def attached(kind: type, params: Params, gid: str = "g") -> list[Conn]:
    group = groups.get_or_create(gid, params, MSS)
    conns = []
    for c in range(params.n):
        cc = kind(max_datagram_size=MSS)
        cc.attach(group, c)
        conns.append(Conn(cc))
    return conns


def mq(conn: Conn) -> MquicController:
    assert isinstance(conn.cc, MquicController)
    return conn.cc


def test_registry_and_attach() -> None:
    params = Params.for_controller("reno")
    g = groups.get_or_create("g", params, MSS)
    assert groups.get_or_create("g", params, MSS) is g and g.name == "g" and "g" in groups
    with pytest.raises(ValueError, match="^group_id"):
        groups.get_or_create("g", Params.for_controller("cubic"), MSS)
    ccs = [MquicReno(max_datagram_size=MSS) for _ in range(3)]
    assert all(cc.congestion_window == 10 * MSS for cc in ccs)  # unattached: aioquic's IW
    Conn(ccs[0]).round(1.0)  # grew during the handshake
    for c, cc in enumerate(ccs):
        groups.attach("g", c, cc)
    assert [cc.congestion_window for cc in ccs] == [4000] * 3 == [g.initial_cwnd] * 3
    assert sum(cc.congestion_window for cc in ccs) <= 10 * MSS  # one IW for the group
    assert all(cc.ssthresh is None and cc.attached and cc.group is g for cc in ccs)
    assert g.members == (0, 1, 2) and [cc.conn_id for cc in ccs] == [0, 1, 2]
    with pytest.raises(ValueError, match="already attached"):
        ccs[0].attach(g, 5)
    with pytest.raises(ValueError, match="full"):
        MquicCubic(max_datagram_size=MSS).attach(g, 3)
    ccs[2].detach()
    assert g.members == (0, 1) and not ccs[2].attached
    groups.remove("g")
    assert not any(cc.attached for cc in ccs) and groups.get("g") is None
    with pytest.raises(ValueError, match="not in the registry"):
        MquicReno(max_datagram_size=MSS).attach(Group(params), 0)


@pytest.mark.parametrize("kind", [MquicReno, MquicCubic])
def test_loss_in_slow_start_syncs_every_member(kind: type) -> None:
    params = Params.for_controller("reno" if kind is MquicReno else "cubic")
    conns = attached(kind, params)
    t = 1.0
    for k, c in enumerate(conns):
        for _ in range(k + 1):  # different windows
            c.round(t)
    assert len({c.cc.congestion_window for c in conns}) == 3
    conns[0].round(t + 1.0, lose=True)
    log = groups.log("g")
    assert len(log) == 1
    rec = log[0]
    assert (rec.event, rec.action, rec.kind, rec.conn, rec.i) == ("nfe", "sync", "loss", 0, 1)
    gamma = next_gamma(params, 3, params.gamma0)
    each = round(sum(rec.before.values()) * gamma / (params.gamma0 * 3))
    assert rec.after == {0: each, 1: each, 2: each} and rec.gamma == gamma
    assert [c.cc.congestion_window for c in conns] == [each] * 3
    assert all(mq(c).conn_state().in_slow_start and c.cc.ssthresh is None for c in conns)
    hit = conns[0].cc
    assert hit._rtt_monitor._increases == 0  # type: ignore[attr-defined]
    if isinstance(hit, MquicCubic):  # put back: CUBIC's first slow start again
        assert hit._first_slow_start and not hit._starting_congestion_avoidance and hit._W_max == each
    json.loads(groups.jsonl("g"))  # one JSON line


def test_delay_exit_puts_back_with_detector_reset() -> None:
    conns = attached(MquicReno, Params.for_controller("reno"))
    for c in conns:
        c.round(1.0)
    t = conns[1].delay_exit(2.0)
    rec = groups.log("g")[-1]
    assert (rec.action, rec.kind, rec.conn) == ("sync", "delay", 1)
    cc = conns[1].cc
    assert cc.ssthresh is None and cc._rtt_monitor._increases == 0  # type: ignore[attr-defined]
    cc.on_rtt_measurement(now=t + 0.002, rtt=2 * RTT)
    assert cc.ssthresh is None and len(groups.log("g")) == 1  # no immediate second exit
    # without the reset aioquic's detector would exit again at once
    plain = RenoCongestionControl(max_datagram_size=MSS)
    t = Conn(plain).delay_exit(2.0)
    plain.ssthresh = None
    plain.on_rtt_measurement(now=t + 0.002, rtt=2 * RTT)
    assert plain.ssthresh is not None


def run_to_stop(conns: list[Conn], t: float = 1.0) -> float:
    """Rounds of every connection, one of them losing a packet each time, until the
    group stops synchronizing."""
    k = 0
    while not groups.log("g") or groups.log("g")[-1].action != "stop":
        assert k < 100
        for j, c in enumerate(conns):
            c.round(t, lose=j == k % len(conns))
        t += RTT + 0.001
        k += 1
    return t


@pytest.mark.parametrize("kind", [MquicReno, MquicCubic])
def test_stop_then_losses_do_not_sync(kind: type) -> None:
    params = Params.for_controller("reno" if kind is MquicReno else "cubic")
    conns = attached(kind, params)
    t = run_to_stop(conns)
    nfes = [r for r in groups.log("g") if r.event == "nfe"]
    assert [r.action for r in nfes] == ["sync"] * (len(nfes) - 1) + ["stop"]
    assert len(nfes) == stop_nfe(params, 3)
    group = groups.get("g")
    assert group is not None and group.in_congestion_avoidance and not group.synchronizing
    assert not any(mq(c).conn_state().in_slow_start for c in conns)
    before = [c.cc.congestion_window for c in conns]
    conns[1].send(t)
    conns[1].lose(t + RTT)
    rec = groups.log("g")[-1]
    assert (rec.action, rec.conn, rec.stopped, rec.after) == ("none", 1, True, rec.before)
    assert conns[1].cc.congestion_window < before[1]  # its own cut only
    assert [conns[0].cc.congestion_window, conns[2].cc.congestion_window] == [before[0], before[2]]


@pytest.mark.parametrize("kind", [MquicReno, MquicCubic])
def test_congestion_avoidance_equalization(kind: type) -> None:
    conns = attached(kind, Params.for_controller("reno" if kind is MquicReno else "cubic"))
    t = run_to_stop(conns)
    for c in conns:  # finish a group round with equal-enough windows
        c.round(t)
    t += 1.0
    for c, w in zip(conns, (12000, 24000, 36000), strict=True):  # windows drift apart
        mq(c)._mq_set(ConnState(w, w, False))
    n = len(groups.log("g"))
    for c in conns:  # one round each: send one packet after the round began, ACK it
        c.send(t, count=1)
        c.ack(t + RTT)
        if len(groups.log("g")) > n:
            break
    rec = groups.log("g")[-1]
    assert (rec.event, rec.action) == ("round", "mean") and rec.spread is not None and rec.spread > 1.5
    mean = round(sum(rec.before.values()) / 3)
    assert rec.after == {0: mean, 1: mean, 2: mean}
    assert [c.cc.congestion_window for c in conns] == [mean] * 3
    assert all(not mq(c).conn_state().in_slow_start for c in conns)
    if kind is MquicCubic:  # a new epoch from the new window: the old one does not undo it
        c = conns[2]
        c.send(t + 0.2, count=1)
        c.ack(t + 0.2 + RTT)
        assert mean <= c.cc.congestion_window <= mean + MSS


def test_no_equalization_in_slow_start_or_when_close() -> None:
    conns = attached(MquicReno, Params.for_controller("reno"))
    conns[0].cc.congestion_window = 40000  # spread 10 in slow start: left alone
    for k in range(3):
        for c in conns:
            c.round(1.0 + k)
    assert groups.log("g") == []


def test_cwnd_mode_means_on_slow_start_nfe() -> None:
    conns = attached(MquicReno, Params.for_controller("reno", sync="cwnd"))
    for k, c in enumerate(conns):
        for _ in range(k + 1):
            c.round(1.0)
    conns[2].round(3.0, lose=True)
    rec = groups.log("g")[-1]
    mean = round(sum(rec.before.values()) / 3)
    assert (rec.action, rec.conn) == ("mean", 2) and rec.after == {0: mean, 1: mean, 2: mean}
    assert [c.cc.congestion_window for c in conns] == [mean] * 3
    assert not mq(conns[2]).conn_state().in_slow_start  # nobody put back in slow start
    assert mq(conns[0]).conn_state().in_slow_start


def test_rounds_end_when_a_later_packet_is_acked() -> None:
    conns = attached(MquicReno, Params(n=2, sync="cwnd"), gid="g")
    a, b = conns
    group = groups.get("g")
    assert group is not None
    a.send(1.0, count=2)
    a.ack(1.05, count=1)  # nothing was sent before attach: the first ACK ends a round
    assert group._round_pending == {1}
    b.send(1.0, count=1)
    b.ack(1.05)  # the group's round is complete: the check starts a new one
    assert group._round_pending == {0, 1}
    a.ack(1.06)  # sent at 1.0, before a's round began (its latest packet then was sent at 1.0)
    assert group._round_pending == {0, 1}
    a.send(1.07, count=1)
    a.ack(1.12)
    assert group._round_pending == {1}


def test_attached_cubic_idle_reset_takes_iw_over_n() -> None:
    conns = attached(MquicCubic, Params.for_controller("cubic"))
    c = conns[0]
    for k in range(3):
        c.round(1.0 + k * 0.1)
    assert c.cc.congestion_window > 4000
    c.send(10.0, count=1)  # 2 s idle: CUBIC resets
    assert c.cc.congestion_window == 4000 and c.cc.ssthresh is None


# -- observer mode, initial window, packet counts, cwnd samples ----------------------------------


@pytest.mark.parametrize(("plain", "kind", "wrapped"), [(RenoCongestionControl, MquicReno, "reno"),
                                                         (CubicCongestionControl, MquicCubic, "cubic")])  # fmt: skip
def test_off_mode_is_the_plain_controller_with_nfes_logged(plain: type, kind: type, wrapped: str) -> None:
    expected = script(plain(max_datagram_size=MSS))
    cc = kind(max_datagram_size=MSS)
    cc.attach(groups.get_or_create("g", Params.for_controller(wrapped, n=1, sync="off"), MSS), 0)
    assert cc.congestion_window == 10 * MSS  # the whole IW
    assert script(cc) == expected  # attached but observed only: the same windows all along
    nfes = [r for r in groups.log("g") if r.event == "nfe"]
    assert len(nfes) >= 3 and {r.action for r in nfes} == {"none"} and all(r.gamma is None for r in nfes)
    assert [r.i for r in nfes] == list(range(1, len(nfes) + 1))
    assert all(r.kind in ("loss", "delay") for r in nfes) and nfes[0].kind == "delay"
    assert not any(r.event == "round" for r in groups.log("g"))


def test_off_mode_group_leaves_every_window_alone() -> None:
    conns = attached(MquicReno, Params.for_controller("reno", n=3, sync="off"))
    assert [c.cc.congestion_window for c in conns] == [10 * MSS] * 3
    t = 1.0
    for k, c in enumerate(conns):
        for _ in range(k + 1):
            t = c.round(t)
    before = [c.cc.congestion_window for c in conns]
    conns[2].round(t + 1.0, lose=True)
    rec = groups.log("g")[-1]
    assert (rec.event, rec.action, rec.conn) == ("nfe", "none", 2) and rec.cwnd_before is not None
    assert rec.cwnd_before > conns[2].cc.congestion_window  # its own cut only
    assert [c.cc.congestion_window for c in conns[:2]] == before[:2]


def test_iw_in_packets_sets_the_window() -> None:
    group = groups.get_or_create("g", Params.for_controller("cubic", n=2), MSS, 20 * MSS)
    assert group.iw_bytes == 20 * MSS
    ccs = [MquicCubic(max_datagram_size=MSS) for _ in range(2)]
    for c, cc in enumerate(ccs):
        cc.attach(group, c)
    assert [cc.congestion_window for cc in ccs] == [10 * MSS] * 2  # IW/N with IW = 20 packets
    with pytest.raises(ValueError, match="other parameters"):
        groups.get_or_create("g", Params.for_controller("cubic", n=2), MSS)  # another iw
    off = groups.get_or_create("o", Params.for_controller("reno", n=2, sync="off"), MSS, 4 * MSS)
    cc = MquicReno(max_datagram_size=MSS)
    cc.attach(off, 0)
    assert cc.congestion_window == 4 * MSS


def test_nfe_records_packets_since_join() -> None:
    conns = attached(MquicReno, Params.for_controller("reno", n=2), gid="g")
    a, b = conns
    a.send(0.5, count=7)  # before the others: counted from attach
    a.ack(0.55)
    b.send(0.5, count=3)
    b.ack(0.55)
    assert (mq(a).packets, mq(b).packets) == (7, 3)
    unattached = Conn(MquicReno(max_datagram_size=MSS))
    unattached.send(0.5, count=4)
    assert mq(unattached).packets == 0  # not counted while unattached
    a.send(1.0, count=5)
    a.ack(1.05, count=4)
    a.lose(1.05)
    rec = groups.log("g")[-1]
    assert (rec.event, rec.conn, rec.packets, rec.group_packets) == ("nfe", 0, 12, 15)
    entry = groups.entry(groups.get("g"))  # type: ignore[arg-type]
    b.cc.detach()  # a member that left still counts in the group's packets
    assert entry.group_packets() == 15 and entry.packets == {1: 3}


def test_cwnd_samples_at_round_ends_and_decisions() -> None:
    conns = attached(MquicReno, Params.for_controller("reno", n=2), gid="g")
    a, b = conns
    t = 1.0
    for _ in range(3):
        t = a.round(t)
        b.round(t - RTT)
    samples = groups.samples("g")
    # one per round end: at the ACK that ends the round (the first of the next window's)
    assert [(s["conn"], s["time"]) for s in samples] == [(c, pytest.approx(x)) for x in (1.05, 1.1, 1.15) for c in (0, 1)]
    assert samples[-1] == {"time": pytest.approx(1.15), "group": "g", "event": "cwnd", "conn": 1,
                           "cwnd": 21 * MSS, "ssthresh": None, "in_slow_start": True}  # fmt: skip
    a.round(t, lose=True)  # an NFE that synchronizes: both members sampled after the decision
    rec = groups.log("g")[-1]
    assert rec.action == "sync"
    new = samples[6:]
    assert {s["conn"] for s in new} == {0, 1} and all(s["time"] == rec.time for s in new[-2:])
    assert all(s["cwnd"] == rec.after[s["conn"]] for s in new[-2:])
    lines = groups.lines("g")
    assert [d["time"] for d in lines] == sorted(d["time"] for d in lines)
    assert {d["event"] for d in lines} == {"nfe", "cwnd"}


def test_cwnd_samples_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    assert controllers.MAX_SAMPLES == 20_000
    monkeypatch.setattr(controllers, "MAX_SAMPLES", 5)
    (a,) = attached(MquicReno, Params.for_controller("reno", n=1))
    t = 1.0
    for _ in range(8):
        t = a.round(t)
    entry = groups.entry(groups.get("g"))  # type: ignore[arg-type]
    assert len(entry.samples) == 5 and entry.samples_dropped == 3  # the first ones kept
    assert [s["time"] for s in entry.samples] == sorted(s["time"] for s in entry.samples)


# -- mquic-bbr ------------------------------------------------------------------------------------


class BbrConn(Conn):
    def burst_round(self, t: float, count: int, gap: float) -> float:
        """``count`` packets sent at ``t``, acknowledged ``gap`` apart from ``t + RTT``
        (a bottleneck of one packet per ``gap``); returns the last ACK's time."""
        self.send(t, count=count)
        now = t + RTT
        for _ in range(count):
            self.ack(now, count=1, rtt=None)
            now += gap
        return now - gap


def bbr_pair(sync: str) -> tuple[BbrConn, BbrConn]:
    """Two attached mquic-bbr controllers, each with one packet that stays in flight, so
    that the bursts are not application limited (the pipe never empties)."""
    group = groups.get_or_create("b", Params.for_controller("bbr", n=2, sync=sync), MSS)  # type: ignore[arg-type]
    out = []
    for c in range(2):
        cc = create_congestion_control(controllers.BBR, max_datagram_size=MSS)
        assert isinstance(cc, controllers.MquicBbr)
        cc.attach(group, c)
        conn = BbrConn(cc)
        conn.send(0.9, count=1)
        conn.flight = []  # never acknowledged
        out.append(conn)
    return out[0], out[1]


def drive_bbr(a: BbrConn, b: BbrConn, rounds: int = 6) -> None:
    t = 1.0
    for _ in range(rounds):  # a's path delivers 4x as fast as b's
        ta = a.burst_round(t, 20, 0.0005)
        tb = b.burst_round(t, 5, 0.002)
        t = max(ta, tb) + 0.001


def test_mquic_bbr_attaches_at_iw_over_n_and_gets_bbr_pacing() -> None:
    a, b = bbr_pair("full")
    assert [c.cc.congestion_window for c in (a, b)] == [5 * MSS] * 2 and a.cc.initial_cwnd == 5 * MSS  # type: ignore[attr-defined]
    rec = QuicPacketRecovery(congestion_control_algorithm=controllers.BBR, initial_rtt=0.1, max_datagram_size=MSS,
                             peer_completed_address_validation=True, send_probe=lambda: None)  # fmt: skip
    from dclab.endpoints.aioquic.bbr import BbrPacketPacer

    assert isinstance(rec._cc, controllers.MquicBbr) and isinstance(rec._pacer, BbrPacketPacer)
    off = groups.get_or_create("o", Params.for_controller("bbr", n=2, sync="off"), MSS)
    cc = controllers.MquicBbr(max_datagram_size=MSS)
    cc.attach(off, 0)
    assert cc.congestion_window == 10 * MSS


def test_mquic_bbr_rates_more_than_2x_apart_end_at_the_mean() -> None:
    a, b = bbr_pair("full")
    drive_bbr(a, b)
    rates = [r for r in groups.log("b") if r.event == "rate"]
    assert rates, "no rate equalization"
    first = rates[0]
    assert first.action == "mean" and first.spread is not None and first.spread > 2.0
    mean = sum(first.before.values()) / 2
    assert first.after == {0: pytest.approx(mean), 1: pytest.approx(mean)}
    # right after the last decision both estimates are its mean; in between, each BBR's own
    last = rates[-1]
    ca, cb = a.cc, b.cc
    assert isinstance(ca, controllers.MquicBbr) and isinstance(cb, controllers.MquicBbr)
    samples = [s for s in groups.samples("b") if s["time"] == last.time][-2:]  # the decision's
    assert {s["conn"] for s in samples} == {0, 1}
    assert all(s["btlbw_bps"] == round(last.after[0]) for s in samples)
    assert len(rates) >= 4  # every round: a's own samples take its filter back up, b's reports stay low
    assert all(r.spread is not None and r.spread > 2.0 for r in rates)


def test_mquic_bbr_off_mode_keeps_the_rates_apart() -> None:
    a, b = bbr_pair("off")
    drive_bbr(a, b)
    assert not [r for r in groups.log("b") if r.event == "rate"]
    assert a.cc.btlbw > 2 * b.cc.btlbw  # type: ignore[attr-defined]


def test_mquic_bbr_rate_decision_refreshes_pacing_and_cwnd() -> None:
    a, _ = bbr_pair("full")
    cc = a.cc
    assert isinstance(cc, controllers.MquicBbr)
    cc.filled_pipe, cc.rtprop, cc.pacing_gain, cc.cwnd_gain = True, RTT, 1.0, 2.0
    cc.congestion_window = 200 * MSS
    cc._mq_set_rate(100_000.0)
    assert cc.btlbw == cc.btlbw_filter.get() == 100_000.0 and cc.pacing_rate == 100_000.0
    assert cc.congestion_window == cc.target_cwnd == int(2.0 * 100_000.0 * RTT) + 3 * cc.send_quantum


def test_mquic_bbr_losses_are_nfes_that_change_nothing() -> None:
    a, b = bbr_pair("full")
    drive_bbr(a, b, rounds=2)
    before = b.cc.congestion_window
    a.send(5.0, count=4)
    a.ack(5.05, count=3, rtt=None)
    a.lose(5.05)
    nfes = [r for r in groups.log("b") if r.event == "nfe"]
    assert len(nfes) == 1 and nfes[0].action == "none" and nfes[0].conn == 0
    assert nfes[0].packets == mq_packets(a) and nfes[0].group_packets == mq_packets(a) + mq_packets(b)
    assert b.cc.congestion_window == before
    a.send(5.06, count=2)
    a.lose(5.1, count=1)  # sent after the recovery began: a new period, a second NFE
    assert len([r for r in groups.log("b") if r.event == "nfe"]) == 2


def mq_packets(c: Conn) -> int:
    return c.cc.packets  # type: ignore[attr-defined]


def test_merged_nfe_restores_the_hit_connection_and_keeps_gamma() -> None:
    conns = attached(MquicReno, Params.for_controller("reno", merge_within_rtt=True))
    for c in conns:
        c.round(1.0)
    conns[0].round(2.0, lose=True)  # an event: RTT samples of 50 ms, so it lasts until 2.1
    first = groups.log("g")[-1]
    gamma = first.gamma
    before = conns[1].cc.congestion_window
    conns[1].send(2.06)
    conns[1].lose(2.08)  # 30 ms after the first: the same event
    rec = groups.log("g")[-1]
    assert (rec.action, rec.within_rtt, rec.conn, rec.cwnd_before) == ("merged", True, 1, before)
    assert conns[1].cc.congestion_window == before and conns[1].cc.ssthresh is None  # its own halving undone
    group = groups.get("g")
    assert group is not None and group.gamma == gamma and group.nfes_within_rtt == 1
    conns[2].send(2.2)
    conns[2].lose(2.25)  # after the event: synchronized again
    assert groups.log("g")[-1].action == "sync" and group.gamma < gamma
