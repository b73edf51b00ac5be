"""How dcemu runs (`--busy-poll`, `--realtime`, `--spin-us`, `--idle-halt`, `--tun-offload`) on every
experiment and on `dclab shell` (dclab/dcemu/mode.py): the options reach dcemu,
bad values are refused before anything starts, naming the option, and a simulated run,
which has no real-time emulator, refuses them. Their effect on timing is dcemu's own tests'
and the bench's (emu/tests/netns.rs, bench/run.py)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from conftest import run_dclab
from measured import check_bound
from pydantic import ValidationError

from dclab.dcemu.mode import EmulatorMode
from dclab.experiments.throughput import ThroughputOptions

BUSY = "dcemu: busy polling"
REALTIME = "dcemu: real-time priority"
IDLE_POLL = "dcemu: idle CPUs poll while it runs"
CPU_DMA_LATENCY = Path("/dev/cpu_dma_latency")


def test_defaults_ask_dcemu_for_nothing_and_each_option_for_its_flag():
    assert EmulatorMode().args() == ()
    assert ThroughputOptions().emulator_args() == ()
    assert ThroughputOptions(busy_poll=True).emulator_args() == ("--busy-poll",)
    assert ThroughputOptions(realtime=True).emulator_args() == ("--realtime",)
    assert ThroughputOptions(spin_us=0).emulator_args() == ("--spin-us", "0")
    assert ThroughputOptions(idle_halt=True).emulator_args() == ("--idle-halt",)
    assert ThroughputOptions(tun_offload="read").emulator_args() == ("--tun-offload", "read")
    both = EmulatorMode(busy_poll=True, tun_offload="none")
    assert both.args() == ("--busy-poll", "--tun-offload", "none") and both.asked() == ["--busy-poll", "--tun-offload"]


def test_bad_values_name_the_field_and_the_range():
    with pytest.raises(ValueError, match=r"spin_us: must be 0 to 10000 \(got 10001\)"):
        EmulatorMode(spin_us=10001)
    with pytest.raises(ValueError, match="tun_offload: must be one of all, read, write, none"):
        EmulatorMode(tun_offload="gso")
    with pytest.raises(ValidationError, match="spin_us"):
        ThroughputOptions(spin_us=-1)


@pytest.mark.parametrize("args, said", [
    (("--spin-us", "20000"), "--spin-us"),
    (("--tun-offload", "gso"), "--tun-offload"),
])
def test_the_cli_refuses_bad_values_before_a_run_starts(tmp_path, args, said):
    for cmd in (("run", "throughput", "--size", "1MB"), ("shell",)):
        r = run_dclab(*cmd, *args, "--out", str(tmp_path / "x"), *(("--", "true") if cmd == ("shell",) else ()),
                      timeout=60)
        assert r.returncode == 2, r.stderr
        assert said in r.stderr
        assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("flag", [("--busy-poll",), ("--realtime",), ("--spin-us", "0"), ("--tun-offload", "none")])
def test_a_simulated_run_refuses_them_before_it_starts(tmp_path, flag):
    r = run_dclab("run", "throughput", "--backend", "sim", "--size", "1MB", *flag, "--out", str(tmp_path / "x"),
                  timeout=60)
    assert r.returncode == 2
    assert f"{flag[0]}: only with --backend emu" in r.stderr
    assert not (tmp_path / "x").exists()


def _run_log(tmp_path, name: str, *flags: str) -> str:
    out = tmp_path / name
    r = run_dclab("run", "throughput", "--stack", "tcp", "--size", "10MB", *flags, "--out", str(out), "--json",
                  timeout=180)
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads((out / "rep-01" / "result.json").read_text())
    assert result["ok"]
    check_bound(f"emulator_mode.{name}.tcp_10mb_mbps", result["metrics"]["goodput_mbps"])  # no mode slows the legs
    return (out / "rep-01" / "dcemu.log").read_text()


@pytest.mark.root
def test_each_mode_reaches_dcemu_and_the_run_completes(tmp_path):
    plain = _run_log(tmp_path, "plain")
    assert BUSY not in plain and REALTIME not in plain
    assert "TUN offload read: " in plain and "write: join" in plain and "spins its last 50 us" in plain
    assert IDLE_POLL in plain
    busy = _run_log(tmp_path, "busy", "--busy-poll")
    assert BUSY in busy
    other = _run_log(tmp_path, "other", "--realtime", "--spin-us", "0", "--idle-halt", "--tun-offload", "none")
    assert REALTIME in other and "TUN offload none" in other and "spins its last 0 us" in other
    assert IDLE_POLL not in other


@pytest.mark.root
def test_shell_passes_the_mode_to_dcemu(tmp_path):
    out = tmp_path / "run"
    r = run_dclab("shell", "--busy-poll", "--tun-offload", "write", "--out", str(out), "--", "true", timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    log = (out / "dcemu.log").read_text()
    assert BUSY in log and "TUN offload write: join" in log


def _latency_us() -> int:
    """The CPUs' wake-up latency the kernel allows now (the strictest request held)."""
    return struct.unpack("i", CPU_DMA_LATENCY.read_bytes()[:4])[0]


@pytest.mark.root
@pytest.mark.skipif(not CPU_DMA_LATENCY.exists(), reason="no PM QoS interface on this kernel")
def test_dcemu_holds_idle_cpus_polling_for_the_run_only(tmp_path):
    before = _latency_us()
    assert before > 0, "another process holds the wake-up latency at 0, so this test cannot tell dcemu's hold"
    seen = {}
    for name, flags in (("default", ()), ("halt", ("--idle-halt",))):
        out, value = tmp_path / name, tmp_path / f"{name}.bin"
        r = run_dclab("shell", *flags, "--out", str(out), "--", "dd", f"if={CPU_DMA_LATENCY}", f"of={value}", "bs=4",
                      "count=1", timeout=60)
        assert r.returncode == 0, r.stderr[-2000:]
        seen[name] = struct.unpack("i", value.read_bytes())[0]
        assert _latency_us() == before, "the request ends with dcemu"
    assert seen == {"default": 0, "halt": before}
