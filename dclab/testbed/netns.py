"""Network namespaces that a run creates and always removes.

Every name starts with ``dclab-`` and carries a per-run tag, so two runs never collide and
``dclab clean`` can find what a killed run left behind.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..dcemu.process import die_with_parent
from ..files import FileRefused, read_owned_json, secure_dir
from ..paths import CLIENT_ADDR, SERVER_ADDR, state_dir
from .procs import alive, process_start

PREFIX = "dclab-"


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs a command, raising with its stderr when it fails and ``check`` is set."""
    p = subprocess.run(args, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed: {p.stderr.strip()}")
    return p


@dataclass
class Namespaces:
    """A server and a client namespace with loopback up; removed on exit."""

    tag: str = field(default_factory=lambda: secrets.token_hex(3))
    server: str = ""
    client: str = ""
    inodes: dict[str, int] = field(default_factory=dict)  # name -> nsfs inode, to find them if deleted by hand

    def __post_init__(self) -> None:
        self.server = f"{PREFIX}{self.tag}-srv"
        self.client = f"{PREFIX}{self.tag}-cli"

    def __enter__(self) -> "Namespaces":
        secure_dir(_owner_file(self.tag).parent, "state directory")
        _owner_file(self.tag).write_text(json.dumps({"pid": os.getpid(), "start": process_start(os.getpid()),
                                                     "namespaces": [self.server, self.client]}))
        try:
            for ns in (self.server, self.client):
                sh("ip", "netns", "add", ns)
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                inode = ns_inode(ns)
                if inode is not None:
                    self.inodes[ns] = inode
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for ns in (self.server, self.client):
            kill_in(ns)
            if ns in self.inodes:
                kill_inode(self.inodes[ns])  # also when its name was deleted under the run
            sh("ip", "netns", "del", ns, check=False)
        _owner_file(self.tag).unlink(missing_ok=True)

    def missing(self) -> list[str]:
        """Namespaces of this run whose name is gone (deleted under the run)."""
        return [ns for ns in (self.server, self.client) if not (NETNS_DIR / ns).exists()]

    def exec(self, ns: str, *cmd: str) -> list[str]:
        """``cmd`` in namespace ``ns``, dying with the process that starts it."""
        return die_with_parent(["ip", "netns", "exec", ns, *cmd])


NETNS_DIR = Path("/run/netns")


def ns_inode(name: str) -> int | None:
    try:
        return os.stat(NETNS_DIR / name).st_ino
    except OSError:
        return None


def kill_inode(inode: int) -> list[int]:
    """Kills every process whose network namespace is the one with this nsfs inode (found
    through /proc, so also after the namespace's name was deleted); returns their pids."""
    killed = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.readlink(d / "ns" / "net") == f"net:[{inode}]":
                os.kill(int(d.name), signal.SIGKILL)
                killed.append(int(d.name))
        except (OSError, ValueError):
            continue
    return killed


def kill_in(ns: str) -> None:
    """Kills every process living in namespace ``ns``."""
    p = sh("ip", "netns", "pids", ns, check=False)
    for pid in p.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _owner_file(tag: str) -> Path:
    return state_dir() / f"netns-{tag}.json"


def owned_by_live_processes() -> set[str]:
    """dclab namespaces whose creator still runs (a run, a test fixture, `make bench`):
    never to be cleaned, whatever journals say. Owner files of dead creators are removed."""
    live: set[str] = set()
    for f in state_dir().glob("netns-*.json"):
        try:
            d = read_owned_json(f)
            if alive(int(d["pid"]), d.get("start")):
                live.update(d.get("namespaces", []))
                continue
        except FileRefused:
            continue  # not ours alone: neither trusted nor removed
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        f.unlink(missing_ok=True)
    return live


def leftovers() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def clean(keep: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """Removes every dclab namespace but those in ``keep`` (the processes and devices in
    them go too)."""
    gone = []
    keep = set(keep) | owned_by_live_processes()
    for ns in leftovers():
        if ns in keep:
            continue
        kill_in(ns)
        sh("ip", "netns", "del", ns, check=False)
        gone.append(ns)
    return gone


def listening(ns: str, port: int, transport: str) -> bool:
    """Whether something in namespace ``ns`` listens on ``port`` ("udp" or "tcp")."""
    flag = "-lun" if transport == "udp" else "-ltn"
    return bool(sh("ip", "netns", "exec", ns, "ss", "-H", flag, f"sport = :{port}", check=False).stdout.strip())


def wait_listening(ns: str, port: int, transport: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Waits until ``proc`` listens; raises RuntimeError if it exits or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while not listening(ns, port, transport):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening on {transport}/{port}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on {transport}/{port} in {ns} after {timeout_s:g} s")
        time.sleep(0.05)


def stop_process(p: subprocess.Popen[bytes], grace_s: float = 3.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@contextmanager
def veth_link(ns: Namespaces, server_addr: str = SERVER_ADDR, client_addr: str = CLIENT_ADDR) -> Iterator[None]:
    """The kernel path: a veth pair joining the two namespaces (MTU 1500), removed on exit."""
    a, b = f"dclab-{ns.tag}a", f"dclab-{ns.tag}b"
    sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
    try:
        sh("ip", "link", "set", a, "netns", ns.server)
        sh("ip", "link", "set", b, "netns", ns.client)
        for n, dev, addr, peer in ((ns.server, a, server_addr, client_addr), (ns.client, b, client_addr, server_addr)):
            sh("ip", "-n", n, "addr", "add", f"{addr}/32", "peer", f"{peer}/32", "dev", dev)
            sh("ip", "-n", n, "link", "set", dev, "up")
        yield
    finally:
        sh("ip", "-n", ns.server, "link", "del", a, check=False)
        sh("ip", "link", "del", a, check=False)


def udp_rcvbuf_errors(snmp: str) -> int | None:
    """Udp RcvbufErrors from the text of /proc/net/snmp: datagrams dropped because a
    socket's receive buffer was full (None when the kernel does not report it)."""
    rows = [line.split() for line in snmp.splitlines() if line.startswith("Udp:")]
    if len(rows) < 2 or "RcvbufErrors" not in rows[0]:
        return None
    return int(rows[1][rows[0].index("RcvbufErrors")])
