"""aioquic-2020, the study-era aioquic 0.8.7 (QUIC draft 27) in .venv-aioquic2020: what it
offers and refuses before anything starts, its environment matching the lock, and real
transfers over a veth pair and through dcemu with draft 27 on the wire."""

from __future__ import annotations

import ast
import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SERVER, ServerPool, run_dclab
from measured import check_bound

from dclab.cli import app
from dclab.endpoints import get_stack
from dclab.endpoints.aioquic2020 import adapter
from dclab.endpoints.base import ClientSpec, ServerSpec, StackError, Workload
from dclab.flowplan import Flow, PlanError, single_bearer_plan
from dclab.paths import ROOT
from dclab.scenario import Scenario

STACK = get_stack("aioquic-2020")
PORT = 4433
MB = 1_000_000
DRAFT_27 = "0xff00001b"
READY = pytest.mark.skipif(bool(STACK.missing()), reason="; ".join(STACK.missing()) or "ok")


# Declared and refused, before anything starts -----------------------------------------


def test_registered_with_reno_only_and_the_old_aioquic():
    assert STACK.name == "aioquic-2020" and STACK.transport == "udp"
    assert STACK.ccs == ("reno",)
    with pytest.raises(StackError, match=r"--cc: aioquic-2020 offers reno \(got 'cubic'\)"):
        STACK.check("cubic")
    assert STACK.check(None, Workload(objects=(MB, MB, MB), connections=2, streams="sequential")) == "reno"


@pytest.mark.parametrize(
    "wl, what",
    [
        (Workload(objects=(1,), resumption=True), "session resumption (not offered)"),
        (Workload(objects=(1,), resumption=True, zero_rtt=True), "0-RTT (not offered)"),
        (Workload.ranges(10, 2), "byte ranges (not offered)"),
        (Workload(objects=(1,), preconnect=True), "pre-established connections (not offered)"),
        (Workload(objects=(1,), cc_options=({"mquic_group": "g"},)), "congestion control options mquic_group"),
    ],
)
def test_refuses_what_the_old_client_cannot_do(wl, what):
    with pytest.raises(StackError) as e:
        STACK.check("reno", wl)
    assert str(e.value).startswith("aioquic-2020 cannot run this workload: ") and what in str(e.value)


def test_fixed_datagram_refuses_another_quic_datagram():
    plan = single_bearer_plan(Scenario(), [Flow("dc", "aioquic-2020", "dc", Workload.single(MB), "reno")])
    assert plan.with_packet_sizes(Scenario()).quic_datagram is None
    assert plan.with_packet_sizes(Scenario(), quic_datagram=1280).quic_datagram == 1280
    with pytest.raises(PlanError, match=r"--quic-datagram: aioquic-2020 sends 1280-byte datagrams.*\(got 1252\)"):
        plan.with_packet_sizes(Scenario(), quic_datagram=1252)
    with pytest.raises(PlanError, match=r"--mtu: aioquic-2020 sends 1280-byte datagrams.*1272 bytes"):
        plan.with_packet_sizes(Scenario(mtu=1300), tcp_mss=1200)
    # The other stacks take any size the MTU carries.
    other = single_bearer_plan(Scenario(), [Flow("dc", "aioquic", "dc", Workload.single(MB), "reno")])
    assert other.with_packet_sizes(Scenario(), quic_datagram=1252).quic_datagram == 1252


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cc", "cubic"], "aioquic-2020 offers reno (got 'cubic')"),
        (["--quic-datagram", "1252"], "--quic-datagram: aioquic-2020 sends 1280-byte datagrams"),
    ],
)
def test_cli_refuses_before_anything_starts(tmp_path, args, message):
    r = CliRunner().invoke(app, ["run", "throughput", "--stack", "aioquic-2020", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split()), r.output
    assert not (tmp_path / "never").exists()


def test_missing_environment_says_run_make_setup(monkeypatch, tmp_path):
    monkeypatch.setattr(adapter, "VENV", tmp_path / ".venv-aioquic2020")
    monkeypatch.setattr(adapter, "PYTHON", tmp_path / ".venv-aioquic2020" / "bin" / "python")
    adapter._installed.cache_clear()
    try:
        missing = adapter.Aioquic2020Stack().missing()
        assert len(missing) == 1 and "run make setup" in missing[0] and ".venv-aioquic2020 is missing" in missing[0]
        assert adapter.Aioquic2020Stack().version() == "unknown"
    finally:
        adapter._installed.cache_clear()


def test_scripts_import_only_stdlib_and_the_old_aioquic():
    allowed = set(sys.stdlib_module_names) | {"aioquic", "cryptography"}
    for script in (adapter.SERVER_SCRIPT, adapter.CLIENT_SCRIPT):
        tree = ast.parse(script.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        assert {m.split(".")[0] for m in names} <= allowed, f"{script.name} imports {sorted(names)}"
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0], "no relative imports"


def test_commands_use_the_old_environment(tmp_path):
    from dclab.endpoints.base import Certs

    certs = Certs(cert=tmp_path / "c.pem", key=tmp_path / "k.pem")
    server = STACK.server_command(ServerSpec(PORT, "reno", tmp_path, certs, SERVER, qlog=True))
    assert server[:2] == [str(ROOT / ".venv-aioquic2020" / "bin" / "python"), str(adapter.SERVER_SCRIPT)]
    assert server[server.index("--cc") + 1] == "reno" and "--qlog-dir" in server
    client = STACK.client_command(ClientSpec(SERVER, PORT, Workload.single(1), "reno", tmp_path, certs, 5.0), tmp_path / "w.json")
    assert client[:2] == [str(adapter.PYTHON), str(adapter.CLIENT_SCRIPT)] and "--max-datagram-size" not in client
    # Its one datagram size, given explicitly, is not passed on (the scripts take no such option).
    sized = ClientSpec(SERVER, PORT, Workload.single(1), "reno", tmp_path, certs, 5.0, quic_datagram=adapter.DATAGRAM)
    assert "--max-datagram-size" not in STACK.client_command(sized, tmp_path / "w.json")


# The environment ------------------------------------------------------------------------


def lock() -> dict[str, str]:
    lines = [ln.strip() for ln in (ROOT / "requirements-aioquic2020.lock").read_text().splitlines() if ln.strip()]
    assert all(ln.count("==") == 1 for ln in lines), "every package pinned to one version"
    return {name.lower(): version for name, version in (ln.split("==") for ln in lines)}


def test_lock_pins_the_study_era_aioquic():
    pins = lock()
    assert pins["aioquic"] == "0.8.7"
    # aioquic 0.8's certificate check needs cryptography's old OpenSSL bindings (gone in 35).
    assert int(pins["cryptography"].split(".")[0]) < 35


@READY
def test_environment_is_exactly_the_lock():
    freeze = subprocess.run([str(adapter.PYTHON), "-m", "pip", "freeze", "--all"], capture_output=True, text=True,
                            check=True).stdout  # fmt: skip
    installed = {n.lower(): v for n, v in (ln.split("==") for ln in freeze.splitlines() if "==" in ln)}
    installed = {n: v for n, v in installed.items() if n not in ("pip", "setuptools", "wheel")}
    assert installed == lock()
    assert STACK.version() == "0.8.7 (QUIC draft 27)"


@READY
def test_client_refuses_a_workload_it_cannot_run(tmp_path):
    p = subprocess.run([str(adapter.PYTHON), str(adapter.CLIENT_SCRIPT), "--host", SERVER, "--insecure", "--workload",
                        json.dumps(Workload(objects=(1,), resumption=True).to_dict())],
                       capture_output=True, text=True, timeout=30)  # fmt: skip
    assert p.returncode == 2, p.stderr
    d = json.loads(p.stdout.strip().splitlines()[-1])
    assert d["ok"] is False and "resumption: not offered by aioquic-2020" in d["workload_error"]


# Real transfers ---------------------------------------------------------------------------


@contextlib.contextmanager
def server(ns, certs, tmp_path: Path, qlog: bool = False):
    spec = ServerSpec(port=PORT, cc="reno", workdir=tmp_path / "srv", certs=certs, address=SERVER, qlog=qlog)
    pool = ServerPool(ns.server, "udp", tmp_path)
    try:
        pool.start(STACK.server_command(spec), PORT)
        yield tmp_path / "server-0.log"
    finally:
        pool.close()


def fetch(ns, certs, tmp_path: Path, wl: Workload, qlog: bool = False):
    spec = ClientSpec(address=SERVER, port=PORT, workload=wl, cc="reno", workdir=tmp_path / "cli", certs=certs,
                      timeout_s=30, qlog=qlog)  # fmt: skip
    return STACK.run(spec, ["ip", "netns", "exec", ns.client])


@pytest.mark.root
@READY
def test_download_speaks_draft_27(veth_pair, certs, tmp_path):
    size = 2 * MB + 7
    with server(veth_pair, certs, tmp_path, qlog=True) as log:
        r = fetch(veth_pair, certs, tmp_path, Workload.single(size), qlog=True)
    assert r.ok, r.error
    assert r.bytes == size and r.objects[0].bytes == size
    assert r.extra["returncode"] == 0
    assert 0 < r.connections[0].handshake_s <= r.first_byte_s <= r.last_byte_s
    assert r.goodput_mbps is not None and r.goodput_mbps > 1
    assert r.connections[0].resumed is False and r.connections[0].early_data is False
    # Draft 27 on the wire, as both ends saw it: the client's report, the server's log.
    assert r.extra["quic_version"] == [DRAFT_27] and r.extra["alpn"] == ["h3-27"]
    assert f"handshake version={DRAFT_27} alpn=h3-27" in log.read_text().splitlines()
    # qlog: 0.8 keeps it in memory and each end writes it at the end.
    for path in (tmp_path / "srv" / "qlog-server" / "server.qlog", tmp_path / "cli" / "qlog-client" / "client.qlog"):
        traces = json.loads(path.read_text())["traces"]
        assert traces and traces[0]["events"], path


@pytest.mark.root
@READY
def test_two_connections_and_sequential_streams(veth_pair, certs, tmp_path):
    wl = Workload(objects=(MB, 2 * MB, 3, 0), connections=2, streams="sequential")
    with server(veth_pair, certs, tmp_path) as log:
        r = fetch(veth_pair, certs, tmp_path, wl)
    assert r.ok, r.error
    assert [o.bytes for o in r.objects] == [MB, 2 * MB, 3, 0] and r.bytes == 3 * MB + 3
    assert [o.connection for o in r.objects] == [0, 1, 0, 1]
    assert [c.bytes for c in r.connections] == [MB + 3, 2 * MB]
    # Sequential: each connection's second object is requested when its first ended.
    for first, second in ((0, 2), (1, 3)):
        assert r.objects[second].request_s >= r.objects[first].last_byte_s
    assert r.extra["quic_version"] == [DRAFT_27, DRAFT_27]
    assert log.read_text().splitlines().count(f"handshake version={DRAFT_27} alpn=h3-27") == 2


@pytest.mark.root
@READY
def test_throughput_run_through_dcemu(tmp_path):
    out = tmp_path / "run"
    p = run_dclab("run", "throughput", "--stack", "aioquic-2020", "--size", "2MB", "--json", "--out", str(out), timeout=300)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["stack"] == "aioquic-2020" and summary["cc"] == "reno" and summary["failed"] == 0
    check_bound("aioquic2020.dcemu_2mb_mbps", summary["goodput_mbps"]["mean"])
    rep = json.loads((out / "rep-01" / "result.json").read_text())
    transfer = rep["flows"][0]["transfer"]
    assert transfer["ok"] and transfer["bytes"] == 2 * MB
    assert transfer["extra"]["quic_version"] == [DRAFT_27]
    assert f"handshake version={DRAFT_27} alpn=h3-27" in (out / "rep-01" / "server" / "server.log").read_text()
    assert rep["environment"]["stacks"]["aioquic-2020"] == "0.8.7 (QUIC draft 27)"
