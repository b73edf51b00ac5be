"""mQUIC groups in the aioquic server: a client workload whose connections name a group in
their ``cc_options`` sends the ``dclab-mquic`` header, the server (``--cc mquic-reno``)
attaches the connections' controllers to the group, and on SIGTERM writes the group's
joins and decisions to ``mquic.jsonl`` (docs/mquic-implementation.md, "The server")."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import SERVER, start_in

from dclab.endpoints.aioquic.adapter import MQUIC_LOG, AioquicMquicStack, AioquicStack
from dclab.endpoints.aioquic.mquic import Membership, from_options, parse_header
from dclab.endpoints.base import ClientSpec, ServerSpec, StackError, Workload

PORT = 4433
MB = 1_000_000
DATAGRAM = 1252
IW = 10 * DATAGRAM


def group_workload(n: int, size: int, group: str = "g1", **extra: str) -> Workload:
    return Workload(objects=(size,) * n, connections=n, assignment=tuple(range(n)),
                    cc_options=tuple({"mquic_group": group, **extra} for _ in range(n)))  # fmt: skip


def read_log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for_done(path: Path, timeout_s: float = 10.0) -> list[dict]:
    """The log's lines once it has a done line (the server appends a group when it finishes)."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            lines = read_log(path) if path.exists() else []
        except ValueError:  # a line being appended
            lines = []
        if any(d["event"] == "done" for d in lines):
            return lines
        time.sleep(0.1)
    return []


def start_server(ns, certs, workdir: Path, cc: str = "mquic-reno") -> tuple[subprocess.Popen, ServerSpec]:
    from test_endpoint_aioquic import wait_ready

    spec = ServerSpec(port=PORT, cc=cc, workdir=workdir, certs=certs, address=SERVER)
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "server.log"
    with open(log, "wb") as f:
        proc = start_in(ns.server, [*AioquicMquicStack().server_command(spec), "--close-wait", "1"], f)
    wait_ready(proc, log)
    return proc, spec


def run_client(ns, certs, workdir: Path, workload: Workload, cc: str = "mquic-reno", timeout_s: float = 60.0):
    spec = ClientSpec(address=SERVER, port=PORT, workload=workload, cc=cc, workdir=workdir, certs=certs,
                      timeout_s=timeout_s)  # fmt: skip
    stack = AioquicMquicStack() if cc.startswith("mquic-") else AioquicStack()
    return stack.run(spec, ["ip", "netns", "exec", ns.client])


# -- without a network --------------------------------------------------------------------


def test_header_round_trip_and_options():
    m = Membership("g1", 2, 3, "cwnd", "paper")
    assert m.header() == b"group=g1; conn=2; n=3; sync=cwnd; params=paper; iw=10; exit=aioquic; merge=0"
    assert parse_header(m.header()) == m
    assert parse_header("group=x; conn=0; n=1") == Membership("x", 0, 1, "full", "aioquic", 10)
    assert parse_header("group=x; conn=0; n=1; sync=off; iw=4") == Membership("x", 0, 1, "off", "aioquic", 4)
    for bad, what in [("group=x; conn=3; n=3", "conn"), ("conn=0; n=2", "group"), ("group=x; conn=0; n=2; sync=no", "sync"),
                      ("group=x; conn=0; n=2; params=x", "params"), ("group=x; conn=0; n=2; bogus=1", "bogus"),
                      ("group=x; conn=0; n=0", "n"), ("group=x; conn=0; n=1; iw=0", "iw"),
                      ("group=x; conn=0; n=1; iw=1001", "iw"), ("group=x; conn=0; n=1; iw=ten", "iw"),
                      ("group=x; conn=0; n=1; exit=cubic", "exit"), ("group=x; conn=0; n=1; merge=yes", "merge")]:  # fmt: skip
        with pytest.raises(ValueError, match=what):
            parse_header(bad)
    opts = ({"mquic_group": "a"}, {}, {"mquic_group": "a", "mquic_sync": "cwnd"}, {"mquic_group": "b", "mquic_n": "2"})
    assert from_options(opts, 0) == Membership("a", 0, 2)
    assert from_options(opts, 1) is None
    assert from_options(opts, 2) == Membership("a", 1, 2, "cwnd")  # its index within the group
    assert from_options(opts, 3) == Membership("b", 0, 2)
    assert from_options((), 0) is None
    off = ({"mquic_group": "c", "mquic_sync": "off", "mquic_iw": "20"},)
    assert from_options(off, 0) == Membership("c", 0, 1, "off", "aioquic", 20)
    with pytest.raises(ValueError, match="mquic_iw"):
        from_options(({"mquic_group": "c", "mquic_iw": "5; n=9"},), 0)
    with pytest.raises(ValueError, match="iw"):
        from_options(({"mquic_group": "c", "mquic_iw": "0"},), 0)
    assert Membership("a", 0, 3).to_params("reno").beta == 0.5
    hy = Membership("h", 0, 3, "full", "paper", 30, "hystart", True)
    assert parse_header(hy.header()) == hy and hy.to_params("cubic").merge_within_rtt
    assert from_options(({"mquic_group": "h", "mquic_exit": "hystart", "mquic_merge": "1"},), 0) == Membership(
        "h", 0, 1, ss_exit="hystart", merge=True)
    assert not Membership("a", 0, 3).to_params("reno").merge_within_rtt
    assert Membership("a", 0, 3, params="paper").to_params("reno").gamma0 == 1.5


def test_stack_check_and_commands(tmp_path):
    st = AioquicMquicStack()
    wl = group_workload(3, MB)
    assert st.check("mquic-reno", wl) == "mquic-reno" and st.check("mquic-cubic", wl) == "mquic-cubic"
    assert st.check("mquic-bbr", group_workload(3, MB, mquic_sync="off", mquic_iw="20")) == "mquic-bbr"
    with pytest.raises(StackError, match="mquic_bogus"):
        st.check("mquic-reno", Workload(objects=(1,), cc_options=({"mquic_bogus": "1"},)))
    # the registered aioquic stack is unchanged: no mquic controllers, no knobs
    assert AioquicStack.ccs == ("reno", "cubic", "bbr") and AioquicStack.capabilities.cc_options == ()
    with pytest.raises(StackError, match="mquic_group"):
        AioquicStack().check("reno", wl)
    from dclab.endpoints.base import Certs

    certs = Certs(cert=tmp_path / "c.pem", key=tmp_path / "k.pem")
    cmd = st.server_command(ServerSpec(1234, "mquic-cubic", tmp_path, certs, SERVER))
    assert cmd[cmd.index("--cc") + 1] == "mquic-cubic"
    assert cmd[cmd.index("--mquic-log") + 1] == str(tmp_path / MQUIC_LOG)
    assert "--mquic-log" not in AioquicStack().server_command(ServerSpec(1234, "reno", tmp_path, certs, SERVER))


def test_client_refuses_bad_mquic_options(tmp_path):
    import sys

    wl = Workload(objects=(1,), cc_options=({"mquic_group": "g", "mquic_sync": "sometimes"},))
    p = subprocess.run(
        [sys.executable, "-m", "dclab.endpoints.aioquic.h3_client", "--host", SERVER, "--workload",
         json.dumps(wl.to_dict()), "--cc", "mquic-reno", "--insecure", "--timeout", "5"],
        check=False, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert p.returncode == 2 and "sync" in json.loads(p.stdout.strip().splitlines()[-1])["error"]


def fake_quic(cc_name: str = "mquic-reno"):
    """What MquicGroups reads of an aioquic QuicConnection: its controller and datagram size."""
    from types import SimpleNamespace

    from aioquic.quic.congestion.base import create_congestion_control

    cc = create_congestion_control(cc_name, max_datagram_size=DATAGRAM)
    return SimpleNamespace(_loss=SimpleNamespace(_cc=cc), _configuration=SimpleNamespace(max_datagram_size=DATAGRAM))


def lose_one(quic, t: float) -> None:
    """One packet sent at ``t`` and lost: an NFE of ``quic``'s controller."""
    from aioquic.quic.packet import QuicPacketType
    from aioquic.quic.packet_builder import QuicSentPacket
    from aioquic.tls import Epoch

    cc = quic._loss._cc
    p = QuicSentPacket(epoch=Epoch.ONE_RTT, in_flight=True, is_ack_eliciting=True, is_crypto_packet=False,
                       packet_number=int(t * 1000), packet_type=QuicPacketType.ONE_RTT, sent_time=t, sent_bytes=DATAGRAM)  # fmt: skip
    cc.on_packet_sent(packet=p)
    cc.on_packets_lost(now=t + 0.05, packets=[p])


def test_server_appends_a_group_when_its_last_member_closes(tmp_path):
    from dclab.endpoints.aioquic.h3_server import MquicGroups, start_mquic_log, write_mquic_log
    from dclab.endpoints.aioquic.mquic.controllers import groups

    groups.clear()
    log = tmp_path / "mquic.jsonl"
    start_mquic_log(log)
    mg = MquicGroups(log)
    try:
        a, b = fake_quic(), fake_quic()
        assert mg.attach(a, b"group=g1; conn=0; n=2; sync=off; iw=20", 1.0) is None
        assert mg.attach(b, b"group=g1; conn=1; n=2; sync=off; iw=20", 1.1) is None
        assert a._loss._cc.congestion_window == 20 * DATAGRAM  # off: the whole IW of 20 packets
        assert "iw" in (mg.attach(fake_quic(), b"group=g2; conn=0; n=2; iw=0", 1.2) or "")
        lose_one(b, 2.0)
        mg.closed(a, now=3.0)
        assert log.read_text() == ""  # one member still open: nothing yet
        mg.closed(b, now=4.0)
        first = read_log(log)
        assert [d["event"] for d in first] == ["join", "join", "nfe", "cwnd", "done"]
        assert first[0]["iw"] == 20 * DATAGRAM and first[0]["cwnd"] == 20 * DATAGRAM and first[0]["sync"] == "off"
        nfe, done = first[2], first[-1]
        assert (nfe["action"], nfe["conn"], nfe["packets"], nfe["group_packets"]) == ("none", 1, 1, 1)
        assert done == {"time": 4.0, "group": "g1", "event": "done", "finished": True, "nfes": 1,
                        "first_nfe": {"time": 2.05, "conn": 1, "kind": "loss", "action": "none", "packets": 1,
                                      "group_packets": 1, "cwnd_before": 20 * DATAGRAM, "group_cwnd": 40 * DATAGRAM},
                        "nfes_within_rtt": 0, "delay_exits": 0,
                        "packets": {"0": 0, "1": 1}, "group_packets": 1, "cwnd_samples": 1,
                        "cwnd_samples_dropped": 0}  # fmt: skip
        assert "g1" not in groups and mg.finished == []  # streamed, not kept
        # the id can be used again: a new group, appended after the first; one left open
        c, d = fake_quic("mquic-bbr"), fake_quic()
        assert mg.attach(c, b"group=g1; conn=0; n=1", 5.0) is None
        mg.closed(c, now=6.0)
        assert mg.attach(d, b"group=open; conn=0; n=3; sync=cwnd", 7.0) is None
        second = read_log(log)
        assert second[: len(first)] == first and [x["event"] for x in second[len(first):]] == ["join", "done"]
        assert second[-1]["first_nfe"] is None and second[-2]["controller"] == "bbr"
        assert second[-2]["cwnd"] == 10 * DATAGRAM  # n=1: IW/1
        write_mquic_log(log, mg)  # at exit: the open group, marked unfinished
        third = read_log(log)
        assert third[: len(second)] == second
        assert [x["event"] for x in third[len(second):]] == ["join", "done"] and not third[-1]["finished"]
        assert third[-2]["cwnd"] == 10 * DATAGRAM // 3
    finally:
        groups.clear()


def test_a_member_that_joins_after_the_others_left_is_in_the_same_group(tmp_path):
    """A connection whose request came late (lost and sent again) joins after the other
    members finished: the group waits for all n, so one group and one done line."""
    from dclab.endpoints.aioquic.h3_server import MquicGroups, start_mquic_log
    from dclab.endpoints.aioquic.mquic.controllers import groups

    groups.clear()
    log = tmp_path / "mquic.jsonl"
    start_mquic_log(log)
    mg = MquicGroups(log)
    try:
        a, b, c = fake_quic(), fake_quic(), fake_quic()
        for q, conn, t in ((a, 0, 1.0), (b, 1, 1.1)):
            assert mg.attach(q, f"group=g; conn={conn}; n=3".encode(), t) is None
        mg.closed(a, now=2.0)
        mg.closed(b, now=2.1)
        assert log.read_text() == "" and "g" in groups  # two of three joined: not over
        lose_one(a, 2.5)  # a controller that left reports nothing more to the group
        assert mg.attach(c, b"group=g; conn=2; n=3", 3.0) is None
        assert c._loss._cc.congestion_window == 10 * DATAGRAM // 3  # the group's share, not a new group's
        mg.closed(c, now=4.0)
        lines = read_log(log)
        assert [(d["event"], d.get("conn")) for d in lines if d["event"] != "cwnd"] == [
            ("join", 0), ("join", 1), ("join", 2), ("done", None)]  # fmt: skip
        assert "g" not in groups
    finally:
        groups.clear()


def test_server_log_is_empty_when_nothing_happened(tmp_path):
    from dclab.endpoints.aioquic.h3_server import MquicGroups, start_mquic_log, write_mquic_log

    for mg in (None, MquicGroups(tmp_path / "b.jsonl")):
        log = tmp_path / ("a.jsonl" if mg is None else "b.jsonl")
        log.write_text("old run\n")
        start_mquic_log(log)
        write_mquic_log(log, mg)
        assert log.read_text() == ""


# -- over veth ----------------------------------------------------------------------------


@pytest.mark.root
@pytest.mark.parametrize("cc", ["mquic-reno", "mquic-cubic", "mquic-bbr"])
def test_group_of_three_over_veth(veth_pair, certs, tmp_path, cc):
    from test_endpoint_aioquic import stop

    size = 2 * MB
    proc, spec = start_server(veth_pair, certs, tmp_path / "srv", cc)
    streamed: list[dict] = []
    try:
        r = run_client(veth_pair, certs, tmp_path / "cli", group_workload(3, size), cc)
        # the client closed its connections: the finished group is on disk before the server stops
        streamed = wait_for_done(spec.workdir / MQUIC_LOG)
    finally:
        code = stop(proc)
    assert r.ok, r.error
    assert r.bytes == 3 * size and all(o.bytes == size for o in r.objects)
    assert code == 0
    lines = read_log(spec.workdir / MQUIC_LOG)
    joins = [d for d in lines if d["event"] == "join"]
    assert sorted(d["conn"] for d in joins) == [0, 1, 2]
    assert {d["group"] for d in lines} == {"g1"}
    assert all(d["n"] == 3 and d["controller"] == cc.removeprefix("mquic-") and d["iw"] == IW for d in joins)
    total = sum(d["cwnd"] for d in joins)
    assert IW - 3 < total <= IW, f"initial windows sum to {total}, not one IW ({IW})"
    assert all(d["event"] in ("join", "nfe", "round", "rate", "cwnd", "done") for d in lines)
    print({e: sum(d["event"] == e for d in lines) for e in ("nfe", "round", "rate", "cwnd")})
    assert streamed and streamed == lines  # written when the group finished; nothing more at exit
    done = [d for d in lines if d["event"] == "done"]
    assert len(done) == 1 and lines[-1] is not None and lines[-1]["event"] == "done"
    assert done[0]["finished"] and done[0]["nfes"] == sum(d["event"] == "nfe" for d in lines)
    assert done[0]["group_packets"] == sum(done[0]["packets"].values()) > 3 * size // DATAGRAM
    samples = [d for d in lines if d["event"] == "cwnd"]
    assert {d["conn"] for d in samples} == {0, 1, 2} and done[0]["cwnd_samples"] == len(samples)
    keys = {"time", "group", "event", "conn", "cwnd", "ssthresh", "in_slow_start"}
    if cc == "mquic-bbr":
        keys |= {"bbr_state", "btlbw_bps", "pacing_rate_bps"}
    assert all(set(d) == keys for d in samples)


@pytest.mark.root
def test_off_mode_group_over_veth(veth_pair, certs, tmp_path):
    """Three plain connections observed (sync=off, iw=20): each starts at the whole IW."""
    from test_endpoint_aioquic import stop

    size = MB
    proc, spec = start_server(veth_pair, certs, tmp_path / "srv", "mquic-cubic")
    try:
        r = run_client(veth_pair, certs, tmp_path / "cli", group_workload(3, size, "p", mquic_sync="off", mquic_iw="20"),
                       "mquic-cubic")  # fmt: skip
    finally:
        code = stop(proc)
    assert r.ok and r.bytes == 3 * size and code == 0, r.error
    lines = read_log(spec.workdir / MQUIC_LOG)
    joins = [d for d in lines if d["event"] == "join"]
    assert len(joins) == 3 and all(d["sync"] == "off" and d["cwnd"] == d["iw"] == 20 * DATAGRAM for d in joins)
    assert not any(d["event"] in ("round", "rate") for d in lines)
    assert all(d["action"] == "none" for d in lines if d["event"] == "nfe")
    assert [d["event"] for d in lines].count("done") == 1


@pytest.mark.root
def test_requests_without_header_are_plain_reno(veth_pair, certs, tmp_path):
    from test_endpoint_aioquic import stop

    size = 2 * MB
    proc, spec = start_server(veth_pair, certs, tmp_path / "srv")
    try:
        wl = Workload(objects=(size, size), connections=2, assignment=(0, 1))
        r = run_client(veth_pair, certs, tmp_path / "cli", wl, cc="reno")
    finally:
        code = stop(proc)
    assert r.ok and r.bytes == 2 * size, r.error
    assert code == 0
    assert read_log(spec.workdir / MQUIC_LOG) == []  # nobody joined a group


@pytest.mark.root
def test_bad_header_gets_400(veth_pair, certs, tmp_path):
    """Two groups named alike with different n: the second connection's join is refused."""
    from test_endpoint_aioquic import stop

    proc, spec = start_server(veth_pair, certs, tmp_path / "srv")
    try:
        wl = Workload(objects=(MB, MB), connections=2, assignment=(0, 1),
                      cc_options=({"mquic_group": "g", "mquic_n": "2"}, {"mquic_group": "g", "mquic_n": "3"}))  # fmt: skip
        r = run_client(veth_pair, certs, tmp_path / "cli", wl)
    finally:
        stop(proc)
    # conn 0 joins g (n=2); conn 1 says conn=1 of n=3: other parameters, refused with 400
    assert not r.ok
    assert r.objects[0].ok and not r.objects[1].ok
    joins = [d for d in read_log(spec.workdir / MQUIC_LOG) if d["event"] == "join"]
    assert [d["conn"] for d in joins] == [0]


# -- through dcemu, with loss -------------------------------------------------------------


@pytest.mark.root
def test_group_with_loss_through_dcemu(tmp_path):
    """1 % loss on each leg: the group synchronizes at least once."""
    from dclab.flowplan import Flow, single_bearer_plan
    from dclab.scenario import Scenario
    from dclab.testbed import Testbed
    from dclab.testbed.hostconfig import host_config_for
    from dclab.testbed.netns import wait_listening

    size = 2 * MB
    scenario = Scenario(loss=[1.0, 1.0])
    wl = group_workload(3, size)
    plan = single_bearer_plan(scenario, [Flow("dc", "aioquic", "dc", Workload.single(size), "reno")])
    flow = plan.flows[0]
    assert flow.port is not None
    stack = AioquicMquicStack()
    with Testbed(scenario, plan, host_config_for("udp", "default"), tmp_path) as tb:
        # The testbed starts servers through the registered stack, which offers no mquic
        # controller: start this one by hand in the server namespace.
        srv = tmp_path / "server"
        srv.mkdir(parents=True, exist_ok=True)
        spec = ServerSpec(port=flow.port, cc="mquic-reno", workdir=srv, certs=tb.certs, address=SERVER)
        with open(srv / "server.log", "wb") as log:
            proc = subprocess.Popen(tb.ns.exec(tb.ns.server, *stack.server_command(spec), "--close-wait", "1"),
                                    stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        assert tb.journal is not None
        tb.journal.add_pid(proc.pid)
        tb.servers.append(proc)  # stopped (SIGTERM) by finish()
        wait_listening(tb.ns.server, flow.port, "udp", proc, 15)
        cspec = ClientSpec(address=SERVER, port=flow.port, workload=wl, cc="mquic-reno", workdir=tmp_path / "client",
                           certs=tb.certs, timeout_s=90)  # fmt: skip
        r = stack.run(cspec, tb.ns.exec(tb.ns.client))
        tb.finish()
    assert r.ok and r.bytes == 3 * size, r.error
    assert proc.returncode == 0, (srv / "server.log").read_text()
    lines = read_log(srv / MQUIC_LOG)
    joins = [d for d in lines if d["event"] == "join"]
    assert sorted(d["conn"] for d in joins) == [0, 1, 2]
    nfes = [d for d in lines if d["event"] == "nfe"]
    syncs = [d for d in nfes if d["action"] == "sync"]
    print(f"{len(lines)} lines: {len(nfes)} NFEs ({len(syncs)} sync), "
          f"{sum(d['event'] == 'round' for d in lines)} rounds")  # fmt: skip
    assert syncs, f"no sync among {len(nfes)} NFEs"
