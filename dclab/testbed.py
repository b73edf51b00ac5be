"""The testbed of one run, as one context manager: uniquely named namespaces, the host
settings of the chosen host configuration, dcemu started and checked, TCP MSS clamped
to 1280 as in the study, servers started on demand, and everything undone on exit,
whatever the exit (success, error, Ctrl-C, SIGTERM). What a killed run leaves, the
journal lets `dclab clean` undo.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path
from typing import Callable, Literal

from .certs import make_certs
from .emulator import Emulator, require_root
from .endpoints.base import DownloadResult, DownloadSpec, ServerSpec, Stack
from .hostconfig import HostConfig, HostLock, Journal, read_sysctl, write_sysctl
from .netns import Namespaces, kill_in, sh, stop_process, wait_listening
from .scenario import Scenario, to_dcemu

SERVER_ADDR, CLIENT_ADDR = "198.18.0.1", "198.18.0.2"
MSS = 1280


class TestbedError(RuntimeError):
    pass


class Testbed:
    """Use as ``with Testbed(...) as tb: tb.start_server(...); tb.download(...)``."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        scenario: Scenario,
        host: HostConfig,
        workdir: Path,
        bearers: Literal["throughput", "fairness"] = "throughput",
        tcp_ccs: tuple[str, ...] = (),
        on_wait: Callable[[], None] | None = None,
    ):
        self.scenario = scenario
        self.host = host
        self.workdir = Path(workdir)
        self.bearers = bearers
        self.tcp_ccs = tcp_ccs
        self.on_wait = on_wait
        self.ns = Namespaces()
        self.journal: Journal | None = None
        self.emulator: Emulator | None = None
        self.servers: list[subprocess.Popen] = []
        self.settings: dict[str, str] = {}  # every host setting in force, for the record
        self._exit = contextlib.ExitStack()

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> "Testbed":
        require_root()
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._exit.enter_context(HostLock(self.on_wait))
            self.journal = Journal(self.ns.tag)
            self._exit.callback(self.journal.undo)
            self.journal.add_namespaces(self.ns.server, self.ns.client)
            self._exit.enter_context(self.ns)
            self._apply_host_settings()
            self._start_emulator()
            self._clamp_mss()
            self.certs = make_certs(self.workdir / "certs", SERVER_ADDR)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops servers and dcemu (its summary is written), removes the namespaces,
        restores the host settings. Safe to call twice."""
        for p in self.servers:
            stop_process(p)
        self.servers.clear()
        if self.emulator:
            self.emulator.stop()
        self._exit.close()  # namespaces, journal undo (sysctls), host lock, in reverse

    # -- setup -------------------------------------------------------------------------

    def _apply_host_settings(self) -> None:
        assert self.journal
        for name, value in self.host.global_sysctls.items():
            self.journal.set_sysctl(name, value)
        if self.tcp_ccs:
            allowed = read_sysctl("net.ipv4.tcp_allowed_congestion_control").split()
            missing = [c for c in self.tcp_ccs if c not in allowed]
            if missing:
                available = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
                absent = [c for c in missing if c not in available]
                if absent:
                    raise TestbedError(f"kernel has no TCP congestion control {', '.join(absent)} (available: {' '.join(available)})")
                self.journal.set_sysctl("net.ipv4.tcp_allowed_congestion_control", " ".join(allowed + missing))
        for ns in (self.ns.server, self.ns.client):
            for name, value in self.host.netns_sysctls.items():
                write_sysctl(name, value, ns)
        for name in ("net.core.rmem_default", "net.core.rmem_max", "net.ipv4.tcp_allowed_congestion_control"):
            self.settings[name] = read_sysctl(name)
        for name in self.host.netns_sysctls:
            self.settings[f"{name} (namespaces)"] = read_sysctl(name, self.ns.client)

    def _start_emulator(self) -> None:
        assert self.journal
        topology = {
            "server_netns": self.ns.server,
            "client_netns": self.ns.client,
            "server_tun": f"dcemu-{self.ns.tag}s",
            "client_tun": f"dcemu-{self.ns.tag}c",
            "server_addr": SERVER_ADDR,
            "client_addr": CLIENT_ADDR,
        }
        text = to_dcemu(self.scenario, topology, self.bearers)
        self.emulator = Emulator(text, self.workdir, on_spawn=self.journal.add_pid)
        self.emulator.__enter__()
        assert self.emulator.proc
        if self.emulator.proc.poll() is not None:
            raise TestbedError(f"dcemu exited at start: {self.emulator.log.read_text().strip()}")

    def _clamp_mss(self) -> None:
        """TCP MSS 1280 on both sides, as the study clamped it (so headers + PDCP fit)."""
        for ns in (self.ns.server, self.ns.client):
            sh("ip", "netns", "exec", ns, "iptables", "-t", "mangle", "-A", "POSTROUTING", "-p", "tcp",
               "--tcp-flags", "SYN,RST", "SYN", "-j", "TCPMSS", "--set-mss", str(MSS))

    # -- endpoints ---------------------------------------------------------------------

    def start_server(self, stack: Stack, port: int, cc: str, qlog: bool = False, name: str | None = None) -> None:
        """Starts ``stack``'s server in the server namespace and waits until it listens."""
        assert self.journal
        if cc not in stack.ccs:
            raise TestbedError(f"--cc: {stack.name} offers {', '.join(stack.ccs)} (got {cc!r})")
        for k, v in stack.server_sysctls(cc).items():
            write_sysctl(k, v, self.ns.server)
            self.settings[f"{k} (server namespace)"] = read_sysctl(k, self.ns.server)
        workdir = self.workdir / (name or f"server-{stack.name}-{port}")
        workdir.mkdir(parents=True, exist_ok=True)
        spec = ServerSpec(port=port, cc=cc, workdir=workdir, certs=self.certs, address=SERVER_ADDR, qlog=qlog)
        log = open(workdir / "server.log", "wb")
        proc = subprocess.Popen(self.ns.exec(self.ns.server, *stack.server_command(spec)), stdout=log, stderr=subprocess.STDOUT)
        self.journal.add_pid(proc.pid)
        self.servers.append(proc)
        try:
            wait_listening(self.ns.server, port, stack.transport, proc, 15)
            deadline = time.monotonic() + 15
            while not stack.server_ready(spec):
                if time.monotonic() > deadline:
                    raise RuntimeError("not ready after 15 s")
                time.sleep(0.05)
        except RuntimeError as e:
            raise TestbedError(f"{stack.name} server: {e}: {tail(workdir / 'server.log')}") from None

    def download(self, stack: Stack, port: int, size: int, cc: str, timeout_s: float, qlog: bool = False,
                 name: str = "client") -> DownloadResult:
        workdir = self.workdir / name
        workdir.mkdir(parents=True, exist_ok=True)
        spec = DownloadSpec(address=SERVER_ADDR, port=port, size=size, cc=cc, workdir=workdir, certs=self.certs,
                            timeout_s=timeout_s, qlog=qlog)
        return stack.download(spec, ["ip", "netns", "exec", self.ns.client])

    def stats(self) -> list[dict]:
        return self.emulator.records() if self.emulator else []


def tail(path: Path, n: int = 400) -> str:
    try:
        return path.read_text(errors="replace")[-n:].strip()
    except OSError:
        return ""


__all__ = ["Testbed", "TestbedError", "kill_in"]
