"""--tcp-mss and --quic-datagram: ranges refused naming the option (the upper bound from
the scenario's MTU), carried by the plan to the testbed's MSS clamp and to each stack's
command line, recorded in every repetition; a short real run each, with the packet
sizes read from dcemu's delivered bytes and packets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_dclab
from typed_rows import runs

from dclab.analysis.figures import series_of
from dclab.campaign.report import sweep_groups
from dclab.cli import app
from dclab.endpoints import get_stack
from dclab.endpoints.base import Certs, ClientSpec, ServerSpec, Workload
from dclab.experiments.fairness import EXPERIMENT as FAIRNESS
from dclab.experiments.flows import EXPERIMENT as FLOWS
from dclab.experiments.reps import preflight
from dclab.experiments.throughput import EXPERIMENT as THROUGHPUT
from dclab.flowplan import PlanError
from dclab.scenario import build


@pytest.mark.parametrize("args, message", [
    (["throughput", "--tcp-mss", "535"], "--tcp-mss: must be 536 to the scenario's MTU - 40 (got 535)"),
    (["throughput", "--tcp-mss", "1461"], "--tcp-mss: must be 536 to 1460 (the MTU 1500 - 40) (got 1461)"),
    (["throughput", "--quic-datagram", "1199"], "--quic-datagram: must be 1200 to the scenario's MTU - 28 (got 1199)"),
    (["throughput", "--quic-datagram", "1473"], "--quic-datagram: must be 1200 to 1472 (the MTU 1500 - 28) (got 1473)"),
    (["flows", "--tcp-mss", "1461"], "--tcp-mss: must be 536 to 1460"),
    (["fairness", "--quic-datagram", "9000"], "--quic-datagram: must be 1200 to the scenario's MTU - 28 (got 9000)"),
])
def test_bad_sizes_are_refused_naming_the_option_and_range(args, message, tmp_path):
    r = CliRunner().invoke(app, ["run", *args, "--out", str(tmp_path / "never")])
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split()), r.output
    assert not (tmp_path / "never").exists()


def test_the_upper_bounds_follow_the_scenario_mtu():
    s = build(mtu=1400)
    plan = THROUGHPUT.plan(s, THROUGHPUT.options())
    assert plan.with_packet_sizes(s, 1360, 1372).tcp_mss == 1360
    with pytest.raises(PlanError, match=r"--tcp-mss: must be 536 to 1360 \(the MTU 1400 - 40\) \(got 1361\)"):
        plan.with_packet_sizes(s, 1361)
    with pytest.raises(PlanError, match=r"--quic-datagram: must be 1200 to 1372 \(the MTU 1400 - 28\) \(got 1373\)"):
        plan.with_packet_sizes(s, 1280, 1373)
    big = build(mtu=9000)
    assert plan.with_packet_sizes(big, 8960, 8972).quic_datagram == 8972


def test_the_defaults_keep_todays_sizes_and_the_plan_carries_them():
    s = build()
    for exp in (THROUGHPUT, FAIRNESS, FLOWS):
        plan = preflight(exp, s, exp.options())
        assert (plan.tcp_mss, plan.quic_datagram) == (1280, None), exp.name
    plan = preflight(THROUGHPUT, s, THROUGHPUT.options(tcp_mss=536, quic_datagram=1452))
    assert (plan.tcp_mss, plan.quic_datagram) == (536, 1452)
    plan = preflight(FLOWS, s, FLOWS.options(tcp_mss=600))
    assert (plan.tcp_mss, plan.quic_datagram) == (600, None)


def _specs(tmp_path: Path, size: int | None) -> tuple[ServerSpec, ClientSpec]:
    certs = Certs(tmp_path / "c.pem", tmp_path / "k.pem")
    server = ServerSpec(port=4433, cc="cubic", workdir=tmp_path / "s", certs=certs, address="198.18.0.1",
                        quic_datagram=size)
    client = ClientSpec(address="198.18.0.1", port=4433, workload=Workload.single(10), cc="cubic",
                        workdir=tmp_path / "c", certs=certs, timeout_s=10, quic_datagram=size)
    return server, client


def test_stacks_get_the_datagram_size_only_when_asked(tmp_path):
    aioquic, ngtcp2 = get_stack("aioquic"), get_stack("ngtcp2")
    server, client = _specs(tmp_path, 1452)
    for cmd in (aioquic.server_command(server), aioquic.client_command(client, tmp_path / "w.json")):
        assert cmd[cmd.index("--max-datagram-size") + 1] == "1452"
    for cmd in (ngtcp2.server_command(server), ngtcp2.client_command(client, tmp_path, [0])):
        assert "--max-udp-payload-size=1452" in cmd
    server, client = _specs(tmp_path, None)
    cmds = [aioquic.server_command(server), aioquic.client_command(client, tmp_path / "w.json"),
            ngtcp2.server_command(server), ngtcp2.client_command(client, tmp_path, [0])]
    assert not any(a.startswith(("--max-datagram-size", "--max-udp-payload-size")) for cmd in cmds for a in cmd)


def _run(tmp_path: Path, *args: str) -> tuple[dict, float]:
    """A short throughput run; its record and the mean size (bytes) of the IP packets
    dcemu delivered on the DC bearer."""
    out = tmp_path / "run"
    r = run_dclab("run", "throughput", "--size", "2MB", "--bw", "20,20", "--out", str(out), "--json", *args, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((out / "rep-01" / "result.json").read_text())
    assert rep["ok"], rep["error"]
    last = json.loads((out / "rep-01" / "dcemu-stats.jsonl").read_text().strip().splitlines()[-1])
    dc = next(b for b in last["bearers"] if b["name"] == "dc")  # cumulative counters
    assert dc["delivered_bytes"] >= 2_000_000
    return rep, dc["delivered_bytes"] / dc["delivered_packets"]


@pytest.mark.root
def test_tcp_mss_536_is_what_the_segments_carry(tmp_path):
    rep, mean = _run(tmp_path, "--stack", "tcp", "--tcp-mss", "536")
    assert (rep["details"]["tcp_mss"], rep["details"]["quic_datagram"]) == (536, None)
    # 536 of payload (524 with timestamps) + 40 of IP/TCP + 12 of timestamps at most; at the
    # default 1280 the mean is about 1310.
    assert 450 < mean <= 536 + 40 + 12, mean


@pytest.mark.root
def test_aioquic_sends_datagrams_of_1452(tmp_path):
    rep, mean = _run(tmp_path, "--stack", "aioquic", "--quic-datagram", "1452")
    assert (rep["details"]["tcp_mss"], rep["details"]["quic_datagram"]) == (1280, 1452)
    # A mean above 1280 + 28 is impossible with aioquic's default 1252 (IP packets <= 1280)
    # or with 1200; the largest possible is 1452 + 28.
    assert 1252 + 28 < mean <= 1452 + 28, mean


def test_report_series_keep_old_runs_with_new_ones_at_the_default():
    """A run stored before --tcp-mss/--streams existed ran at their defaults: the report
    draws it in the same series as a new run at the defaults, and a new run at another
    MSS in a series of its own."""
    def row(key: str, options: dict) -> dict:
        return {"run_key": key, "experiment": "throughput", "sweep": "batch", "value": "2", "value_num": 2.0,
                "stack": "tcp", "cc": "cubic", "host_config": "tcp", "options": options, "metrics": {}}

    new = THROUGHPUT.options(stack="tcp", cc="cubic", size="5MB").model_dump(mode="json")
    rows = [row("old", {"size": 5_000_000}), row("new", new), row("small", {**new, "tcp_mss": 536})]
    [(_, _, grouped)] = sweep_groups(runs(rows))
    labels = series_of(grouped)
    assert labels["old"] == labels["new"] == "tcp tcp_mss=1280"
    assert labels["small"] == "tcp tcp_mss=536"
    [(_, _, grouped)] = sweep_groups(runs(rows[:2]))
    assert set(series_of(grouped).values()) == {"tcp"}
