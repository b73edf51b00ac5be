"""The workload interface without network: Workload.errors, round-robin assignment,
Stack.check (one place for congestion control and workload), the stack registry, each
stack's declared capabilities, TransferResult.from_parts, and run refusing before it
starts anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dclab.endpoints import STACKS, get_stack
from dclab.endpoints.base import (
    MAX_CONNECTIONS,
    MAX_OBJECTS,
    Capabilities,
    Certs,
    ClientSpec,
    ConnectionResult,
    ObjectResult,
    ServerSpec,
    Stack,
    StackError,
    TransferResult,
    Workload,
)


class Toy(Stack):
    """A stack declaring little, to check Stack.check against."""

    name = "toy"
    transport = "udp"
    ccs = ("reno", "cubic")
    capabilities = Capabilities(max_connections=2, max_objects=4, streams=("parallel",), cc_options=("pacing",))

    def missing(self) -> list[str]:
        return []

    def server_command(self, spec: ServerSpec) -> list[str]:
        return []

    def run(self, spec: ClientSpec, netns_exec: list[str]) -> TransferResult:
        return self.refusal(spec) or TransferResult(ok=True, bytes=0)


# Workload ---------------------------------------------------------------------------


def test_default_and_single():
    assert Workload().errors() == []
    w = Workload.single(12345)
    assert (w.objects, w.connections, w.total_bytes) == ((12345,), 1, 12345)
    assert w.errors() == []


def test_round_robin_and_assignment():
    w = Workload(objects=(1, 2, 3, 4, 5, 6, 7), connections=3)
    assert [w.connection_of(i) for i in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert w.objects_of(0) == [0, 3, 6] and w.objects_of(2) == [2, 5]
    assert w.max_objects_per_connection() == 3
    w = Workload(objects=(1, 2, 3), connections=2, assignment=(1, 1, 0))
    assert [w.connection_of(i) for i in range(3)] == [1, 1, 0]
    assert w.objects_of(1) == [0, 1] and w.errors() == []


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"connections": 0}, ["connections", "1 to 64", "got 0"]),
        ({"connections": MAX_CONNECTIONS + 1, "objects": (1,) * 65}, ["connections", "got 65"]),
        ({"objects": ()}, ["objects", "got 0"]),
        ({"objects": (1,) * (MAX_OBJECTS + 1)}, ["objects", f"got {MAX_OBJECTS + 1}"]),
        ({"objects": (10, -1)}, ["sizes", ">= 0"]),
        ({"objects": (10, 2.5)}, ["sizes", "whole"]),
        ({"objects": (1, 2), "connections": 2, "assignment": (0,)}, ["assignment", "one connection per object", "got 1"]),
        ({"objects": (1, 2), "connections": 2, "assignment": (0, 2)}, ["assignment", "0 to 1"]),
        ({"objects": (1, 2), "connections": 3}, ["connections", "none on 2"]),
        ({"objects": (1, 2), "connections": 2, "assignment": (0, 0)}, ["none on 1"]),
        ({"streams": "interleaved"}, ["streams", "interleaved"]),
        ({"cc_options": ({}, {})}, ["cc_options", "one entry per connection"]),
        ({"zero_rtt": True}, ["zero_rtt", "needs resumption"]),
        ({"objects": (5, 0, 3), "ranged": True}, ["ranged", "at least 1 byte", "object 1"]),
        ({"resumption": True, "zero_rtt": True, "preconnect": True}, ["preconnect", "zero_rtt"]),
    ],
)
def test_workload_errors_name_the_problem(kw, words):
    errs = Workload(**kw).errors()
    assert len(errs) == 1, errs
    for word in words:
        assert word in errs[0]


def test_wrong_types_are_errors_not_exceptions():
    w = Workload.from_dict({"objects": [1, 2], "connections": "2", "zero_rtt": 1})
    errs = w.errors()
    assert any("connections: must be int (got str)" in e for e in errs)
    assert any("zero_rtt: must be bool (got int)" in e for e in errs)
    assert Workload(connections=True).errors() == ["connections: must be int (got bool)"]  # type: ignore[arg-type]
    errs = Workload.from_dict({"objects": [1], "ranged": 1, "preconnect": "yes"}).errors()
    assert errs == ["ranged: must be bool (got int)", "preconnect: must be bool (got str)"]


@pytest.mark.parametrize(
    "size, n, objects",
    [(10, 3, (4, 3, 3)), (9, 3, (3, 3, 3)), (3_000_001, 3, (1_000_001, 1_000_000, 1_000_000)), (7, 1, (7,)),
     (5, 4, (2, 1, 1, 1))],
)  # fmt: skip
def test_ranges_split_one_body(size, n, objects):
    w = Workload.ranges(size, n)
    assert w.objects == objects and w.total_bytes == size
    assert (w.connections, w.assignment, w.ranged, w.preconnect) == (n, tuple(range(n)), True, False)
    assert w.errors() == []
    assert [w.connection_of(i) for i in range(n)] == list(range(n))
    # consecutive, inclusive, covering 0..size-1 exactly; every request names the whole body
    rs = w.byte_ranges()
    assert rs[0][0] == 0 and rs[-1][1] == size - 1
    assert all(b[0] == a[1] + 1 for a, b in zip(rs, rs[1:]))
    assert [last - first + 1 for first, last in rs] == list(objects)
    assert {w.path_size(i) for i in range(n)} == {size}


def test_ranges_details():
    assert Workload.ranges(10, 3).byte_ranges() == [(0, 3), (4, 6), (7, 9)]
    w = Workload.ranges(10, 2, preconnect=True, streams="sequential")
    assert w.preconnect and w.streams == "sequential" and w.objects == (5, 5)
    # not ranged: no ranges, each object its own body
    plain = Workload(objects=(4, 6))
    assert plain.byte_ranges() == [None, None] and [plain.path_size(i) for i in range(2)] == [4, 6]
    # more ranges than bytes: a 0-byte range, refused by errors
    errs = Workload.ranges(2, 3).errors()
    assert len(errs) == 1 and "ranged: every range needs at least 1 byte (not object 2)" in errs[0]
    for n in (0, -1):
        with pytest.raises(ValueError, match="n must be"):
            Workload.ranges(10, n)
    # preconnect alone, ranged with several objects per connection: both fine
    assert Workload(objects=(1, 2), preconnect=True).errors() == []
    assert Workload(objects=(1, 2, 3), connections=2, ranged=True).errors() == []


def test_round_trip_through_json():
    w = Workload(objects=(5, 0, 7), connections=2, assignment=(1, 0, 1), streams="sequential", resumption=True,
                 zero_rtt=True, cc_options=({"a": "1"}, {}))  # fmt: skip
    assert Workload.from_dict(json.loads(json.dumps(w.to_dict()))) == w
    r = Workload.ranges(3_000_001, 3, preconnect=True, cc_options=({"a": "1"}, {}, {}))
    d = json.loads(json.dumps(r.to_dict()))
    assert d["ranged"] is True and d["preconnect"] is True and d["assignment"] == [0, 1, 2]
    assert Workload.from_dict(d) == r
    assert Workload.from_dict({"objects": [3]}).ranged is False
    assert Workload.from_dict({"objects": [3]}) == Workload.single(3)
    with pytest.raises(ValueError, match="objekts"):
        Workload.from_dict({"objekts": [3]})
    with pytest.raises(TypeError, match="JSON object"):
        Workload.from_dict([3])  # type: ignore[arg-type]


# Stack.check ------------------------------------------------------------------------


def test_check_cc():
    toy = Toy()
    assert toy.check(None) == "reno" and toy.check("cubic") == "cubic"
    with pytest.raises(StackError) as e:
        toy.check("vegas")
    assert "vegas" in str(e.value) and "reno, cubic" in str(e.value) and "--cc" in str(e.value)


@pytest.mark.parametrize(
    "wl, words",
    [
        (Workload(objects=(1, 2, 3), connections=3), ["3 connections", "at most 2"]),
        (Workload(objects=(1,) * 5, connections=1), ["5 objects", "at most 4"]),
        (Workload(objects=(1, 2), streams="sequential"), ["sequential streams", "offers parallel"]),
        (Workload(objects=(1, 2), connections=2, assignment=(0, 0)), ["none on 1"]),
        (Workload(objects=(1,), resumption=True), ["session resumption", "not offered"]),
        (Workload(objects=(1,), resumption=True, zero_rtt=True), ["0-RTT", "not offered"]),
        (Workload(objects=(1,), cc_options=({"beta": "0.7"},)), ["beta", "accepts pacing"]),
        (Workload.ranges(10, 2), ["byte ranges (not offered)"]),
        (Workload(objects=(1,), preconnect=True), ["pre-established connections (not offered)"]),
    ],
)
def test_check_refuses_beyond_capabilities_naming_what(wl, words):
    with pytest.raises(StackError) as e:
        Toy().check("reno", wl)
    msg = str(e.value)
    assert msg.startswith("toy cannot run this workload")
    for word in words:
        assert word in msg, msg


def test_check_refuses_a_malformed_workload_without_crashing():
    with pytest.raises(StackError, match="connections: must be int"):
        Toy().check("reno", Workload.from_dict({"objects": [1], "connections": "1"}))
    with pytest.raises(StackError, match="cc_options: each entry"):
        Toy().check("reno", Workload.from_dict({"objects": [1], "cc_options": ["pacing"]}))


def test_check_accepts_within_capabilities():
    toy = Toy()
    assert toy.check("cubic", Workload(objects=(1, 2, 3, 4), connections=2, cc_options=({"pacing": "on"}, {}))) == "cubic"
    # sequential does not matter while no connection carries two objects
    assert toy.check(None, Workload(objects=(1, 2), connections=2, streams="sequential")) == "reno"


def test_check_reports_every_problem_at_once():
    with pytest.raises(StackError) as e:
        Toy().check("reno", Workload(objects=(1,) * 5, connections=3, resumption=True))
    msg = str(e.value)
    assert "3 connections" in msg and "5 objects" in msg and "resumption" in msg


# Registry and the real stacks -------------------------------------------------------


def test_registry():
    assert list(STACKS) == ["aioquic", "aioquic-2020", "mptcp", "ngtcp2", "noq", "quic-go", "quinn", "tcp"]
    for name in STACKS:
        st = get_stack(name)
        assert st.name == name and st.ccs and st.default_cc == st.ccs[0]
    with pytest.raises(StackError) as e:
        get_stack("x")
    assert str(e.value) == "--stack: must be one of aioquic, aioquic-2020, mptcp, ngtcp2, noq, quic-go, quinn, tcp (got 'x')"


def test_declared_capabilities():
    caps = {name: get_stack(name).capabilities for name in STACKS}
    assert caps["aioquic"] == Capabilities(64, 10_000, ("parallel", "sequential"), True, True, (), True, True, serve=True)
    assert caps["tcp"] == Capabilities(64, 10_000, ("parallel", "sequential"), True, True, (), False, False, ecn="sysctl")
    assert caps["ngtcp2"] == Capabilities(64, 100, ("parallel",), True, True, (), False, False, ecn="library")
    assert {name: c.ecn for name, c in caps.items()} == {
        "aioquic": "none", "aioquic-2020": "none", "ngtcp2": "library", "noq": "library", "quic-go": "library",
        "quinn": "library", "tcp": "sysctl", "mptcp": "sysctl"}
    assert caps["aioquic-2020"] == Capabilities(64, 10_000, ("parallel", "sequential"), fixed_datagram=1280)


@pytest.mark.parametrize("name", ["ngtcp2", "tcp", "aioquic-2020"])
def test_real_stacks_without_ranges_or_preconnect_refuse_them(name):
    st = get_stack(name)
    with pytest.raises(StackError) as e:
        st.check(None, Workload.ranges(3_000_001, 3))
    assert str(e.value) == f"{name} cannot run this workload: byte ranges (not offered)"
    with pytest.raises(StackError) as e:
        st.check(None, Workload(objects=(1, 2), connections=2, preconnect=True))
    assert str(e.value) == f"{name} cannot run this workload: pre-established connections (not offered)"
    with pytest.raises(StackError, match="byte ranges .* pre-established connections"):
        st.check(None, Workload.ranges(10, 2, preconnect=True))


def test_aioquic_accepts_ranges_and_preconnect():
    assert get_stack("aioquic").check("cubic", Workload.ranges(3_000_001, 3, preconnect=True)) == "cubic"
    with pytest.raises(StackError, match="preconnect: not with zero_rtt"):
        get_stack("aioquic").check(None, Workload(objects=(1,), resumption=True, zero_rtt=True, preconnect=True))


def spec(tmp_path: Path, wl: Workload, cc: str) -> ClientSpec:
    certs = Certs(cert=tmp_path / "none.pem", key=tmp_path / "none.key")
    return ClientSpec(address="198.18.0.1", port=1, workload=wl, cc=cc, workdir=tmp_path / "cli", certs=certs, timeout_s=5)


@pytest.mark.parametrize("name", list(STACKS))
def test_run_refuses_without_raising_or_starting_anything(tmp_path, name):
    st = get_stack(name)
    # netns_exec that fails the test if anything were run
    boom = ["/nonexistent/should-not-run"]
    r = st.run(spec(tmp_path, Workload.single(10), "vegas"), boom)
    assert not r.ok and "vegas" in r.error and r.bytes == 0
    r = st.run(spec(tmp_path, Workload(objects=(1,) * 65, connections=65), st.default_cc), boom)
    assert not r.ok and "connections: must be 1 to 64 (got 65)" in r.error
    if not st.capabilities.resumption:
        r = st.run(spec(tmp_path, Workload(objects=(1,), resumption=True), st.default_cc), boom)
        assert not r.ok and "resumption" in r.error
    if not st.capabilities.ranges:
        r = st.run(spec(tmp_path, Workload.ranges(10, 2), st.default_cc), boom)
        assert not r.ok and "byte ranges (not offered)" in r.error
    if not st.capabilities.preconnect:
        r = st.run(spec(tmp_path, Workload(objects=(1,), preconnect=True), st.default_cc), boom)
        assert not r.ok and "pre-established connections (not offered)" in r.error
    assert not (tmp_path / "cli").exists()  # refused before any setup


@pytest.mark.parametrize("name", list(STACKS))
def test_server_command_refuses_unknown_cc(tmp_path, name):
    certs = Certs(cert=tmp_path / "c.pem", key=tmp_path / "k.pem")
    with pytest.raises(StackError, match="vegas"):
        get_stack(name).server_command(ServerSpec(1, "vegas", tmp_path, certs, "198.18.0.1"))


# TransferResult.from_parts ----------------------------------------------------------


def obj(i: int, c: int, size: int, got: int, req: float, first: float | None, last: float | None) -> ObjectResult:
    return ObjectResult(index=i, size=size, connection=c, bytes=got, ok=got == size, request_s=req,
                        first_byte_s=first, last_byte_s=last, error=None if got == size else "timeout")  # fmt: skip


def test_from_parts_totals():
    objects = [obj(0, 0, 100, 100, 0.1, 0.2, 0.5), obj(1, 1, 50, 50, 0.15, 0.18, 0.9), obj(2, 0, 10, 10, 0.1, 0.3, 0.4)]
    conns = [ConnectionResult(0, handshake_s=0.1), ConnectionResult(1, handshake_s=0.12)]
    r = TransferResult.from_parts(objects, conns, request_wall=123.0)
    assert r.ok and r.error is None and r.bytes == 160
    assert (r.handshake_s, r.first_byte_s, r.last_byte_s) == (0.1, 0.18, 0.9)
    assert (conns[0].bytes, conns[0].first_byte_s, conns[0].last_byte_s) == (110, 0.2, 0.5)
    assert (conns[1].bytes, conns[1].first_byte_s, conns[1].last_byte_s) == (50, 0.18, 0.9)
    assert r.goodput_mbps == pytest.approx(160 * 8 / 0.9 / 1e6) and r.completion_s == 0.9
    d = r.to_dict()
    assert len(d["objects"]) == 3 and d["connections"][1]["bytes"] == 50 and d["goodput_mbps"] == r.goodput_mbps


def test_from_parts_failure_names_the_object():
    objects = [obj(0, 0, 100, 100, 0.1, 0.2, 0.5), obj(1, 1, 50, 20, 0.1, 0.2, None), obj(2, 0, 10, 0, 0.1, None, None)]
    r = TransferResult.from_parts(objects, [ConnectionResult(0), ConnectionResult(1)])
    assert not r.ok and r.bytes == 120
    assert "2 of 3 objects failed" in r.error and "object 1 (/50 on connection 1): timeout" in r.error
    assert r.goodput_mbps is None and r.completion_s is None
    one = TransferResult.from_parts([obj(0, 0, 100, 100, 0, 0.1, 0.2)], [ConnectionResult(0)], error="warm-up failed")
    assert not one.ok and one.error == "warm-up failed"
