"""The testbed of one run, as one context manager: uniquely named namespaces, the host
settings of the chosen host configuration, dcemu started on the scenario and the flow
plan's bearers, TCP MSS clamped to the plan's ``tcp_mss`` (1280 as in the study by
default), a server per flow, the flows' clients, and everything undone on exit, whatever
the exit (success, error, Ctrl-C, SIGTERM). What a killed run leaves, the journal lets
`dclab clean` undo.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..analysis.socket_drops import append_samples
from ..dcemu.config import to_dcemu
from ..dcemu.process import Emulator, require_root
from ..dcemu.records import Stats, StatsRecords
from ..endpoints import get_stack
from ..endpoints.base import ClientSession, ClientSpec, ServerSpec, TransferResult, Workload
from ..flowplan import Flow, FlowPlan
from ..paths import CLIENT_ADDR, SERVER_ADDR
from ..scenario import Scenario
from .certs import make_certs
from .hostconfig import HostConfig, HostLock, Journal, read_sysctl, recover, write_sysctl
from .inspection import Inspection, write_guide
from .netns import Namespaces, kill_in, kill_inode, sh, stop_process, udp_rcvbuf_errors, wait_listening
from .ping import Probe, ping_args
from .socket_sampler import SocketSampler
from .udp_drops import DropSampler


class TestbedError(RuntimeError):
    pass


class PartDied(TestbedError):
    """dcemu or a server exited while the clients ran; the message names it, its exit
    status and the end of its log."""


WATCH_S = 0.1  # how often the parts are checked while clients run
DEATH_GRACE_S = 0.5


class Testbed:
    """Use as ``with Testbed(scenario, plan, host, dir) as tb: tb.start_servers();
    results = tb.run_clients(timeout_s); records = tb.finish()``."""

    __test__ = False  # not a pytest class

    def __init__(self, scenario: Scenario, plan: FlowPlan, host: HostConfig, workdir: Path,
                 on_wait: Callable[[], None] | None = None, inspect: Inspection = Inspection(),
                 emulator_args: tuple[str, ...] = ()):
        self.scenario = scenario
        self.inspect = inspect  # captures, key logs, qlogs kept on request (inspection.py)
        self.emulator_args = emulator_args  # dcemu run options asked for, e.g. --busy-poll
        self.plan = plan
        self.host = host
        self.workdir = Path(workdir)
        self.on_wait = on_wait
        self.ns = Namespaces()
        self.journal: Journal | None = None
        self.emulator: Emulator | None = None
        self.servers: list[subprocess.Popen[bytes]] = []
        self._server_info: dict[int, tuple[str, Path]] = {}  # pid -> (what, log)
        self.settings: dict[str, str] = {}  # every host setting in force, for the record
        self._records: StatsRecords | None = None
        self.recovered: list[str] = []  # what dead runs had left, undone before this run
        self.state: dict[str, Any] = {}  # an experiment's own bookkeeping across repetitions on this testbed
        # UDP datagrams the client's namespace dropped for a full socket buffer during the
        # last run_clients (all flows; None: not measured)
        self.client_udp_drops: int | None = None
        # long-lived clients by flow and qlog switch (run_clients(persistent=True))
        self.sessions: dict[tuple[str, bool], ClientSession] = {}
        self._exit = contextlib.ExitStack()

    # -- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> "Testbed":
        require_root()
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._exit.enter_context(HostLock(self.on_wait))
            self.recovered = recover()  # what dead runs left goes before this run starts
            self.journal = Journal(self.ns.tag)
            self._exit.callback(self.journal.undo)
            self.journal.add_namespaces(self.ns.server, self.ns.client)
            self._exit.enter_context(self.ns)
            self.journal.add_ns_inodes(self.ns.inodes)
            self._apply_host_settings()
            self._start_emulator()
            self._clamp_mss()
            self.journal.add_private(self.workdir / "certs")
            self._exit.callback(shutil.rmtree, self.workdir / "certs", True)  # a private key; nothing to keep
            self.certs = make_certs(self.workdir / "certs", SERVER_ADDR)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finish(self) -> Sequence[Stats]:
        """Stops the servers and dcemu (its summary written) and returns dcemu's records;
        the namespaces and host settings stay until the context ends."""
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()
        for p in self.servers:
            stop_process(p)
        self.servers.clear()
        if self.emulator:
            self.emulator.stop()
            self._records = self.emulator.records()
        return self._records or []

    def close(self) -> None:
        """Stops servers and dcemu, removes the namespaces, restores the host settings.
        Safe to call twice."""
        self.finish()
        if self.inspect:
            write_guide(self.workdir, [f.port for f in self.plan.flows if f.port is not None])
        self._exit.close()  # namespaces, journal undo (sysctls), host lock, in reverse

    # -- setup -------------------------------------------------------------------------

    def _apply_host_settings(self) -> None:
        assert self.journal
        for name, value in self.host.global_sysctls.items():
            self.journal.set_sysctl(name, value)
        tcp_ccs = self.plan.tcp_ccs()
        if tcp_ccs:
            allowed = read_sysctl("net.ipv4.tcp_allowed_congestion_control").split()
            missing = [c for c in tcp_ccs if c not in allowed]
            if missing:
                available = read_sysctl("net.ipv4.tcp_available_congestion_control").split()
                absent = [c for c in missing if c not in available]
                if absent:
                    raise TestbedError(f"kernel has no TCP congestion control {', '.join(absent)} (available: {' '.join(available)})")
                self.journal.set_sysctl("net.ipv4.tcp_allowed_congestion_control", " ".join(allowed + missing))
        for ns in (self.ns.server, self.ns.client):
            for name, value in [*self.host.netns_sysctls.items(), *self.plan.netns_sysctls]:
                write_sysctl(name, value, ns)
        for name in ("net.core.rmem_default", "net.core.rmem_max", "net.ipv4.tcp_allowed_congestion_control"):
            self.settings[name] = read_sysctl(name)
        for name in [*self.host.netns_sysctls, *(n for n, _ in self.plan.netns_sysctls)]:
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
        text = to_dcemu(self.scenario, self.plan, topology)
        self.emulator = Emulator(text, self.workdir, (*self.inspect.emulator_args(self.workdir), *self.emulator_args),
                                 on_spawn=self.journal.add_pid)
        self.emulator.__enter__()
        assert self.emulator.proc
        if self.emulator.proc.poll() is not None:
            raise TestbedError(f"dcemu exited at start: {self.emulator.log.read_text().strip()}")

    def _clamp_mss(self) -> None:
        """The plan's TCP MSS on both sides' SYNs (1280 by default, as the study clamped it so
        headers + PDCP fit)."""
        for ns in (self.ns.server, self.ns.client):
            sh("ip", "netns", "exec", ns, "iptables", "-t", "mangle", "-A", "POSTROUTING", "-p", "tcp",
               "--tcp-flags", "SYN,RST", "SYN", "-j", "TCPMSS", "--set-mss", str(self.plan.tcp_mss))

    # -- endpoints ---------------------------------------------------------------------

    def _dir(self, kind: str, flow: Flow) -> Path:
        """Per-flow directories; a plan of one flow keeps the study's names (server/, client/)."""
        name = kind if len(self.plan.flows) == 1 else f"{kind}-{flow.name}"
        d = self.workdir / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def start_servers(self, qlog: bool = False) -> None:
        for f in self.plan.flows:
            self.start_server(f, qlog)

    def start_server(self, flow: Flow, qlog: bool = False) -> None:
        """Starts the flow's server in the server namespace and waits until it listens."""
        assert self.journal and flow.port is not None and flow.cc is not None
        stack = get_stack(flow.stack)
        for k, v in stack.server_sysctls(flow.cc).items():
            write_sysctl(k, v, self.ns.server)
            self.settings[f"{k} (server namespace)"] = read_sysctl(k, self.ns.server)
        for cmd in stack.server_setup():
            p = subprocess.run(self.ns.exec(self.ns.server, *cmd), capture_output=True, text=True, timeout=10)
            if p.returncode != 0:
                raise TestbedError(f"{stack.name} server of flow {flow.name}: {' '.join(cmd)} failed: {p.stderr.strip()}")
        workdir = self._dir("server", flow)
        spec = ServerSpec(port=flow.port, cc=flow.cc, workdir=workdir, certs=self.certs, address=SERVER_ADDR,
                          qlog=qlog or self.inspect.qlog, quic_datagram=self.plan.quic_datagram,
                          keylog=self.inspect.keylog)  # fmt: skip
        log = open(workdir / "server.log", "wb")
        proc = subprocess.Popen(self.ns.exec(self.ns.server, *stack.server_command(spec)), stdout=log,
                                stderr=subprocess.STDOUT)
        log.close()  # the child holds its own descriptor
        self.journal.add_pid(proc.pid)
        self.servers.append(proc)
        self._server_info[proc.pid] = (f"{stack.name} server of flow {flow.name}", workdir / "server.log")
        try:
            wait_listening(self.ns.server, flow.port, stack.listens_on or stack.transport, proc, 15)
            deadline = time.monotonic() + 15
            while not stack.server_ready(spec):
                if time.monotonic() > deadline:
                    raise RuntimeError("not ready after 15 s")
                time.sleep(0.05)
        except RuntimeError as e:
            raise TestbedError(f"{stack.name} server of flow {flow.name}: {e}: {tail(workdir / 'server.log')}") from None

    def run_client(self, flow: Flow, timeout_s: float, qlog: bool = False, workload: Workload | None = None,
                   persistent: bool = False) -> TransferResult:  # fmt: skip
        """Runs the flow's workload (or ``workload`` instead, for an experiment that fetches
        several on one testbed) in the client namespace; never raises for a failed
        transfer. ``persistent``: on the flow's long-lived client where the stack has one
        (``Stack.session``, kept until ``finish``; its timeout is the first call's)."""
        assert flow.port is not None and flow.cc is not None
        qlog = qlog or self.inspect.qlog
        spec = ClientSpec(address=SERVER_ADDR, port=flow.port, workload=workload or flow.workload, cc=flow.cc,
                          workdir=self._dir("client", flow), certs=self.certs, timeout_s=timeout_s,
                          qlog=qlog, quic_datagram=self.plan.quic_datagram, keylog=self.inspect.keylog,
                          paths=self.plan.client_paths(flow, self.scenario.legs))  # fmt: skip
        stack = get_stack(flow.stack)
        if persistent:
            session = self.sessions.get((flow.name, qlog))
            if session is None:
                session = stack.session(spec, self.ns.exec(self.ns.client))
                if session is not None:
                    self.sessions[(flow.name, qlog)] = session
            if session is not None:
                return session.run(spec.workload)
        return stack.run(spec, self.ns.exec(self.ns.client))

    def run_clients(self, timeout_s: float, qlog: bool = False, flows: list[str] | None = None,
                    workloads: dict[str, Workload] | None = None, persistent: bool = False) -> dict[str, TransferResult]:
        """Every flow's client (or those named), started together; their results by flow.
        ``workloads`` replaces named flows' workloads for this call (checked by the stack
        like the plan's). ``persistent``: each flow on its long-lived client, where its
        stack has one (``run_client``)."""
        chosen = [f for f in self.plan.flows if flows is None or f.name in flows]
        workloads = workloads or {}
        results: dict[str, TransferResult] = {}

        def one(f: Flow) -> None:
            try:
                results[f.name] = self.run_client(f, timeout_s, qlog, workloads.get(f.name), persistent)
            except Exception as e:  # noqa: BLE001 - a client that cannot start is a failed flow
                results[f.name] = TransferResult.failed(f"{type(e).__name__}: {e}")

        threads = [threading.Thread(target=one, args=(f,), name=f"client-{f.name}") for f in chosen]
        drops_before = self._udp_drops()
        sampler = DropSampler(lambda *cmd: self.ns.exec(self.ns.client, *cmd), self.ns.inodes.get(self.ns.client),
                              timeout_s + 60, self._stats_ms, self._journal_pid)
        sampler.start()
        sockets = SocketSampler(lambda side, *cmd: self.ns.exec(self.ns.server if side == "server" else self.ns.client,
                                                                *cmd),
                                self.workdir, timeout_s + 60, self._stats_ms) if self.inspect.sockets else None
        if sockets:
            sockets.start()
        for t in threads:
            t.start()
        try:
            died = self._watch(threads, any_failed=lambda: any(not r.ok for r in results.values()))
        finally:
            append_samples(self.workdir, sampler.stop())
            if sockets:
                sockets.stop()
        drops_after = self._udp_drops()
        self.client_udp_drops = (drops_after - drops_before if drops_before is not None and drops_after is not None
                                 else None)
        if died:
            raise PartDied(died)
        return {f.name: results[f.name] for f in chosen}

    def ping(self, interval_s: float) -> Probe:
        """A latency probe from the client to the server, one echo every ``interval_s``
        until ``Probe.stop`` (``ping.py``)."""
        probe = Probe(self.ns.exec(self.ns.client, *ping_args(SERVER_ADDR, interval_s)), time.time(), interval_s)
        self._journal_pid(probe.proc.pid)
        return probe

    def stop_clients(self) -> None:
        """Ends every client now (everything in the client namespace is killed): for a
        workload measured until the experiment says, not until a timeout."""
        kill_in(self.ns.client)

    def _stats_ms(self, wall: float) -> float | None:
        return (wall - self.start_wall) * 1e3 if self.start_wall is not None else None

    def _journal_pid(self, pid: int) -> None:
        if self.journal is not None:
            self.journal.add_pid(pid)

    def _udp_drops(self) -> int | None:
        """The client namespace's UDP datagrams dropped for a full receive buffer so far."""
        p = subprocess.run(self.ns.exec(self.ns.client, "cat", "/proc/net/snmp"), capture_output=True, text=True)
        return udp_rcvbuf_errors(p.stdout) if p.returncode == 0 else None

    def _watch(self, threads: list[threading.Thread], any_failed: Callable[[], bool]) -> str | None:
        """Waits for the client threads, checking dcemu and every server every WATCH_S. If
        one exits, the clients are stopped at once (everything in the client namespace is
        killed) and its description is returned. When a client failed, the parts get
        DEATH_GRACE_S to show they died: a dying dcemu's devices are gone (and a client
        fails) a moment before the process can be reaped."""
        died: str | None = None
        while any(t.is_alive() for t in threads):
            if died is None:
                died = self.dead_part()
                if died:
                    kill_in(self.ns.client)
                    if self.ns.client in self.ns.inodes:
                        kill_inode(self.ns.inodes[self.ns.client])
            for t in threads:
                t.join(WATCH_S / len(threads))
        if died is None and any_failed():
            deadline = time.monotonic() + DEATH_GRACE_S
            while died is None and time.monotonic() < deadline:
                died = self.dead_part()
                time.sleep(0.02)
        return died or self.dead_part()

    def dead_part(self) -> str | None:
        """'dcemu exited with status 1: <log tail>' for the first part that is gone, else None."""
        for ns in self.ns.missing():
            return f"network namespace {ns} was deleted under the run"
        parts: list[tuple[str, subprocess.Popen[bytes] | None, Path]] = []
        if self.emulator:
            parts.append(("dcemu", self.emulator.proc, self.emulator.log))
        for p in self.servers:
            what, log = self._server_info.get(p.pid, ("a server", self.workdir / "server.log"))
            parts.append((what, p, log))
        for what, proc, log in parts:
            if proc is not None and proc.poll() is not None:
                code = proc.returncode
                how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
                return f"{what} {how} while the clients ran: {tail(log) or '(empty log)'}"
        return None

    @property
    def tag(self) -> str:
        """The run's namespace tag (unique on the host while the run holds its lock)."""
        return self.ns.tag

    @property
    def start_wall(self) -> float | None:
        """Unix time of dcemu's stats t_ms = 0."""
        return self.emulator.start_wall if self.emulator else None


def tail(path: Path, n: int = 400) -> str:
    try:
        return path.read_text(errors="replace")[-n:].strip()
    except OSError:
        return ""
