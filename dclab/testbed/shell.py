"""`dclab shell`: the testbed around any unmodified program, as mahimahi's shells are.

dcemu runs the scenario on one DC bearer that carries every packet between the two
namespaces; the program (or an interactive shell) runs in the client namespace and, if
asked, a server command in the server namespace, both with the addresses in their
environment. When the program exits (or on Ctrl-C), the server command is stopped and the
testbed torn down as after any run: namespaces, devices, processes and host settings. The
run directory keeps dcemu's records, a per-leg plot of the program's lifetime and, on
request, the captures and key logs (inspection.py)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..analysis.figures import capacities_of, link_usage
from ..dcemu.mode import EmulatorMode
from ..dcemu.records import Stats
from ..flowplan import Bearer, FlowPlan
from ..paths import CLIENT_ADDR, SERVER_ADDR
from ..scenario import Scenario
from .bed import stats_ms
from .hostconfig import HostConfig
from .inspection import Inspection
from .netns import listening, stop_process
from .testbed import Testbed, TestbedError

# The one bearer: no flow claims a port, so dcemu's default bearer carries everything.
SHELL_PLAN = FlowPlan(bearers=(Bearer("dc"),), flows=(), stats_interval_ms=100.0)
SERVER_WAIT_S = 15.0
FIGURE = "link-utilization.png"
SERVER_LOG = "server-cmd.log"
# With --keylog: where SSLKEYLOGFILE points each command (OpenSSL, GnuTLS, NSS, curl, browsers).
CLIENT_KEYLOG, SERVER_KEYLOG = "client-tls-keys.log", "server-tls-keys.log"


@dataclass
class ShellOutcome:
    exit_code: int  # the program's; 128 + N when signal N ended it
    duration_s: float
    run_dir: Path
    figure: Path | None
    summary: Stats | None  # dcemu's final record
    server_exit: int | None  # the server command's status when it ended by itself (None: still running, stopped)


def environment(bed: Testbed) -> dict[str, str]:
    """What the program and the server command find in their environment."""
    return {
        "DCLAB_SERVER": SERVER_ADDR,
        "DCLAB_CLIENT": CLIENT_ADDR,
        "DCLAB_RUN_DIR": str(bed.workdir),
        # A certificate for the server's address and its key (the testbed's, removed at the end).
        "DCLAB_CERT": str(bed.certs.cert),
        "DCLAB_KEY": str(bed.certs.key),
    }


def _exit_code(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def _wait_port(bed: Testbed, port: int, proc: subprocess.Popen[bytes]) -> None:
    """Until something listens on ``port`` (TCP or UDP) in the server namespace."""
    deadline = time.monotonic() + SERVER_WAIT_S
    while not (listening(bed.ns.server, port, "tcp") or listening(bed.ns.server, port, "udp")):
        if proc.poll() is not None:
            raise TestbedError(f"--server-cmd exited with {_exit_code(proc.returncode)} before listening on port {port}: "
                               f"see {bed.workdir / SERVER_LOG}")
        if time.monotonic() > deadline:
            raise TestbedError(f"--server-port: nothing listens on port {port} after {SERVER_WAIT_S:g} s")
        time.sleep(0.05)


def run_shell(scenario: Scenario, host: HostConfig, run_dir: Path, cmd: list[str] | None, server_cmd: str | None = None,
              server_port: int | None = None, inspect: Inspection = Inspection(), mode: EmulatorMode = EmulatorMode(),
              on_wait: Callable[[], None] | None = None, on_ready: Callable[[Testbed], None] | None = None) -> ShellOutcome:
    """Runs ``cmd`` (None: the user's $SHELL, interactive) in the client namespace of a
    fresh testbed, ``server_cmd`` (a shell command line) in the server namespace first;
    returns when ``cmd`` has exited and everything is torn down. Ctrl-C reaches the
    program (as in a shell); SIGTERM to dclab ends it and the testbed."""
    program = cmd or [os.environ.get("SHELL") or "/bin/bash", "-i"]
    figure: Path | None = None
    with Testbed(scenario, SHELL_PLAN, host, run_dir, on_wait=on_wait, inspect=inspect, emulator_args=mode.args()) as bed:
        assert bed.journal is not None
        env = {**os.environ, **environment(bed)}
        keys = {"SSLKEYLOGFILE": str(bed.workdir / SERVER_KEYLOG)} if inspect.keylog else {}
        server: subprocess.Popen[bytes] | None = None
        if server_cmd:
            with open(bed.workdir / SERVER_LOG, "wb") as log:
                server = subprocess.Popen(bed.ns.exec(bed.ns.server, "sh", "-c", server_cmd), env={**env, **keys},
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
            bed.journal.add_pid(server.pid)
            if server_port is not None:
                _wait_port(bed, server_port, server)
            elif server.poll() is not None:
                raise TestbedError(f"--server-cmd exited at once ({_exit_code(server.returncode)}): "
                                   f"see {bed.workdir / SERVER_LOG}")
        if on_ready:
            on_ready(bed)
        start_wall = time.time()
        if inspect.keylog:
            env["SSLKEYLOGFILE"] = str(bed.workdir / CLIENT_KEYLOG)
        child = subprocess.Popen(bed.ns.exec(bed.ns.client, *program), env=env)
        bed.journal.add_pid(child.pid)
        # Ctrl-C at a terminal reaches the program too (same process group): dclab waits for
        # it to end. A SIGINT sent to dclab alone is passed on.
        tty_foreground = sys.stdin.isatty() and os.tcgetpgrp(sys.stdin.fileno()) == os.getpgrp()

        def on_sigint(*_: object) -> None:
            if not tty_foreground and child.poll() is None:
                child.send_signal(signal.SIGINT)

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            rc = child.wait()
        finally:
            signal.signal(signal.SIGINT, previous)
        duration = time.time() - start_wall
        server_exit = None
        if server is not None:
            if server.poll() is not None:
                server_exit = _exit_code(server.returncode)
            stop_process(server)
        bed.finish()
        summary = bed.emulator.summary() if bed.emulator else None
        t0_ms = stats_ms(bed, start_wall)
        if t0_ms is not None:
            figure = link_usage(bed.workdir, t0_ms, capacities_of(scenario), bed.workdir / FIGURE,
                                f"per-leg downlink while `{shlex.join(program)[:60]}` ran", max(1.0, duration))
    return ShellOutcome(_exit_code(rc), duration, Path(run_dir), figure, summary, server_exit)
