"""mQUIC's synchronization engine (docs/mquic.md): the γ recursion and the paper's Fig. 7,
NFE decisions, the stop, congestion-avoidance and BBR equalization, windows, membership,
parameter validation, cwnd-only mode and a hand-computed end-to-end sequence."""

from __future__ import annotations

import json
import math

import pytest

from dclab.endpoints.aioquic.mquic import ConnState, Group, Params, Record, gamma_sequence, next_gamma, stop_nfe

SS = None  # ssthresh of a connection in slow start (aioquic: none yet)
A, B, C = 0, 1, 2


def slow(cwnd: int) -> ConnState:
    return ConnState(cwnd, SS, True)


def ca(cwnd: int, ssthresh: int | None = None) -> ConnState:
    return ConnState(cwnd, cwnd if ssthresh is None else ssthresh, False)


def group(params: Params, **kw) -> Group:
    g = Group(params, **kw)
    for c in range(params.n):
        g.join(c)
    return g


def drive_until_stop(g: Group, limit: int = 200) -> list[str]:
    """Every member doubles between NFEs; connection i % N is hit and halves (β 0.5 or
    whatever: the cut does not change γ). Returns the actions, up to the first stop."""
    cwnd = {c: g.initial_cwnd for c in g.members}
    actions: list[str] = []
    for i in range(limit):
        cwnd = {c: 2 * w for c, w in cwnd.items()}
        hit = g.members[i % len(g.members)]
        states = {c: slow(w) for c, w in cwnd.items()}
        states[hit] = ca(int(cwnd[hit] * g.params.beta))
        d = g.on_nfe(hit, float(i), states)
        actions.append(d.record.action)
        cwnd = {c: d.updates[c].cwnd for c in cwnd}
        if d.record.action == "stop":
            break
    return actions


# -- the γ recursion and Fig. 7 ------------------------------------------------------------


def test_gamma_recursion_values_with_the_papers_parameters():
    p = Params.paper()
    assert gamma_sequence(p, 5, n=2) == pytest.approx([2.2 / 1.7, 1.1730104, 1.1017708, 1.0598652, 1.0352148], abs=1e-6)
    six = gamma_sequence(p, 18, n=6)
    assert six[0] == pytest.approx((0.7 + 5 * 1.5) / 5.7)
    # closed form: γ_i - δ_r = ((N-1)/(β+N-1))^i (γ_0 - δ_r)
    for i, g in enumerate(six, start=1):
        assert g - 1.0 == pytest.approx((5 / 5.7) ** i * 0.5)
    assert six[16] > 1.05 > six[17]
    assert next_gamma(p, 1, 1.5) == pytest.approx(1.0)  # one connection: δ_r at once


@pytest.mark.parametrize("n, nfe", [(2, 5), (6, 18)])
def test_fig7_connections_leave_slow_start_at_the_papers_nfe(n, nfe):
    p = Params.paper(n=n)
    assert stop_nfe(p) == nfe
    g = group(p, mss=1200)
    actions = drive_until_stop(g)
    assert actions == ["sync"] * (nfe - 1) + ["stop"]
    assert g.nfes == nfe and not g.synchronizing and g.in_congestion_avoidance


@pytest.mark.parametrize("n", [2, 3, 6])
def test_fig7_ratio_levels_near_two_thirds(n):
    p = Params.paper(n=n)
    ratios = [g / p.gamma0 for g in gamma_sequence(p, 300, n=n)]
    assert ratios[-1] == pytest.approx(2 / 3, abs=0.01)
    assert all(a > b for a, b in zip(ratios, ratios[1:60]))  # falls monotonically towards it
    # where the group leaves slow start the ratio is just under δ/γ_0 = 0.7
    stop = stop_nfe(p)
    assert stop is not None and 2 / 3 < ratios[stop - 1] < 0.7


def test_printed_eq7_with_delta_inside_the_recursion_never_stops():
    p = Params(beta=0.7, gamma0=1.5, delta=1.05, delta_r=1.05)
    for n in (2, 6):
        seq = gamma_sequence(p, 50, n=n)
        assert all(g > 1.05 for g in seq)  # the fixed point is δ itself
        assert stop_nfe(p, n=n, limit=50) is None
    g = group(Params(n=2, beta=0.7, gamma0=1.5, delta=1.05, delta_r=1.05))
    assert drive_until_stop(g, limit=50) == ["sync"] * 50
    assert g.synchronizing


# -- NFE decisions and the stop --------------------------------------------------------------


def test_nfe_sets_every_cwnd_to_the_scaled_group_total_and_restarts_slow_start():
    p = Params.paper()
    g = group(p)
    states = {0: ca(22400), 1: slow(32000), 2: slow(32000)}  # 0 was hit: 32000 * 0.7
    d = g.on_nfe(0, 1.25, states)
    gamma1 = (0.7 + 2 * 1.5) / 2.7
    each = round(86400 * (gamma1 / 1.5) / 3)
    assert each == 26311
    assert d.updates == {0: slow(each), 1: slow(each), 2: slow(each)}
    r = d.record
    assert (r.event, r.action, r.i, r.kind, r.conn, r.time, r.stopped) == ("nfe", "sync", 1, "loss", 0, 1.25, False)
    assert r.gamma == pytest.approx(gamma1) and g.gamma == pytest.approx(gamma1)
    assert r.before == {0: 22400, 1: 32000, 2: 32000} and r.after == {0: each, 1: each, 2: each}


def test_after_the_stop_every_connection_leaves_slow_start_and_nfes_no_longer_sync():
    p = Params.paper(n=2)
    g = group(p)
    for i in range(4):
        assert g.on_nfe(i % 2, i, {0: ca(10000), 1: slow(20000)} if i % 2 == 0 else {0: slow(20000), 1: ca(10000)}).record.action == "sync"
    d = g.on_nfe(0, 4.0, {0: ca(14000), 1: slow(20000)}, kind="delay")
    assert d.record.action == "stop" and d.record.stopped and d.record.gamma == pytest.approx(1.0352148, abs=1e-6)
    assert d.updates == {0: ConnState(14000, 14000, False), 1: ConnState(20000, 20000, False)}  # no cwnd change at the stop
    assert not g.synchronizing
    later = g.on_nfe(1, 5.0, {0: ca(15000), 1: ca(10500, 10500)})
    assert later.updates == {} and later.record.action == "none" and later.record.gamma is None
    assert later.record.i == 6 and later.record.before == later.record.after == {0: 15000, 1: 10500}
    assert g.gamma == pytest.approx(1.0352148, abs=1e-6)  # γ frozen at the stop


def test_synced_cwnd_never_goes_below_the_minimum_window():
    g = group(Params.for_controller("reno"), mss=1200)
    d = g.on_nfe(0, 0.0, {0: ca(2400), 1: slow(2400), 2: slow(2400)})
    assert round(7200 * 1.8 / 2.0 / 3) == 2160
    assert {u.cwnd for u in d.updates.values()} == {2400}


# -- congestion-avoidance and BBR equalization -------------------------------------------------


def ca_group(n: int = 2) -> Group:
    """A full-mode group already out of slow start: γ_1 (1.294 for N=2) is below this δ."""
    g = group(Params(n=n, beta=0.7, gamma0=1.5, delta=1.4, delta_r=1.0))
    states = {c: ca(10000) for c in g.members}
    assert g.on_nfe(0, 0.0, states).record.action == "stop"
    return g


def test_ca_equalization_threshold_is_one_and_a_half():
    g = ca_group()
    assert g.on_round(0, 1.0, {0: ca(14900), 1: ca(10000)}) is None  # waits for connection 1
    assert g.on_round(1, 1.1, {0: ca(14900), 1: ca(10000)}) is None  # 1.49: no action
    assert g.on_round(0, 2.0, {0: ca(15000), 1: ca(10000)}) is None
    assert g.on_round(1, 2.1, {0: ca(15000), 1: ca(10000)}) is None  # exactly 1.5: no action
    assert g.on_round(1, 3.0, {0: ca(15100), 1: ca(10000)}) is None
    d = g.on_round(0, 3.1, {0: ca(15100, 14000), 1: ca(10000, 9000)})  # 1.51
    assert d is not None
    # both stay in congestion avoidance: ssthresh never above the new cwnd
    assert d.updates == {0: ConnState(12550, 12550, False), 1: ConnState(12550, 9000, False)}
    assert (d.record.event, d.record.action, d.record.conn, d.record.stopped) == ("round", "mean", 0, True)
    assert d.record.spread == pytest.approx(1.51) and d.record.after == {0: 12550, 1: 12550}


def test_no_ca_equalization_during_slow_start_synchronization():
    g = group(Params.paper(n=2))
    assert g.on_round(0, 0.1, {0: slow(40000), 1: slow(10000)}) is None
    assert g.on_round(1, 0.1, {0: slow(40000), 1: slow(10000)}) is None


def test_rounds_need_every_member_once():
    g = ca_group(3)
    s = {0: ca(30000), 1: ca(10000), 2: ca(10000)}
    assert g.on_round(0, 1.0, s) is None and g.on_round(0, 1.1, s) is None and g.on_round(1, 1.2, s) is None
    d = g.on_round(2, 1.3, s)
    assert d is not None and {u.cwnd for u in d.updates.values()} == {16667}


def test_bbr_rate_threshold_is_two():
    g = group(Params.paper(n=2))
    assert g.on_rate(0, 0.1, 10e6) is None
    assert g.on_rate(1, 0.1, 5e6) is None  # exactly 2.0
    assert g.on_rate(0, 0.2, 10e6) is None
    assert g.on_rate(1, 0.2, 5.03e6) is None  # 1.99
    assert g.on_rate(1, 0.3, 4.9e6) is None  # waits for connection 0
    d = g.on_rate(0, 0.3, 10e6)  # 2.04
    assert d is not None and d.rates == {0: pytest.approx(7.45e6), 1: pytest.approx(7.45e6)}
    assert d.record.event == "rate" and d.record.before == {0: 10e6, 1: 4.9e6} and d.record.spread == pytest.approx(10 / 4.9)
    assert g.on_rate(1, 0.4, 0.0) is None
    d = g.on_rate(0, 0.4, 1e6)  # a connection that delivered nothing: infinitely apart
    assert d is not None and d.rates == {0: 5e5, 1: 5e5} and d.record.spread == math.inf
    with pytest.raises(ValueError, match="delivery_rate_bps"):
        g.on_rate(0, 0.5, -1.0)


# -- windows, membership, parameters ------------------------------------------------------------


def test_initial_window_is_iw_over_n_with_the_minimum_window_as_floor():
    assert Group(Params.paper(n=3), mss=1200).initial_cwnd == 4000
    assert Group(Params.paper(n=3), mss=1200).join(0) == 4000
    assert Group(Params.paper(n=3), mss=1460, iw_bytes=14600).initial_cwnd == 4866
    assert Group(Params.paper(n=1), mss=1200).initial_cwnd == 12000
    assert Group(Params.paper(n=6), mss=1200).initial_cwnd == 2400  # 2000 is below 2 datagrams


def test_join_and_leave():
    g = Group(Params.paper(n=3), name="obj")
    assert [g.join(c) for c in (0, 1, 2)] == [4000] * 3
    with pytest.raises(ValueError, match="full"):
        g.join(3)
    with pytest.raises(ValueError, match="already"):
        g.join(0)
    with pytest.raises(ValueError, match="^conn:"):
        g.join("e")  # type: ignore[arg-type]
    g.leave(1)
    assert list(g.members) == [0, 2]
    with pytest.raises(ValueError, match="not in group 'obj'"):
        g.leave(1)
    with pytest.raises(ValueError, match="states"):
        g.on_nfe(0, 0.0, {0: ca(7000), 1: slow(10000), 2: slow(10000)})
    d = g.on_nfe(0, 0.0, {0: ca(7000), 2: slow(10000)})
    gamma = (0.7 + 1.5) / 1.7  # the recursion runs with the two members left
    assert d.record.gamma == pytest.approx(gamma)
    assert d.updates[0].cwnd == round(17000 * gamma / 1.5 / 2)
    g.join(1)  # a connection may join again while there is room
    assert list(g.members) == [0, 2, 1]


def test_aioquic_presets_match_the_installed_controllers():
    from aioquic.quic.congestion.base import K_INITIAL_WINDOW, K_MINIMUM_WINDOW
    from aioquic.quic.congestion.cubic import K_CUBIC_LOSS_REDUCTION_FACTOR
    from aioquic.quic.congestion.reno import K_LOSS_REDUCTION_FACTOR

    reno, cubic, paper = Params.for_controller("reno"), Params.for_controller("cubic"), Params.paper()
    assert (reno.beta, reno.gamma0) == (K_LOSS_REDUCTION_FACTOR, 2.0)
    assert (cubic.beta, cubic.gamma0) == (K_CUBIC_LOSS_REDUCTION_FACTOR, 2.0)
    assert (paper.beta, paper.gamma0, paper.delta, paper.delta_r, paper.ca_ratio, paper.rate_ratio) == (0.7, 1.5, 1.05, 1.0, 1.5, 2.0)
    assert reno.min_window_packets == K_MINIMUM_WINDOW and Group(reno).iw_bytes == K_INITIAL_WINDOW * 1200
    assert stop_nfe(reno) == 14  # γ_i - 1 = 0.8^i with N=3
    assert Params.for_controller("cubic", n=5, sync="cwnd").n == 5


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"beta": 0.0}, "beta"),
        ({"beta": 1.2}, "beta"),
        ({"beta": math.nan}, "beta"),
        ({"gamma0": 1.05}, "gamma0"),
        ({"delta": 0.9}, "delta"),
        ({"delta_r": 0.0}, "delta_r"),
        ({"delta_r": -1.0, "delta": -0.5}, "delta_r"),
        ({"n": 0}, "n"),
        ({"n": 65}, "n"),
        ({"n": True}, "n"),
        ({"n": 2.0}, "n"),
        ({"ca_ratio": 1.0}, "ca_ratio"),
        ({"rate_ratio": 0.5}, "rate_ratio"),
        ({"rate_ratio": math.inf}, "rate_ratio"),
        ({"sync": "rate"}, "sync"),
        ({"min_window_packets": 0}, "min_window_packets"),
    ],
)
def test_invalid_params_are_refused_naming_the_field(kw, field):
    with pytest.raises(ValueError, match=rf"^{field}:"):
        Params(**kw)


def test_invalid_group_arguments_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="^controller:"):
        Params.for_controller("vegas")
    with pytest.raises(ValueError, match="^mss:"):
        Group(Params(), mss=0)
    with pytest.raises(ValueError, match="^iw_bytes:"):
        Group(Params(), iw_bytes=-1)
    g = group(Params(n=2))
    with pytest.raises(ValueError, match="^kind:"):
        g.on_nfe(0, 0.0, {0: ca(1000), 1: slow(1000)}, kind="ecn")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^states\[1\]\.cwnd:"):
        g.on_nfe(0, 0.0, {0: ca(1000), 1: slow(0)})
    with pytest.raises(ValueError, match="not in group"):
        g.on_round(7, 0.0, {0: ca(1000), 1: slow(1000)})


# -- cwnd-only mode -------------------------------------------------------------------------------


def test_cwnd_mode_shares_the_mean_in_slow_start_and_never_forces_an_exit():
    g = group(Params.paper(n=3, sync="cwnd"))
    assert not g.synchronizing
    d = g.on_nfe(0, 0.1, {0: ca(22400), 1: slow(32000), 2: slow(32000)})
    assert d.record.action == "mean" and d.record.gamma is None
    # the hit connection stays where its controller put it; the others stay in slow start
    assert d.updates == {0: ConnState(28800, 22400, False), 1: slow(28800), 2: slow(28800)}
    # a second NFE of a connection already out of slow start is not shared
    d = g.on_nfe(0, 0.2, {0: ca(20160), 1: slow(57600), 2: slow(57600)})
    assert d.updates == {} and d.record.action == "none"
    assert g.on_round(0, 0.3, {0: ca(20000), 1: slow(57600), 2: slow(57600)}) is None
    # many NFEs later a connection still in slow start is still in slow start
    for i in range(20):
        d = g.on_nfe(0, 1.0 + i, {0: ca(20000), 1: slow(57600), 2: slow(57600)})
        assert d.updates == {}
    d = g.on_nfe(1, 30.0, {0: ca(20000), 1: ca(40320), 2: slow(57600)})
    assert d.record.action == "mean" and d.updates[2] == slow(39307) and d.updates[1] == ca(39307)
    assert not g.in_congestion_avoidance
    d = g.on_nfe(2, 31.0, {0: ca(20000), 1: ca(40000), 2: ca(40000)})
    assert d.record.action == "mean" and g.in_congestion_avoidance and d.record.stopped
    s = {0: ca(20000), 1: ca(40000), 2: ca(40000)}
    assert g.on_round(0, 32.0, s) is None and g.on_round(1, 32.0, s) is None
    d = g.on_round(2, 32.0, s)  # then congestion-avoidance equalization, as in full mode
    assert d is not None and {u.cwnd for u in d.updates.values()} == {33333}


# -- a synthetic end-to-end sequence ----------------------------------------------------------------


def test_three_connections_through_slow_start_and_congestion_avoidance():
    # NewReno-like (β 0.5, γ_0 2.0) with δ 1.6 so that the third NFE stops the synchronization:
    # γ_1 = (0.5 + 2*2.0)/2.5 = 1.8, γ_2 = (0.5 + 2*1.8)/2.5 = 1.64, γ_3 = (0.5 + 2*1.64)/2.5 = 1.512
    g = Group(Params(n=3, beta=0.5, gamma0=2.0, delta=1.6, delta_r=1.0), mss=1200, name="e2e")
    assert [g.join(c) for c in (A, B, C)] == [4000, 4000, 4000]
    log: list[Record] = []

    # NFE 1, A loses at 32000 and halves: 80000 * (1.8/2.0) / 3 = 24000 each, A back in slow start
    d = g.on_nfe(A, 0.1, {A: ca(16000), B: slow(32000), C: slow(32000)})
    log.append(d.record)
    assert d.updates == {A: slow(24000), B: slow(24000), C: slow(24000)}
    s = {c: slow(30000) for c in (A, B, C)}
    assert [g.on_round(c, 0.15, s) for c in (A, B, C)] == [None, None, None]  # slow start: no equalization

    # NFE 2, B leaves slow start on delay at 48000 (no cut): 144000 * (1.64/2.0) / 3 = 39360 each
    d = g.on_nfe(B, 0.2, {A: slow(48000), B: ca(48000), C: slow(48000)}, kind="delay")
    log.append(d.record)
    assert d.updates == {A: slow(39360), B: slow(39360), C: slow(39360)}

    # NFE 3, C loses at 78720: γ_3 = 1.512 <= 1.6, so everyone leaves slow start where it is
    d = g.on_nfe(C, 0.3, {A: slow(78720), B: slow(78720), C: ca(39360)})
    log.append(d.record)
    assert d.updates == {A: ca(78720), B: ca(78720), C: ca(39360)}
    assert g.in_congestion_avoidance

    # a round later: 80000 / 40000 = 2.0 > 1.5, so the mean 200000 / 3 = 66667 (rounded)
    s = {A: ca(80000, 78720), B: ca(80000, 78720), C: ca(40000, 39360)}
    assert g.on_round(A, 0.4, s) is None and g.on_round(B, 0.4, s) is None
    eq = g.on_round(C, 0.41, s)
    assert eq is not None
    log.append(eq.record)
    assert eq.updates == {A: ca(66667), B: ca(66667), C: ca(66667, 39360)}

    # NFE 4 in congestion avoidance: A halves, nothing is shared
    d = g.on_nfe(A, 0.5, {A: ca(33333), B: ca(66667), C: ca(66667, 39360)})
    log.append(d.record)
    assert d.updates == {} and d.record.i == 4

    # 60000 / 40000 = 1.5 exactly: no action; a round later 61000 / 40000 > 1.5: 162000 / 3 = 54000
    s = {A: ca(40000, 33333), B: ca(60000, 60000), C: ca(60000, 39360)}
    assert [g.on_round(c, 0.6, s) for c in (C, B, A)] == [None, None, None]
    s = {A: ca(40000, 33333), B: ca(61000, 60000), C: ca(61000, 39360)}
    assert g.on_round(B, 0.7, s) is None and g.on_round(C, 0.7, s) is None
    eq = g.on_round(A, 0.7, s)
    assert eq is not None
    log.append(eq.record)
    assert eq.updates == {A: ca(54000, 33333), B: ca(54000), C: ca(54000, 39360)}

    assert [(r.event, r.action, r.i) for r in log] == [
        ("nfe", "sync", 1), ("nfe", "sync", 2), ("nfe", "stop", 3), ("round", "mean", None), ("nfe", "none", 4), ("round", "mean", None),
    ]  # fmt: skip
    assert [r.gamma for r in log[:3]] == pytest.approx([1.8, 1.64, 1.512])
    lines = [json.dumps(r.to_dict()) for r in log]
    first = json.loads(lines[0])
    assert first == {
        "time": 0.1, "group": "e2e", "event": "nfe", "conn": 0, "action": "sync", "stopped": False, "i": 1, "kind": "loss",
        "gamma": pytest.approx(1.8), "before": {"0": 16000, "1": 32000, "2": 32000}, "after": {"0": 24000, "1": 24000, "2": 24000},
    }  # fmt: skip
    assert json.loads(lines[3])["spread"] == 2.0 and "i" not in json.loads(lines[3])


# -- observer mode (sync "off"), initial window, NFE counters ------------------------------------


def test_off_mode_observes_and_changes_nothing():
    g = group(Params.for_controller("reno", n=3, sync="off"), mss=1200)
    assert g.initial_cwnd == 12000 and not g.synchronizing  # the full IW each, not IW/N
    assert Group(Params(n=3, sync="off"), mss=1200).join(0) == 12000
    for i in range(6):  # NFEs in slow start: counted and logged, never synchronized
        states = {0: slow(40000), 1: slow(30000), 2: slow(20000)}
        states[i % 3] = ca(10000)
        d = g.on_nfe(i % 3, float(i), states, packets=100 + i, group_packets=300 + i, cwnd_before=20000)
        assert d.updates == {}
        r = d.record
        assert (r.event, r.action, r.gamma, r.i, r.packets, r.group_packets, r.cwnd_before) == (
            "nfe", "none", None, i + 1, 100 + i, 300 + i, 20000)  # fmt: skip
        assert r.before == r.after
    assert g.nfes == 6 and g.gamma == g.params.gamma0
    # congestion avoidance with windows far apart: no equalization of cwnds or rates
    far = {0: ca(40000), 1: ca(10000), 2: ca(10000)}
    for round_ in range(2):
        assert all(g.on_round(c, 10.0 + round_, far) is None for c in (0, 1, 2))
        assert all(g.on_rate(c, 10.0 + round_, rate) is None for c, rate in ((0, 10e6), (1, 1e6), (2, 0.0)))


def test_nfe_counters_are_copied_into_the_record_and_validated():
    g = group(Params.paper(n=2))
    d = g.on_nfe(0, 1.0, {0: ca(7000), 1: slow(10000)}, packets=12, group_packets=30, cwnd_before=10000)
    assert d.record.action == "sync" and (d.record.packets, d.record.group_packets, d.record.cwnd_before) == (12, 30, 10000)
    line = d.record.to_dict()
    assert (line["packets"], line["group_packets"], line["cwnd_before"]) == (12, 30, 10000)
    assert "packets" not in g.on_nfe(1, 2.0, {0: slow(9000), 1: ca(6000)}).record.to_dict()  # omitted when not given
    with pytest.raises(ValueError, match="^packets:"):
        g.on_nfe(0, 3.0, {0: ca(7000), 1: slow(10000)}, packets=-1)


def test_note_nfe_logs_without_synchronizing_in_full_mode():
    g = group(Params.paper(n=2))
    r = g.note_nfe(0, 1.0, {0: ca(7000), 1: slow(10000)}, packets=5, group_packets=9, cwnd_before=10000)
    assert (r.event, r.action, r.i, r.gamma, r.packets, r.group_packets, r.cwnd_before) == ("nfe", "none", 1, None, 5, 9, 10000)
    assert g.nfes == 1 and g.synchronizing and g.gamma == g.params.gamma0  # γ untouched
    assert g.on_nfe(1, 2.0, {0: slow(7000), 1: ca(7000)}).record.i == 2  # the count goes on


def test_iw_sets_the_initial_window_per_mode():
    mss = 1252
    assert Group(Params(n=3), mss=mss, iw_bytes=20 * mss).initial_cwnd == 20 * mss // 3 == 8346
    assert Group(Params(n=3, sync="cwnd"), mss=mss, iw_bytes=20 * mss).join(0) == 8346
    assert Group(Params(n=3, sync="off"), mss=mss, iw_bytes=20 * mss).join(0) == 20 * mss
    assert Group(Params(n=3, sync="off"), mss=mss, iw_bytes=1 * mss).initial_cwnd == 2 * mss  # the floor
    assert Group(Params(n=2), mss=mss, iw_bytes=4 * mss).initial_cwnd == 2 * mss


def test_sync_modes_and_bbr_preset():
    with pytest.raises(ValueError, match="^sync:"):
        Params(sync="sometimes")  # type: ignore[arg-type]
    assert Params(sync="off").sync == "off"
    bbr = Params.for_controller("bbr", n=2, sync="off")
    assert (bbr.n, bbr.sync, bbr.rate_ratio, bbr.gamma0) == (2, "off", 2.0, 2.0)


# -- NFEs within one RTT (Params.merge_within_rtt) ---------------------------------------------


def test_nfes_within_one_rtt_are_marked_and_merged_only_when_asked():
    for merge in (False, True):
        g = group(Params.for_controller("reno", merge_within_rtt=merge))
        d1 = g.on_nfe(A, 1.0, {A: slow(6000), B: slow(12000), C: slow(12000)}, rtt=0.05)
        assert (d1.record.action, d1.record.within_rtt, d1.record.gamma) == ("sync", False, g.gamma)
        gamma1, each = g.gamma, d1.updates[B].cwnd
        # B's delay exit 30 ms later: the same network event (its window before: 20000)
        prior = slow(20000)
        d2 = g.on_nfe(B, 1.03, {A: slow(each), B: ca(20000), C: slow(each)}, "delay", rtt=0.05, prior=prior,
                      cwnd_before=20000)  # fmt: skip
        assert d2.record.within_rtt is True and g.nfes_within_rtt == 1 and g.nfes == 2
        if merge:  # undone, no γ step, nobody else touched
            assert d2.record.action == "merged" and d2.updates == {B: prior} and g.gamma == gamma1
        else:
            assert d2.record.action == "sync" and g.gamma < gamma1
        # 51 ms after the first NFE: a new event (the window is the first NFE's RTT)
        d3 = g.on_nfe(C, 1.051, {c: slow(each) for c in (A, B, C)}, rtt=0.01)
        assert d3.record.within_rtt is False and d3.record.action == "sync"
        d4 = g.on_nfe(A, 1.06, {c: slow(each) for c in (A, B, C)}, rtt=0.01)
        assert d4.record.within_rtt is True and g.nfes_within_rtt == 2
        assert json.loads(json.dumps(d4.record.to_dict()))["within_rtt"] is True


def test_within_rtt_without_an_rtt_and_in_observer_and_stopped_groups():
    g = group(Params(sync="off", merge_within_rtt=True))
    rec = g.on_nfe(A, 1.0, {c: slow(12000) for c in (A, B, C)}).record
    assert rec.within_rtt is None and "within_rtt" not in rec.to_dict()  # no RTT: no event window
    g.on_nfe(A, 2.0, {c: slow(12000) for c in (A, B, C)}, rtt=0.1)
    d = g.on_nfe(B, 2.05, {c: slow(12000) for c in (A, B, C)}, rtt=0.1, prior=slow(24000))
    assert (d.record.action, d.record.within_rtt, d.updates) == ("none", True, {})  # observers are never changed
    note = g.note_nfe(C, 2.06, {c: slow(12000) for c in (A, B, C)}, rtt=0.1)
    assert note.within_rtt is True and g.nfes_within_rtt == 2
    # after the stop nothing is synchronized, so nothing is merged either
    s = group(Params.for_controller("reno", merge_within_rtt=True))
    drive_until_stop(s)
    s.on_nfe(A, 10.0, {c: ca(12000) for c in (A, B, C)}, rtt=0.1)
    d = s.on_nfe(B, 10.01, {c: ca(12000) for c in (A, B, C)}, rtt=0.1, prior=ca(24000))
    assert (d.record.action, d.record.within_rtt) == ("none", True)
    with pytest.raises(ValueError, match="rtt"):
        s.on_nfe(A, 11.0, {c: ca(12000) for c in (A, B, C)}, rtt=-1.0)
    with pytest.raises(ValueError, match="prior.cwnd"):
        s.on_nfe(A, 12.0, {c: ca(12000) for c in (A, B, C)}, prior=ca(0))
    with pytest.raises(ValueError, match="merge_within_rtt"):
        Params(merge_within_rtt=1)  # type: ignore[arg-type]
