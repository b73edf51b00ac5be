"""mQUIC's aioquic controllers (docs/mquic.md, "The controllers"), driven by synthetic
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
