"""`dclab shell`: an unmodified program (curl, a shell, Python's http.server) over the
emulated path; its exit status; the environment; the records and the plot; Ctrl-C and
SIGTERM; and nothing left behind either way."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import dclab_process, run_dclab, wait_for
from figure_checks import check, figure

from dclab.testbed.hostconfig import read_sysctl

WATCHED = ("net.core.rmem_default", "net.core.rmem_max", "net.ipv4.tcp_allowed_congestion_control")
SERVE = "python3 -m http.server --bind $DCLAB_SERVER 8000 --directory {d}"


def host_state() -> dict:
    return {k: read_sysctl(k) for k in WATCHED}


def namespaces() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def summary(run_dir: Path) -> dict:
    last = (run_dir / "dcemu-stats.jsonl").read_text().strip().splitlines()[-1]
    return json.loads(last)


def test_server_port_without_a_server_command_is_refused_before_anything_starts(tmp_path):
    r = run_dclab("shell", "--server-port", "8000", "--out", str(tmp_path / "x"), "--", "true", timeout=60)
    assert r.returncode == 2
    assert "--server-port: needs --server-cmd" in r.stderr
    assert not (tmp_path / "x").exists()


def test_a_bad_scenario_value_names_the_field(tmp_path):
    r = run_dclab("shell", "--bw", "20,-1", "--out", str(tmp_path / "x"), "--", "true", timeout=60)
    assert r.returncode == 2 and "bw" in r.stderr


@pytest.mark.root
def test_curl_fetches_from_a_server_command_through_dcemu_with_its_exit_status(tmp_path):
    body = tmp_path / "www" / "body"
    body.parent.mkdir()
    body.write_bytes(os.urandom(2_000_000))
    before, ns_before = host_state(), namespaces()
    out = tmp_path / "run"
    r = run_dclab(
        "shell", "--bw", "8,8", "--out", str(out), "--server-cmd", SERVE.format(d=body.parent), "--server-port", "8000",
        "--", "sh", "-c",
        'curl -sS -o "$DCLAB_RUN_DIR/got" -w "%{http_code} %{size_download}\\n" http://$DCLAB_SERVER:8000/body; exit 7',
        timeout=120,
    )
    assert r.returncode == 7, r.stderr  # the program's own status
    assert r.stdout.split() == ["200", "2000000"]
    assert (out / "got").read_bytes() == body.read_bytes()
    # Every byte crossed dcemu, split over both legs at 8 Mbit/s each.
    legs = summary(out)["legs"]
    assert sum(leg["downlink"]["bytes_out"] for leg in legs) > 2_000_000
    # Batches of 100 split 1:1: the legs' PDU counts differ by one batch at most.
    [(_, first), (_, second)] = summary(out)["bearers"][0]["tx_pdus"]
    assert 0 <= first - second <= 100 and first + second >= 2_000_000 / 1280, (first, second)
    info = figure(out / "link-utilization.png")
    assert info.command.startswith("python -m dclab.cli shell --bw 8,8 --out"), info.command
    # The run figure (dclab/analysis/run_figure.py): the whole run first, the legend below the panels.
    ax = check(info.axes[0], lines=2, hlines=[8.0, 8.0], ylabel="leg throughput\n(Mbit/s)")
    assert [s.label for s in ax.series] == ["leg1", "leg2"], ax.series
    assert (info.suptitle or "").startswith("per-leg downlink while `sh -c"), info.suptitle
    assert all(s.y[1] > 0 and s.mean is not None and s.mean <= 8 * 1.02 for s in ax.series), "each leg carried some, within its 8 Mbit/s"
    assert "Serving HTTP" in (out / "server-cmd.log").read_text() or "GET /body" in (out / "server-cmd.log").read_text()
    assert host_state() == before and namespaces() == ns_before


@pytest.mark.root
def test_without_a_command_it_is_an_interactive_shell_with_the_addresses(tmp_path):
    out = tmp_path / "run"
    script = 'echo "addr=$DCLAB_SERVER,$DCLAB_CLIENT"; ip -o -4 addr show | grep -c "inet 198.18.0.2 "; exit 5\n'
    with dclab_process("shell", "--out", str(out), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                       env={**os.environ, "SHELL": "/bin/sh"}) as p:
        got, _ = p.communicate(script, timeout=60)
    assert p.returncode == 5
    assert "addr=198.18.0.1,198.18.0.2" in got
    assert got.split()[-1] == "1"  # the client's address is in this namespace


@pytest.mark.root
@pytest.mark.parametrize("sig, forwarded", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_ctrl_c_and_sigterm_end_the_program_and_tear_everything_down(tmp_path, sig, forwarded):
    before, ns_before = host_state(), namespaces()
    out = tmp_path / "run"
    mark = tmp_path / "started"
    # a sleep no other process on the host runs (pgrep looks at the whole host)
    sleep = f"sleep 60.{os.getpid() % 1000:03d}"
    prog = f'trap "echo got-int > {tmp_path}/int; exit 42" INT; touch {mark}; {sleep} & wait'
    with dclab_process("shell", "--out", str(out), "--", "sh", "-c", prog) as p:
        wait_for(mark.exists, 30, "the program", p)
        t = time.monotonic()
        os.kill(p.pid, sig)  # to dclab alone, as `kill` would
        p.wait(timeout=30)
        assert time.monotonic() - t < 15
    if forwarded:  # SIGINT is passed on: the program decides, and its status is dclab's
        assert (tmp_path / "int").read_text().strip() == "got-int"
        assert p.returncode == 42
    else:
        assert p.returncode == 130
    assert host_state() == before and namespaces() == ns_before
    assert subprocess.run(["pgrep", "-fx", sleep], capture_output=True).returncode == 1


@pytest.mark.root
def test_a_server_command_that_fails_ends_the_shell_with_its_log_named(tmp_path):
    ns_before = namespaces()
    out = tmp_path / "run"
    r = run_dclab("shell", "--out", str(out), "--server-cmd", "echo broken; exit 3", "--server-port", "9",
                  "--", "true", timeout=60)
    assert r.returncode == 1
    assert "--server-cmd exited with 3 before listening on port 9" in r.stderr
    assert "broken" in (out / "server-cmd.log").read_text()
    assert namespaces() == ns_before


@pytest.mark.root
@pytest.mark.skipif(shutil.which("tshark") is None or shutil.which("openssl") is None, reason="needs tshark and openssl")
def test_pcap_and_keylog_let_tshark_read_an_unmodified_programs_tls(tmp_path):
    out = tmp_path / "run"
    r = run_dclab(
        "shell", "--out", str(out), "--pcap", "--keylog",
        "--server-cmd", 'exec openssl s_server -quiet -www -cert "$DCLAB_CERT" -key "$DCLAB_KEY" -accept 8443',
        "--server-port", "8443",
        "--", "sh", "-c", 'curl -sS --cacert "$DCLAB_CERT" -o /dev/null -w "%{http_code}\\n" https://$DCLAB_SERVER:8443/',
        timeout=120,
    )  # fmt: skip
    assert r.returncode == 0 and r.stdout.strip() == "200", r.stderr
    keys = out / "client-tls-keys.log"
    assert "CLIENT_TRAFFIC_SECRET_0" in keys.read_text()  # curl honoured SSLKEYLOGFILE

    def http(extra: list[str]) -> str:
        p = subprocess.run(["tshark", "-r", str(out / "client-end.pcap"), "-Y", "http.request", "-T", "fields",
                            "-e", "http.request.uri", *extra], capture_output=True, text=True, timeout=60)  # fmt: skip
        return p.stdout.strip()

    assert http([]) == ""  # encrypted
    assert http(["-o", f"tls.keylog_file:{keys}", "-d", "tcp.port==8443,tls"]) == "/"
    assert sorted(p.name for p in (out / "legs").glob("*.pcap")) == ["leg1.pcap", "leg2.pcap"]
    assert "client-tls-keys.log" in (out / "INSPECT.txt").read_text()
