"""Every kind of bad input is refused before anything starts: exit status 2, the option or
the file's field named with what is allowed, no traceback, nothing created. Table-driven
over the scenario options, the run options, sweeps, scenario files and campaign files."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from dclab.cli import app
from dclab.paths import DCEMU

BIG = str(2**63)


def refused(args: list[str], *fragments: str, tmp_path: Path | None = None) -> str:
    r = CliRunner().invoke(app, args)
    text = " ".join(r.output.split())
    assert r.exit_code == 2, (args, r.exit_code, r.output, r.exception)
    assert "Traceback" not in r.output and not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit)
    for f in fragments:
        assert f in text, (args, f, r.output)
    return text


SCENARIO_OPTIONS = [
    (["--batch", "0"], "--batch: must be at least 1 and at most 100000 (got 0)"),
    (["--batch", "x"], "'x' is not a valid integer"),
    (["--batch="], "--batch"),
    (["--split="], "--split: expected numbers separated by ':'"),
    (["--split", "a:b"], "--split: expected numbers separated by ':'"),
    (["--split", "0:0"], "--split: at least one share must be above 0"),
    (["--split", "50"], "--split: needs one value per leg (2, as --bw gives), got 1"),
    (["--split", "-1:50"], "--split (leg 1): must be at least 0"),
    (["--bw="], "--bw: expected numbers separated by ','"),
    (["--bw", "0,20"], "--bw (leg 1): must be at least 0.001"),
    (["--bw", "nan,20"], "--bw: expected numbers"),
    (["--bw", "inf,20"], "--bw: expected numbers"),
    (["--bw", ",".join(["1"] * 9)], "--bw: List should have at most 8 items"),
    (["--delay", "-1,10"], "--delay (leg 1): must be at least 0"),
    (["--delay", "1,2,3"], "--delay: needs one value per leg"),
    (["--delay="], "--delay: expected numbers"),
    (["--delay-cov", "2"], "--delay-cov: must be at least 0 and at most 1 (got 2.0)"),
    (["--loss", "0,120"], "--loss (leg 2): must be at least 0 and at most 100 (got 120.0)"),
    (["--loss="], "--loss: expected numbers"),
    (["--t-reordering", "5,6"], "--t-reordering: expected one value in ms (0 to 60000), or 'inf' (got '5,6')"),
    (["--t-reordering", "-1"], "--t-reordering: must be at least 0 and at most 60000"),
    (["--t-reordering", "soon"], "--t-reordering: expected one value in ms"),
    (["--t-reordering="], "--t-reordering: expected one value in ms"),
    (["--jitter-reorders=no"], "--jitter-reorders"),
    (["--order-preserving-jitter", "--delay-cov", "-0.1"], "--delay-cov: must be at least 0 and at most 1"),
    (["--uplink-loss", "120"], "--uplink-loss: must be at least 0 and at most 100 (got 120.0)"),
    (["--uplink-loss", "-1"], "--uplink-loss: must be at least 0 and at most 100 (got -1.0)"),
    (["--uplink-loss", "nan"], "--uplink-loss: must be at least 0 and at most 100 (got nan)"),
    (["--uplink-loss="], "'' is not a valid float"),
    (["--uplink-loss", "1,2"], "'1,2' is not a valid float"),
    (["--uplink-delay", "-1"], "--uplink-delay: must be at least 0 and at most 10000 (got -1.0)"),
    (["--uplink-delay", "20000"], "--uplink-delay: must be at least 0 and at most 10000 (got 20000.0)"),
    (["--uplink-delay", "soon"], "'soon' is not a valid float"),
    (["--uplink-bw", "0"], "--uplink-bw: must be at least 0.001 and at most 100000 (got 0.0)"),
    (["--uplink-bw", "inf"], "--uplink-bw: must be at least 0.001 and at most 100000 (got inf)"),
    (["--uplink-bw", "fast"], "'fast' is not a valid float"),
    (["--queue", "0"], "--queue: must be at least 1 and at most 1000000 (got 0)"),
    (["--queue", "1000001"], "--queue: must be at least 1 and at most 1000000 (got 1000001)"),
    (["--queue", "1.5"], "'1.5' is not a valid integer"),
    (["--queue="], "--queue"),
    (["--uplink-queue", "0"], "--uplink-queue: must be at least 1 and at most 1000000 (got 0)"),
    (["--uplink-queue", BIG], "--uplink-queue: must be at least 1 and at most 1000000"),
    (["--uplink-queue", "x"], "'x' is not a valid integer"),
    (["--trace", "/nonexistent/trace.csv"], "--trace: no such file '/nonexistent/trace.csv'"),
    (["--trace", "data/traces/raca4g/4G_A_2018.01.27_13.58.29.csv,/nonexistent/b.csv"], "--trace: no such file '/nonexistent/b.csv'"),
    (["--trace", "/nonexistent/a.csv,"], "--trace: an empty file name in '/nonexistent/a.csv,' (FILE or FILE,FILE,...)"),
    (["--link", "lte:good", "--queue", "100"], "--queue: not used with --link (each device has its own queue at the cell"),
    (["--link", "lte:good", "--delay", "10,10"], "--delay: needs one value per leg (1, --link lte:good gives 1), got 2"),
    (["--outage", "3:1:1"], "--outage: leg 3 does not exist (the scenario has 2)"),
    (["--outage", "2:x:1"], "--outage: expected LEG:AT_S:DURATION_S, e.g. 2:6:2 (got '2:x:1')"),
    (["--outage", "2:1:0"], "--outage: duration_s must be at least 0.001 and at most 3600 (got 0.0)"),
    (["--scenario", "/nonexistent.toml"], "does not exist"),
]


@pytest.mark.parametrize("args, message", SCENARIO_OPTIONS)
def test_scenario_options(args, message):
    refused(["scenario", "show", *args], message)


RUN_OPTIONS = [
    (["throughput", "--size", "1.2.3MB"], "--size: expected a size like 100MB, 1GB or 5000000 (got '1.2.3MB')"),
    (["throughput", "--size="], "--size: expected a size"),
    (["throughput", "--size", "0"], "--size: must be between 1 B and 100 GB"),
    (["throughput", "--size", "101GB"], "--size: must be between 1 B and 100 GB"),
    (["split-layer", "--short", "0"], "Invalid value for --short: must be between 1 B and 100 GB (got '0')"),
    (["split-layer", "--setting", "fairness", "--shorts", "3"], "Invalid value for --shorts: not used: the fairness setting runs no short downloads"),
    (["split-layer", "--duration", "10"], "Invalid value for --duration: not used: the alone setting measures downloads"),
    (["split-layer", "--mptcp-scheduler", "default"], "Invalid value for --mptcp-scheduler: not used: pdcp runs no MPTCP"),
    (["split-layer", "--aggregation", "mptcp", "--duplicate"], "--duplicate: the aggregation decides it here, and mptcp does not duplicate"),
    (["throughput", "--reps", "0"], "--reps"),
    (["throughput", "--seed", "-1"], "--seed"),
    (["throughput", "--seed", BIG], "--seed"),
    (["throughput", "--timeout", "0"], "--timeout"),
    (["throughput", "--stack", "quiche"], "--stack"),
    (["throughput", "--cc", "vegas"], "aioquic offers reno, cubic, bbr (got 'vegas')"),
    (["throughput", "--udp-buffer", "huge"], "--udp-buffer"),
    (["throughput", "--on-error", "ignore"], "--on-error"),
    (["fairness", "--duration", "0"], "--duration"),
    (["capacity", "--duration", "10", "--outage", "2:80000:1"], "--outage: at 80000 s, after this run has ended (its clients run 10 s at most"),
    (["throughput", "--size", "1MB", "--outage", "2:3000:1"], "--outage: at 3000 s, after this run has ended"),
    (["fairness", "--stacks", "dc"], "--stacks: expected dc=VALUE"),
    (["fairness", "--stacks", "dc=nope"], "--stack: must be one of aioquic, aioquic-2020, mptcp, ngtcp2, noq, quic-go, quinn, tcp (got 'nope')"),
    (["fairness", "--bw", "30"], "fairness needs two legs"),
]


@pytest.mark.parametrize("args, message", RUN_OPTIONS)
def test_run_options(args, message, tmp_path):
    refused(["run", *args, "--out", str(tmp_path / "never")], message)
    assert not (tmp_path / "never").exists()


@pytest.mark.skipif(not DCEMU.exists(), reason="dcemu not built")
@pytest.mark.parametrize(
    "content, message",
    [("", "empty"), ("Timestamp,DL_bitrate\nx,y\n", "DL_bitrate"), ("Timestamp,Other\n1,2\n", "DL_bitrate")],
)
def test_a_bad_trace_is_refused_by_the_emulator_before_a_run(content, message, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(content)
    text = refused(["run", "throughput", "--trace", str(trace), "--out", str(tmp_path / "never")],
                   "the emulator refuses this scenario")
    assert message.lower() in text.lower()
    assert not (tmp_path / "never").exists()


SWEEPS = [
    (["--param", "nope"], "--param: unknown parameter 'nope'"),
    (["--param", "batch=1:0:1"], "a range needs lo <= hi and step > 0"),
    (["--param", "batch=0:100000:1"], "has more than 10000 values"),
    (["--param", "batch=a,b"], "expected a list like 2,10,50"),
    (["--param", "batch=10", "--experiment", "nope"], "'nope' is not one of"),
    (["--param", "batch=10", "--config", "tcp:vegas"], "tcp offers cubic, reno, bbr (got 'vegas')"),
    (["--param", "batch=10", "--config", "aioquic:reno:huge"], "udp_buffer must be default or large"),
    (["--param", "batch=10", "--set", "throughput.size=1.2.3MB"], "size: expected a size"),
    (["--param", "batch=10", "--set", "throughput"], "expected EXPERIMENT.OPTION=VALUE"),
    (["--param", "batch=10", "--reps", "0"], "--reps"),
]


@pytest.mark.parametrize("args, message", SWEEPS)
def test_sweeps(args, message, tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path))
    refused(["sweep", *args, "--plan"], message)
    assert not list(tmp_path.rglob("store.sqlite"))


SCENARIO_FILES = [
    ('duplicate = "yes"\n', "duplicate: Input should be a valid boolean"),
    ("reordering = 1\n", "reordering: Input should be a valid boolean"),
    ("batch = -5\n", "batch: must be at least 1"),
    ("jitter_reorders = 0\n", "jitter_reorders: Input should be a valid boolean"),
    ("uplink_loss = 101\n", "uplink_loss: must be at least 0 and at most 100"),
    ("queue_packets = 0\n", "queue_packets: must be at least 1 and at most 1000000"),
    (f"seed = {BIG}\n", "seed: Input should be less than or equal to 9223372036854775807"),
    ("bw = [20, 0]\n", "bw[1]: must be at least 0.001"),
    ("split = []\n", "split: List should have at least 1 item"),
    ('bw = "fast"\n', "bw: Input should be a valid list"),
    ("colour = 3\n", "colour: unknown field"),
    ("batch = [\n", "is not valid TOML"),
]


@pytest.mark.parametrize("content, message", SCENARIO_FILES)
def test_scenario_files_name_their_field(content, message, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(content)
    text = refused(["scenario", "show", "--scenario", str(f)], message)
    assert "s.toml" in text and " --" not in text.split("s.toml", 1)[1][:4]  # the file's field, not an option


GROUP = '[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\n'
CAMPAIGN_FILES = [
    ('reps = "3"\n' + GROUP, "reps: Input should be a valid integer"),
    ("reps = 0\n" + GROUP, "reps: Input should be greater than or equal to 1"),
    ("colour = 1\n" + GROUP, "colour: unknown key"),
    ('[throughput]\nqlog = "yes"\n' + GROUP, "[throughput]: qlog: Input should be a valid boolean"),
    ('[throughput]\nsize = "1.2.3MB"\n' + GROUP, "[throughput]: size: expected a size"),
    ("[[group]]\nconfigs = \"tcp\"\nsweeps = [\"batch\"]\n", "group[0].configs: Input should be a valid list"),
    ('[[group]]\nconfigs = [{stack = "tcp", udp_buffer = "huge"}]\nsweeps = ["batch"]\n',
     "group[0].configs[0].udp_buffer: Input should be 'default' or 'large'"),
    ('[[group]]\nconfigs = [{stack = "tcp", speed = 1}]\nsweeps = ["batch"]\n', "group[0].configs[0].speed: Extra inputs"),
    ('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = [{ name = "batch", values = [] }]\n',
     "group[0].sweeps[0].values: List should have at least 1 item"),
    ('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = [{ name = "batch", range = [5, 1, 1] }]\n',
     "a range needs lo <= hi"),
    ('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = 5\n', "group[0].sweeps: Input should be a valid list"),
    ('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\nexperiments = ["nope"]\n', "unknown experiment 'nope'"),
    ('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\nscenario = { batch = 0 }\n', "scenario: batch: must be at least 1"),
    ('[[group]]\nconfigs = [{stack = "tcp"}]\nsweeps = ["batch"]\ncolour = 1\n', "group[0].colour: Extra inputs"),
    ('description = "no groups"\n', "no [[group]] tables"),
    ("reps = [\n", "x.toml"),
]


@pytest.mark.parametrize("content, message", CAMPAIGN_FILES)
def test_campaign_files_name_their_field(content, message, tmp_path, monkeypatch):
    monkeypatch.setenv("DCLAB_RESULTS", str(tmp_path / "results"))
    f = tmp_path / "x.toml"
    f.write_text(content)
    for cmd in (["campaign", "plan", str(f)], ["campaign", "run", str(f)]):
        refused(cmd, message)
    assert not (tmp_path / "results").exists()
