"""The run figure and the diagnosis on real runs (docs/run-figure.md): a default-scenario
aioquic download of 20 MB with the default UDP buffer and with a large one. Each run takes
about 15 s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_dclab
from figure_checks import figure

from dclab.analysis import figures
from dclab.analysis.run_events import RunFacts
from dclab.analysis.socket_drops import read_samples
from dclab.experiments import get_experiment
from dclab.experiments.base import RepResult
from dclab.scenario import Scenario

pytestmark = pytest.mark.root

TITLES = ["the first 3 s (10 ms intervals)"]


def run(out: Path, *more: str) -> tuple[str, RepResult, Path]:
    p = run_dclab("run", "throughput", "--size", "20MB", "--out", str(out), *more, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    rep = out / "rep-01"
    return p.stdout, RepResult.model_validate_json((rep / "result.json").read_bytes()), rep


def diagnosis_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("diagnosis:")]


def test_default_buffer_run_samples_its_socket_drops_and_prints_the_analysis_diagnosis(tmp_path):
    stdout, result, rep = run(tmp_path / "default")
    info = figure(tmp_path / "default" / "link-utilization.png")
    assert len(info.axes) == 3 and info.axes[0].title.startswith("whole transfer (")
    assert info.axes[2].title == TITLES[0]
    samples = read_samples(rep)
    assert samples is not None, "the testbed sampled the client's socket drops"
    # the samples account for every drop the run's before-and-after counters saw
    assert sum(s.drops for s in samples) == result.details["client_udp_drops"]
    end = result.flows[0].completion_s
    assert end is not None and all(-1.0 < (s.t_ms - (result.t0_ms or 0.0)) / 1e3 < end + 1.0 for s in samples)
    # the line printed is the analysis' diagnosis of the run's records, or none when it has none
    want = figures.run_diagnosis(rep, RunFacts.of(result.stored(Scenario(), get_experiment("throughput").options())), [20.0, 20.0])
    assert diagnosis_lines(stdout) == ([want.line()] if want is not None else [])


def test_large_buffer_run_drops_nothing_at_the_socket_and_names_no_socket_drops(tmp_path):
    stdout, result, rep = run(tmp_path / "large", "--udp-buffer", "large", "--json")
    assert (tmp_path / "large" / "link-utilization.png").is_file()
    assert result.details["client_udp_drops"] == 0
    assert read_samples(rep) == []
    # --json carries the diagnosis lines as a list: those of the run's records, none naming the socket
    diagnoses = json.loads(stdout)["diagnoses"]
    want = figures.run_diagnosis(rep, RunFacts.of(result.stored(Scenario(), get_experiment("throughput").options())), [20.0, 20.0])
    assert diagnoses == ([want.line()] if want is not None else [])
    assert not any("client's socket" in line for line in diagnoses)
    assert json.loads((rep / "result.json").read_text())["ok"]
