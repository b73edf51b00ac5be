"""`--busy-poll` on every experiment: dcemu then polls instead of sleeping (its own tests
cover the timing; emu/tests/netns.rs). Here: the option reaches dcemu, and a simulated run,
which has no real-time emulator, refuses it before anything starts."""

from __future__ import annotations

import json

import pytest
from conftest import run_dclab

from dclab.experiments.throughput import ThroughputOptions

NOTE = "dcemu: busy polling"


def test_options_ask_dcemu_for_busy_polling():
    assert ThroughputOptions().emulator_args() == ()
    assert ThroughputOptions(busy_poll=True).emulator_args() == ("--busy-poll",)


def test_a_simulated_run_refuses_busy_poll_before_it_starts(tmp_path):
    r = run_dclab("run", "throughput", "--backend", "sim", "--size", "1MB", "--busy-poll",
                  "--out", str(tmp_path / "x"), timeout=60)
    assert r.returncode == 2
    assert "--busy-poll: only with --backend emu" in r.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.root
def test_busy_poll_reaches_dcemu_and_the_run_completes(tmp_path):
    logs = {}
    for flag in ((), ("--busy-poll",)):
        out = tmp_path / ("busy" if flag else "sleep")
        r = run_dclab("run", "throughput", "--stack", "tcp", "--size", "2MB", *flag, "--out", str(out), "--json",
                      timeout=180)
        assert r.returncode == 0, r.stderr[-2000:]
        result = json.loads((out / "rep-01" / "result.json").read_text())
        assert result["ok"] and result["metrics"]["goodput_mbps"] > 0
        logs[bool(flag)] = (out / "rep-01" / "dcemu.log").read_text()
    assert NOTE in logs[True]
    assert NOTE not in logs[False]
