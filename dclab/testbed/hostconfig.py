"""Host settings: the study's three host configurations, global sysctls changed under a
journal (so a killed run's changes can be undone by `dclab clean`), and one host lock,
because net.core.rmem_* are global: two runs with different settings must not overlap.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..paths import state_dir

HostConfigName = Literal["quic-default", "quic-large", "tcp"]


@dataclass(frozen=True)
class HostConfig:
    """Global sysctls (root namespace) and per-namespace sysctls of one configuration."""

    name: str
    global_sysctls: dict[str, str]
    netns_sysctls: dict[str, str] = field(default_factory=dict)


HOST_CONFIGS: dict[str, HostConfig] = {
    # docs/testbed-reference.md, "Host configurations".
    "quic-default": HostConfig("quic-default", {"net.core.rmem_default": "212992", "net.core.rmem_max": "33554432"}),
    "quic-large": HostConfig("quic-large", {"net.core.rmem_default": "33554432", "net.core.rmem_max": "33554432"}),
    "tcp": HostConfig("tcp", {"net.core.rmem_max": "33554432"}, {"net.ipv4.tcp_rmem": "4096 131072 6291456"}),
}


def host_config_for(transports: str | set[str], udp_buffer: str) -> HostConfig:
    """The QUIC configuration (``udp_buffer`` default or large) when any flow is QUIC, plus
    TCP's namespace buffers when a flow is TCP too; TCP's when all flows are TCP."""
    kinds = {transports} if isinstance(transports, str) else set(transports)
    if kinds == {"tcp"}:
        return HOST_CONFIGS["tcp"]
    quic = HOST_CONFIGS["quic-large" if udp_buffer == "large" else "quic-default"]
    if "tcp" not in kinds:
        return quic
    tcp = HOST_CONFIGS["tcp"]
    return HostConfig(f"{quic.name}+tcp", {**tcp.global_sysctls, **quic.global_sysctls}, dict(tcp.netns_sysctls))


def read_sysctl(name: str, netns: str | None = None) -> str:
    cmd = ["sysctl", "-n", name]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"cannot read sysctl {name}: {p.stderr.strip()}")
    return " ".join(p.stdout.split())


def write_sysctl(name: str, value: str, netns: str | None = None) -> None:
    cmd = ["sysctl", "-q", "-w", f"{name}={value}"]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"cannot set sysctl {name}={value}{' in ' + netns if netns else ''}: {p.stderr.strip()}")


class Journal:
    """What a run changed on the host, on disk before it is changed: original sysctl
    values, process ids, namespaces. `undo()` (or `dclab clean` after a crash) puts the
    host back."""

    def __init__(self, tag: str):
        state_dir().mkdir(parents=True, exist_ok=True)
        self.path = state_dir() / f"run-{tag}.json"
        self.data: dict[str, Any] = {"tag": tag, "pid": os.getpid(), "sysctls": {}, "pids": [], "namespaces": []}
        self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        tmp.replace(self.path)

    def set_sysctl(self, name: str, value: str) -> None:
        """Sets a global sysctl, remembering the first original value."""
        if name not in self.data["sysctls"]:
            self.data["sysctls"][name] = read_sysctl(name)
            self._save()
        write_sysctl(name, value)

    def add_pid(self, pid: int) -> None:
        self.data["pids"].append(pid)
        self._save()

    def add_namespaces(self, *names: str) -> None:
        self.data["namespaces"].extend(names)
        self._save()

    def undo(self) -> list[str]:
        return undo_journal(self.path)


def undo_journal(path: Path) -> list[str]:
    """Restores sysctls, kills recorded processes, deletes recorded namespaces; removes
    the journal. Returns what it did."""
    from .netns import kill_in, sh

    done: list[str] = []
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        path.unlink(missing_ok=True)
        return done
    for pid in data.get("pids", []):
        try:
            os.kill(pid, 15)
            done.append(f"stopped process {pid}")
        except (ProcessLookupError, PermissionError):
            pass
    for ns in data.get("namespaces", []):
        if sh("ip", "netns", "pids", ns, check=False).returncode == 0:
            kill_in(ns)
            sh("ip", "netns", "del", ns, check=False)
            done.append(f"removed namespace {ns}")
    for name, value in data.get("sysctls", {}).items():
        try:
            if read_sysctl(name) != value:
                write_sysctl(name, value)
                done.append(f"restored {name} = {value}")
        except RuntimeError as e:
            done.append(f"could not restore {name}: {e}")
    path.unlink(missing_ok=True)
    return done


def live_namespaces() -> set[str]:
    """Namespaces of runs that are still alive (never to be cleaned)."""
    live = set()
    for p in state_dir().glob("run-*.json"):
        if p in stale_journals():
            continue
        try:
            live.update(json.loads(p.read_text()).get("namespaces", []))
        except (OSError, json.JSONDecodeError):
            pass
    return live


def stale_journals() -> list[Path]:
    """Journals whose run is no longer alive."""
    out = []
    for p in sorted(state_dir().glob("run-*.json")):
        try:
            pid = json.loads(p.read_text()).get("pid")
            os.kill(pid, 0)
        except (OSError, json.JSONDecodeError, TypeError):
            out.append(p)
    return out


class HostLock:
    """Exclusive use of the host's global settings for the duration of a run."""

    def __init__(self, on_wait: Callable[[], None] | None = None):
        state_dir().mkdir(parents=True, exist_ok=True)
        self.path = state_dir() / "host.lock"
        self.fd: int | None = None
        self.on_wait = on_wait

    def __enter__(self) -> "HostLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if self.on_wait:
                self.on_wait()
            t0 = time.monotonic()
            while True:
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() - t0 > 24 * 3600:
                        raise RuntimeError("waited a day for another dclab run to finish") from None
                    time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
