"""The simulation backend (`--backend sim`): the same experiments on `dcemu sim`, with
modelled endpoints in virtual time (dclab/testbed/simbed.py, dclab/dcemu/sim.py, emu/src/sim/)."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import statistics
import subprocess
import sys

import pytest
from conftest import dclab_process, run_dclab, wait_for
from figure_checks import check, figure
from measured import check_bound, kept
from typed_rows import runs

from dclab.dcemu.sim import workload_toml
from dclab.endpoints.base import Workload
from dclab.experiments import get_experiment
from dclab.flowplan import Flow, single_bearer_plan
from dclab.scenario import build
from dclab.testbed.hostconfig import HOST_CONFIGS
from dclab.testbed.simbed import rmem_for


def dclab_namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith("dclab")]


def test_throughput_on_the_simulation_backend(tmp_path):
    before = dclab_namespaces()
    r = run_dclab("run", "throughput", "--backend", "sim", "--udp-buffer", "large", "--size", "10MB", "--reps", "2",
                  "--json", "--out", str(tmp_path / "run"), timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    g = out["goodput_mbps"]
    check_bound("sim.aioquic_large_10mb_mbps", g["mean"])
    assert g["std"] > 0, "two seeds, two jitter draws"
    rep = tmp_path / "run" / "rep-01"
    assert (rep / "workload.toml").exists() and (rep / "dcemu-stats.jsonl.gz").exists()
    packed = (rep / "dcemu-stats.jsonl.gz").read_bytes()
    assert len(packed) * 4 < len(gzip.decompress(packed)), "the records take a quarter of their size or less"
    # the run's figure, drawn from the compressed records: a line per leg, its 20 Mbit/s dashed and not
    # exceeded on average (a single 10 ms record may: jitter moves packets between records)
    info = figure(rep / "link-utilization.png")
    assert info.command.startswith("python -m dclab.cli run throughput --backend sim"), info.command
    assert info.suptitle == "aioquic reno, 10 MB, batch 100, split 50:50 (simulated)", info.suptitle
    # The run figure (dclab/analysis/run_figure.py): the whole transfer, the legend below the panels.
    ax = check(info.axes[0], lines=2, hlines=[20.0, 20.0], ylabel="leg throughput\n(Mbit/s)")
    assert [s.label for s in ax.series] == ["leg1", "leg2"], ax.series
    assert all(s.y[1] > 10 and s.mean is not None and s.mean <= 20 * 1.02 for s in ax.series), ax.series
    assert json.loads((rep / "environment.json").read_text())["backend"] == "sim"
    assert dclab_namespaces() == before, "a simulation touches no namespace"


def test_fairness_on_the_simulation_backend(tmp_path):
    r = run_dclab("run", "fairness", "--backend", "sim", "--duration", "10", "--json", "--out", str(tmp_path / "f"),
                  timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    flows = out["flows"]
    assert set(flows) == {"dc", "sc1", "sc2"}
    # DC shares both 20 Mbit/s legs with one SC flow on each: the three together use most of 40.
    check_bound("sim.fairness_total_mbps", sum(f["mean_mbps"] for f in flows.values()))
    check_bound("sim.fairness_jfi", out["jfi"]["mean"])


def test_what_the_simulation_cannot_model_is_refused_before_it_starts(tmp_path):
    r = run_dclab("run", "throughput", "--backend", "sim", "--streams", "2", "--out", str(tmp_path / "x"), timeout=60)
    assert r.returncode != 0 and "one object on one connection" in r.stderr
    assert not (tmp_path / "x").exists()
    r = run_dclab("run", "throughput", "--backend", "simulated", "--out", str(tmp_path / "y"), timeout=60)
    assert r.returncode == 2 and "backend" in r.stderr


def test_the_workload_takes_the_hosts_receive_buffer_and_the_plans_packet_sizes():
    s = build(get_experiment("throughput").scenario(build(), get_experiment("throughput").options()))
    plan = single_bearer_plan(s, [Flow("dc", "aioquic", "dc", Workload.single(1000), "reno", 4433)])
    text = workload_toml(plan, plan.flows, rmem_for(HOST_CONFIGS["quic-default"]), {}, 5.0)
    assert "rmem = 212992" in text and "datagram = 1252" in text and "duration_s = 5.0" in text
    text = workload_toml(plan, plan.flows, rmem_for(HOST_CONFIGS["quic-large"]), {}, 5.0)
    assert "rmem = 33554432" in text
    tcp = single_bearer_plan(s, [Flow("dc", "tcp", "dc", Workload.single(1000), "cubic", 4433)])
    text = workload_toml(tcp, tcp.flows, rmem_for(HOST_CONFIGS["tcp"]), {}, 5.0)
    assert 'transport = "tcp"' in text and "rmem = 6291456" in text and "mss = 1268" in text


def test_validate_smoke_simulation_agrees_with_the_kept_emulated_runs(tmp_path):
    """`dclab validate validate-smoke --sim-only` (no root, about 3 s): each point's simulated
    mean of five within 10 % of the median of its emulated means kept in
    tests/data/measured.jsonl (ten, each of five runs, made by the test below). The model is
    held to our emulation without the suite paying for fifteen real runs each time; the
    emulation itself is held by every other real-run bound, and the test below (DCLAB_SLOW=1)
    runs both backends side by side."""
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    r = run_dclab("validate", "validate-smoke", "--sim-only", "--json", env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    points = json.loads(r.stdout)["points"]
    assert len(points) == 3 and all(p["emu"] == [] and len(p["sim"]) == 5 for p in points)
    emulated = kept()
    for p in points:
        runs = emulated[f"validate_smoke.{p['config'].replace(' ', '_')}.{p['sweep']}_{p['value']}.emu_mbps"]
        assert len(runs) >= 10
        ref = statistics.median(runs)
        assert abs(p["sim_mean"] - ref) <= 0.10 * ref, (p["config"], p["sim_mean"], ref)


@pytest.mark.root
@pytest.mark.slow
def test_validate_smoke_simulation_agrees_with_emulation_at_three_points(tmp_path):
    """`dclab validate validate-smoke`: aioquic (32 MiB buffer) and TCP CUBIC without loss,
    TCP NewReno at 0.1 % per leg, 20 MB, five repetitions per backend: the simulated goodput
    within 10 % of the emulated at every point (about 130 s: the emulated runs are the
    kept runs of the test above)."""
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    r = run_dclab("validate", "validate-smoke", "--json", env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["summary"] == {"throughput": {"points": 3, "passed": 3, "incomplete": 0, "calibration": 0}}
    assert sum(d["points"] for d in out["by_config"].values()) == 3 and len(out["by_config"]) == 3
    for p in out["points"]:
        assert len(p["emu"]) == 5 and len(p["sim"]) == 5 and abs(p["error"]) <= 0.10, p
        # Both backends drive the same core: a regression there moves both, so each stands alone too.
        check_bound(f"validate_smoke.{p['config'].replace(' ', '_')}.{p['sweep']}_{p['value']}.emu_mbps", p["emu_mean"])
    assert json.loads((tmp_path / "validate-smoke" / "validation.json").read_text()) == out
    again = run_dclab("validate", "validate-smoke", "--json", env=env, timeout=120)
    assert again.returncode == 0 and "to run: 0 simulated, 0 emulated" in " ".join(again.stderr.split())


def test_a_campaign_runs_on_the_simulation_backend_beside_its_emulated_runs(tmp_path):
    """`campaign run smoke --backend sim`: the 16 runs of TCP simulated, the 16 of ngtcp2
    (no model of its own) left out and said so; with `--stand-in ngtcp2=aioquic` those run
    too, labelled. Each run under its own key (not an emulated run's), no root needed; a
    second start repeats nothing."""
    from dclab.campaign import plan as cp

    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    r = run_dclab("campaign", "run", "smoke", "--backend", "sim", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert ("backend sim: 16 of the 32 runs have no model of their own (ngtcp2 cubic: name a stand-in with "
            "--stand-in ngtcp2=aioquic); left out") in " ".join(r.stderr.split())
    assert "16 runs stored ok, 0 failed" in r.stdout
    # standard error is a pipe, where rich draws no bar: one plain line per finished run
    done = [x for x in r.stderr.splitlines() if x.startswith("[")]
    assert [x.split("]")[0] for x in done] == [f"[{i}/16" for i in range(1, 17)], r.stderr
    assert all(": ok; " in x and " so far, about " in x and x.endswith(" left") for x in done), done
    r = run_dclab("campaign", "run", "smoke", "--backend", "sim", "--stand-in", "ngtcp2=aioquic", env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "32 runs stored ok, 0 failed" in r.stdout
    import sqlite3

    with sqlite3.connect(tmp_path / "smoke" / "store.sqlite") as db:
        rows = db.execute("SELECT run_key, json_extract(options, '$.backend'), stack, json_extract(options, '$.stand_in'), "
                          "json_extract(environment, '$.stand_in') FROM runs").fetchall()
    emu_keys = {run.key for run in cp.plan(cp.load("smoke"))}
    assert len(rows) == 32 and all(b == "sim" for _, b, *_ in rows)
    assert {(stack, o, e) for _, _, stack, o, e in rows} == {("tcp", "{}", None),
                                                            ("ngtcp2", '{"ngtcp2":"aioquic"}', '{"ngtcp2":"aioquic"}')}
    assert not emu_keys & {k for k, *_ in rows}, "a simulated run never stands for an emulated one"
    # Two processes ran them (one per CPU by default); this one moved each into place.
    runs = tmp_path / "smoke" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(k for k, *_ in rows)
    assert all((runs / k / "dcemu-stats.jsonl.gz").is_file() for k, *_ in rows)
    again = run_dclab("campaign", "run", "smoke", "--backend", "sim", "--stand-in", "ngtcp2=aioquic", env=env, timeout=120)
    assert "32 already stored, 0 to do" in " ".join(again.stderr.split())


def test_jobs_are_for_simulated_runs_only(tmp_path):
    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    r = run_dclab("campaign", "run", "smoke", "--jobs", "2", env=env, timeout=60)
    assert r.returncode == 2 and "--jobs is for --backend sim" in r.stderr
    assert not (tmp_path / "smoke").exists()


def test_the_report_draws_both_backends_of_a_point_as_two_series():
    """An emulated run and its simulated twin at the same swept value land in one sweep
    figure as two series, the simulated one labelled as such."""
    from dclab.analysis.figures import series_of
    from dclab.campaign.report import sweep_groups

    exp = get_experiment("throughput")

    def row(key: str, backend: str) -> dict:
        options = exp.options(stack="tcp", cc="cubic", size="5MB", backend=backend).model_dump(mode="json")
        return {"run_key": key, "experiment": "throughput", "sweep": "batch", "value": "2", "value_num": 2.0,
                "stack": "tcp", "cc": "cubic", "host_config": "tcp", "options": options, "metrics": {}}

    [(_, _, grouped)] = sweep_groups(runs([row("e", "emu"), row("s", "sim")]))
    labels = series_of(grouped)
    assert (labels["e"], labels["s"]) == ("tcp", "tcp (simulated)")
    # and a figure of simulated runs alone still says so
    [(_, _, alone)] = sweep_groups(runs([row("s", "sim")]))
    assert series_of(alone)["s"] == "tcp (simulated)"


def test_udp_receive_buffer_drops_are_read_from_the_kernels_counters():
    from dclab.testbed.netns import udp_rcvbuf_errors

    snmp = ("Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n"
            "Udp: 1834 3 95 1841 95 0 0 0 0\n"
            "UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors\n"
            "UdpLite: 0 0 0 0 7 0 0 0 0\n")
    assert udp_rcvbuf_errors(snmp) == 95
    assert udp_rcvbuf_errors("Ip: Forwarding\nIp: 1\n") is None


@pytest.mark.root
def test_the_client_hosts_udp_drops_are_counted_on_both_backends(tmp_path):
    """A throughput run's details give the datagrams the client host dropped for a full
    socket buffer: the kernel's count in emulation, the host model's in simulation. At
    0.2 % loss per leg every lost COUNT ends in a t-Reordering expiry that releases
    hundreds of packets at once, more than the 208 KiB default buffer holds (92 datagrams):
    both hosts drop."""
    for backend, size in (("emu", "5MB"), ("sim", "20MB")):
        out = tmp_path / backend
        r = run_dclab("run", "throughput", "--backend", backend, "--udp-buffer", "default", "--loss", "0.2,0.2",
                      "--size", size, "--json", "--out", str(out), timeout=120)
        assert r.returncode == 0, r.stderr
        drops = json.loads((out / "rep-01" / "result.json").read_text())["details"]["client_udp_drops"]
        assert isinstance(drops, int)
        if backend == "sim":  # one seed, one count
            check_bound("sim.sim_20mb.client_udp_drops_at_loss_0.2", drops)
        else:  # how many depends on how fast the client drains its socket: 48-170 in ten runs, never none
            assert drops > 0



def stored_runs(store) -> int:
    """Rows in a store being written (0 before it exists: connecting would create it)."""
    import sqlite3

    if not store.exists():
        return 0
    try:
        with sqlite3.connect(store) as db:
            return db.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_ctrl_c_stops_a_simulated_campaign_and_keeps_what_it_stored(tmp_path):
    """SIGINT to the process group (as a terminal's Ctrl-C): exit 130, the pool's processes
    and their dcemu gone, the runs in flight leave no directory, and every stored run has
    its own; a second start runs only the rest."""
    import signal
    import sqlite3

    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    store = tmp_path / "paper" / "store.sqlite"
    with dclab_process("campaign", "run", "paper", "--backend", "sim", "--shard", "1/20", "--jobs", "2",
                       env=env) as p:
        wait_for(lambda: stored_runs(store) >= 2, 60, "two stored runs", p)
        os.killpg(p.pid, signal.SIGINT)
        assert p.wait(timeout=60) == 130
    # its children end with it: gone within seconds (a busy machine takes a while to reap them)
    wait_for(lambda: subprocess.run(["pgrep", "-f", f"dcemu sim {tmp_path}"], capture_output=True).returncode == 1,
             10, "the end of every dcemu sim child")
    runs = tmp_path / "paper" / "runs"
    names = {d.name for d in runs.iterdir()}
    assert not [n for n in names if n.endswith(".incoming")], names
    with sqlite3.connect(store) as db:
        keys = {k for (k,) in db.execute("SELECT run_key FROM runs")}
    assert keys == names and len(keys) < 1045


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_a_killed_simulated_campaign_leaves_no_process(tmp_path, jobs):
    """SIGKILL of `campaign run --backend sim --jobs N`, which then does nothing of its own,
    after its second stored run: every process it started (the pool's, their `dcemu sim`,
    the pool's resource tracker; with one job, its own `dcemu sim`) ends within seconds by
    its parent-death signal: none lives on, and none starts another run."""
    import signal

    import psutil

    env = {**os.environ, "DCLAB_RESULTS": str(tmp_path)}
    store = tmp_path / "paper" / "store.sqlite"
    with dclab_process("campaign", "run", "paper", "--backend", "sim", "--shard", "1/20", "--jobs", str(jobs),
                       env=env) as p:
        wait_for(lambda: stored_runs(store) >= 2, 60, "two stored runs", p)
        started: list[psutil.Process] = []

        def simulating() -> bool:  # killed while a run simulates, not between two
            with contextlib.suppress(psutil.Error):
                started[:] = psutil.Process(p.pid).children(recursive=True)
            return any(_name(c) == "dcemu" for c in started)

        wait_for(simulating, 60, "a dcemu sim", p)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)

    def alive() -> list[psutil.Process]:
        out = []
        for c in started:
            with contextlib.suppress(psutil.NoSuchProcess):
                if c.is_running() and c.status() != psutil.STATUS_ZOMBIE:
                    out.append(c)
        return out

    try:
        wait_for(lambda: not alive(), 15, "the end of every process the campaign started")
        assert not subprocess.run(["pgrep", "-f", f"dcemu sim {tmp_path}"], capture_output=True).stdout
    finally:
        for c in started:
            with contextlib.suppress(psutil.Error):
                c.kill()


def _name(p) -> str:
    import psutil

    try:
        return p.name()
    except psutil.Error:
        return ""


KERNEL_CHARGE = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.2", int(sys.argv[1])))
print("ready", flush=True)
sys.stdin.readline()  # the sender is done
port = "%04X" % int(sys.argv[1])
for line in open("/proc/net/udp"):
    f = line.split()
    if f[1].endswith(":" + port):
        rx_queue = int(f[4].split(":")[1], 16)
s.setblocking(False)
n = 0
while True:
    try:
        s.recv(65535)
        n += 1
    except BlockingIOError:
        break
print(n, rx_queue, s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF), flush=True)
"""
SEND = r"""
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[2])):
    s.sendto(b"x" * int(sys.argv[3]), ("198.18.0.2", int(sys.argv[1])))
    time.sleep(0.002)
"""


@pytest.mark.root
def test_the_host_model_charges_what_the_kernel_charges(tmp_path):
    """Datagrams that dcemu writes into the client's TUN, into a socket nobody reads, with
    the default buffer: the kernel keeps as many as fit whole at UDP_TRUESIZE bytes each
    (the simulation's host model, emu/src/model/host.rs), for aioquic's datagram and the
    largest one a 1500-byte MTU allows. The bytes it charges are that many times
    UDP_TRUESIZE but for one datagram's worth: past half the buffer the kernel may condense
    a datagram (``skb_condense`` in ``__udp_enqueue_schedule_skb``) and charge it less, as
    it did once in a busy round (1,424 bytes for one of 92)."""
    import sys

    from dclab.dcemu.sim import QUIC_DATAGRAM, UDP_TRUESIZE
    from dclab.scenario import Scenario
    from dclab.testbed import Testbed
    from dclab.testbed.hostconfig import host_config_for

    plan = single_bearer_plan(Scenario(), [Flow("dl", "aioquic", "dc", Workload.single(1), "reno")])
    with Testbed(Scenario(), plan, host_config_for("quic", "default"), tmp_path) as tb:
        for port, size in ((5555, QUIC_DATAGRAM), (5556, 1472)):
            r = subprocess.Popen(["ip", "netns", "exec", tb.ns.client, sys.executable, "-c", KERNEL_CHARGE, str(port)],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert r.stdout is not None and r.stdin is not None
            assert r.stdout.readline().strip() == "ready"
            subprocess.run(["ip", "netns", "exec", tb.ns.server, sys.executable, "-c", SEND, str(port), "150", str(size)],
                           check=True, timeout=30)
            r.stdin.write("\n")
            r.stdin.flush()
            queued, rx_queue, rcvbuf = map(int, r.stdout.readline().split())
            r.wait(timeout=10)
            assert rcvbuf == 212992
            assert queued == rcvbuf // UDP_TRUESIZE, (size, queued)
            assert (queued - 1) * UDP_TRUESIZE < rx_queue <= queued * UDP_TRUESIZE, (size, queued, rx_queue)


def test_the_receive_trace_gives_the_gaps_after_backlogged_datagrams(tmp_path):
    from dclab.endpoints.aioquic import rx_trace

    rows = [(0, True), (150_000, False), (900_000, True), (1_100_000, True), (1_250_000, False)]
    path = tmp_path / "t.1"
    path.write_text("".join(f"{t} {int(w)}\n" for t, w in rows))
    assert rx_trace.read(path) == rows
    assert rx_trace.backlogged_gaps_us(rows) == [150.0, 200.0, 150.0]
    assert rx_trace.summary([100.0] * 99 + [200.0])["mean_us"] == 101.0


@pytest.mark.root
def test_the_aioquic_client_writes_its_receive_trace_on_request(tmp_path):
    """scripts/calibrate_client.py's measurement: one row per datagram the client read."""
    from dclab.endpoints.aioquic import rx_trace

    prefix = tmp_path / "trace"
    r = run_dclab("run", "throughput", "--size", "2MB", "--udp-buffer", "default", "--json", "--out", str(tmp_path / "run"),
                  env={**os.environ, rx_trace.ENV: str(prefix)}, timeout=120)
    assert r.returncode == 0, r.stderr
    traces = list(tmp_path.glob("trace.*"))
    assert len(traces) == 1
    rows = rx_trace.read(traces[0])
    assert 2_000_000 / 1252 < len(rows) < 2_000_000 / 1252 * 1.2
    assert [t for t, _ in rows] == sorted(t for t, _ in rows)
    gaps = rx_trace.backlogged_gaps_us(rows)
    assert gaps and all(g > 0 for g in gaps)


@pytest.mark.root  # to drop to nobody
def test_a_simulated_run_needs_no_root():
    """As docs/explanation/sim-runs.md says: `--backend sim` creates nothing on the host, so a user runs it."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="dclab-sim-user-") as d:  # pytest's own directories are root's
        home = Path(d)
        home.chmod(0o777)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
        p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-m",
                            "dclab.cli", "run", "throughput", "--backend", "sim", "--size", "2MB", "--json", "--out",
                            str(home / "run")], capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 0, p.stderr[-2000:]
        p_text = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable,
                                 "-m", "dclab.cli", "run", "throughput", "--backend", "sim", "--size", "2MB", "--out",
                                 str(home / "text")], capture_output=True, text=True, env=env, timeout=120)
        assert "throughput (simulated): aioquic reno" in p_text.stderr, p_text.stderr[-2000:]
        assert re.search(r"^goodput: [\d.]+ Mbit/s \(simulated\)$", p_text.stdout, re.M), p_text.stdout
        assert json.loads(p.stdout)["failed"] == 0 and (home / "run" / "rep-01" / "result.json").stat().st_uid != 0


def test_a_16_bit_sn_desynchronises_endc_at_poor_good_and_18_bits_do_not(tmp_path):
    """EN-DC at poor/good (the LTE master in deep fades, the NR secondary fast), seeded so
    that a fade holds a PDU in the LTE cell while the NR cell delivers more than 32,768
    others: with a 16-bit SN the receiver takes it for a later COUNT, discards every PDU
    after it as late, and TCP stalls to the end of the simulated window; the run names the
    misreading. With NR PDCP's 18 bits, the default over endc:, the same run completes."""
    common = ["run", "throughput", "--backend", "sim", "--link", "endc:poor,good", "--x2-delay", "5",
              "--uplink-bw", "200", "--split-policy", "delay-target", "--stack", "tcp", "--cc", "cubic",
              "--size", "1500MB", "--reps", "1", "--seed", "2"]
    short = run_dclab(*common, "--sn-bits", "16", "--out", str(tmp_path / "sn16"), timeout=300)
    rep = json.loads((tmp_path / "sn16" / "rep-01" / "result.json").read_text())
    assert not rep["ok"] and "cut at the end of the simulated window" in rep["error"], rep["error"]
    assert rep["details"]["pdcp"]["rx"]["counts_misread"] > 0
    assert "PDUs the PDCP receiver took for a later COUNT" in short.stdout + short.stderr
    assert "see --sn-bits 18" in short.stdout + short.stderr
    long = run_dclab(*common, "--out", str(tmp_path / "sn18"), timeout=300)
    assert long.returncode == 0, long.stderr
    rep = json.loads((tmp_path / "sn18" / "rep-01" / "result.json").read_text())
    assert rep["ok"] and rep["details"]["pdcp"]["rx"]["counts_misread"] == 0
    assert rep["metrics"]["goodput_mbps"] > 300
