"""Host settings: the study's three host configurations, global sysctls changed under a
journal (so a killed run's changes can be undone by `dclab clean`), and one host lock,
because net.core.rmem_* are global: two runs with different settings must not overlap.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..files import FileRefused, JsonObject, read_owned_json, secure_dir
from ..paths import state_dir
from .procs import alive, process_start

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


def host_config_for(transports: str | set[str], udp_buffer: str, ecn: bool = False) -> HostConfig:
    """The QUIC configuration (``udp_buffer`` default or large) when any flow is QUIC, plus
    TCP's namespace buffers when a flow is TCP too; TCP's when all flows are TCP. With
    ``ecn`` and a TCP flow, both namespaces' TCP asks for ECN (``tcp_ecn`` 1, RFC 3168; the
    kernel's default, 2, only accepts it) and the name says "+ecn"."""
    kinds = {transports} if isinstance(transports, str) else set(transports)
    config = _host_config(kinds, udp_buffer)
    if ecn and "tcp" in kinds:
        return HostConfig(f"{config.name}+ecn", config.global_sysctls, {**config.netns_sysctls, TCP_ECN: "1"})
    return config


TCP_ECN = "net.ipv4.tcp_ecn"


def _host_config(kinds: set[str], udp_buffer: str) -> HostConfig:
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


class Originals:
    """The host's own values of the global sysctls runs change, recorded once, before the
    first run changes them, apart from any run's journal: a run that crashed can never
    make its own values the originals of later runs. An entry is dropped once its value is
    back on the host (a later change by hand is then the host's own)."""

    def __init__(self) -> None:
        self.path = state_dir() / "host-originals.json"

    def load(self) -> dict[str, str]:
        if not self.path.exists():
            return {}
        try:
            data = read_owned_json(self.path)
            return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
        except FileRefused:
            return {}

    def _save(self, data: dict[str, str]) -> None:
        secure_dir(state_dir(), "state directory")
        if not data:
            self.path.unlink(missing_ok=True)
            return
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.path)

    def remember(self, name: str) -> str:
        """The original of ``name``: recorded now from the host if there is none yet."""
        data = self.load()
        if name not in data:
            data[name] = read_sysctl(name)
            self._save(data)
        return data[name]

    def restore(self, names: list[str]) -> list[str]:
        """Puts back the originals of ``names`` and forgets them; returns what it did."""
        data = self.load()
        done = []
        for name in names:
            if name not in data:
                continue
            try:
                if read_sysctl(name) != data[name]:
                    write_sysctl(name, data[name])
                    done.append(f"restored {name} = {data[name]}")
                del data[name]
            except RuntimeError as e:
                done.append(f"could not restore {name}: {e}")
        self._save(data)
        return done


class Journal:
    """What a run changed on the host, on disk before it is changed: which global sysctls
    (their originals are in ``Originals``), process ids, namespaces, and the run's own
    process (pid and start time, to tell a dead run from a live one). `undo()` (or the
    next run, or `dclab clean`, after a crash) puts the host back."""

    def __init__(self, tag: str):
        secure_dir(state_dir(), "state directory")
        self.path = state_dir() / f"run-{tag}.json"
        pid = os.getpid()
        self.data: JsonObject = {"tag": tag, "pid": pid, "start": process_start(pid), "sysctls": {}, "pids": [],
                                     "namespaces": [], "private": []}
        self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        tmp.replace(self.path)

    def set_sysctl(self, name: str, value: str) -> None:
        """Sets a global sysctl; its original is recorded first (once for all runs)."""
        if name not in self.data["sysctls"]:
            self.data["sysctls"][name] = Originals().remember(name)
            self._save()
        write_sysctl(name, value)

    def add_pid(self, pid: int) -> None:
        self.data["pids"].append([pid, process_start(pid)])
        self._save()

    def add_namespaces(self, *names: str) -> None:
        self.data["namespaces"].extend(names)
        self._save()

    def add_ns_inodes(self, inodes: dict[str, int]) -> None:
        self.data["ns_inodes"] = dict(inodes)
        self._save()

    def add_private(self, path: Path) -> None:
        """A directory of secrets (the run's TLS key) that must not outlive the run."""
        self.data["private"].append(str(path))
        self._save()

    def undo(self) -> list[str]:
        return undo_journal(self.path)


STOP_WAIT_S = 5.0


def _stop(pids: list[tuple[int, str | None]]) -> list[str]:
    """SIGTERM to the recorded processes still alive, SIGKILL after STOP_WAIT_S; waits until
    they are gone, so nothing of a dead run lives beside the next one."""
    live = [(p, s) for p, s in pids if alive(p, s)]
    for pid, _ in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while any(alive(p, s) for p, s in live) and time.monotonic() < deadline:
        time.sleep(0.02)
    for pid, s in live:
        if alive(pid, s):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    while any(alive(p, s) for p, s in live) and time.monotonic() < deadline + STOP_WAIT_S:
        time.sleep(0.02)
    return [f"stopped process {p}" for p, _ in live]


def undo_journal(path: Path) -> list[str]:
    """Stops the recorded processes (and waits for them), deletes the recorded namespaces
    (and what lives in them), restores the sysctls' originals; removes the journal.
    Returns what it did."""
    from .netns import kill_in, kill_inode, sh

    done: list[str] = []
    try:
        data = read_owned_json(path)
        if not isinstance(data, dict):
            raise FileRefused(f"{path} is not a journal")
    except FileRefused as e:
        if "not written by this user alone" in str(e) or not path.is_file() or path.is_symlink():
            return [f"ignored journal {e}"]  # another user's or not a file: never acted on, never removed
        path.unlink(missing_ok=True)  # our own, damaged: nothing to act on
        return done
    pids = [(int(p[0]), p[1]) if isinstance(p, list) else (int(p), None) for p in data.get("pids", [])]
    done += _stop(pids)
    for ns in data.get("namespaces", []):
        if sh("ip", "netns", "pids", ns, check=False).returncode == 0:
            kill_in(ns)
            sh("ip", "netns", "del", ns, check=False)
            done.append(f"removed namespace {ns}")
    for ns, inode in (data.get("ns_inodes") or {}).items():  # a namespace whose name was deleted by hand
        gone = kill_inode(int(inode))
        if gone:
            done.append(f"stopped {len(gone)} process(es) left in deleted namespace {ns}")
    sysctls = data.get("sysctls", {})
    originals = Originals()
    known = originals.load()
    for name, value in sysctls.items():  # journals from before Originals carry the value themselves
        if name not in known:
            try:
                if read_sysctl(name) != value:
                    write_sysctl(name, value)
                    done.append(f"restored {name} = {value}")
            except RuntimeError as e:
                done.append(f"could not restore {name}: {e}")
    done += originals.restore([n for n in sysctls if n in known])
    for d in data.get("private", []):
        if _is_cert_dir(Path(d)):
            shutil.rmtree(d, ignore_errors=True)
            done.append(f"removed private keys {d}")
    path.unlink(missing_ok=True)
    return done


def _is_cert_dir(d: Path) -> bool:
    """Whether ``d`` is what a run's journal may name as private (testbed.py): a run's
    certs/ directory holding only its certificate and key. Anything else is left alone."""
    try:
        return (d.name == "certs" and d.is_dir() and not d.is_symlink()
                and {p.name for p in d.iterdir()} <= {"cert.pem", "key.pem"})
    except OSError:
        return False


def journals() -> list[Path]:
    return sorted(state_dir().glob("run-*.json"))


def journal_is_live(path: Path) -> bool:
    """Whether the run that wrote the journal is still alive (and is not this process:
    whoever asks holds the host lock, so nothing of its own earlier runs is live)."""
    try:
        data = read_owned_json(path)
        pid = int(data.get("pid"))
    except (FileRefused, AttributeError, TypeError, ValueError):
        return False
    return pid != os.getpid() and alive(pid, data.get("start"))


def live_namespaces() -> set[str]:
    """Namespaces of runs that are still alive (never to be cleaned)."""
    live: set[str] = set()
    for p in journals():
        if not journal_is_live(p):
            continue
        try:
            live.update(read_owned_json(p).get("namespaces", []))
        except (FileRefused, AttributeError, TypeError):
            pass
    return live


def stale_journals() -> list[Path]:
    """Journals whose run is no longer alive."""
    return [p for p in journals() if not journal_is_live(p)]


def unfinished_writes() -> list[Path]:
    """State files a killed run began and never moved into place (a journal's or the
    originals' ``.tmp``, our own regular files). Both are written only under the host lock,
    so under it neither is anyone's write in progress; the file each was to replace is
    intact."""
    uid = os.getuid()
    found = []
    for p in sorted([*state_dir().glob("run-*.tmp"), state_dir() / "host-originals.tmp"]):
        with contextlib.suppress(OSError):
            st = p.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid:
                found.append(p)
    return found


def recover() -> list[str]:
    """Undoes what dead runs left (their journals, then any other dclab namespace no live
    run owns, then their unfinished state files). Call with the host lock held: it is how
    a run starts on a clean host."""
    from .netns import clean as clean_namespaces

    done: list[str] = []
    for j in stale_journals():
        done += undo_journal(j)
    for p in unfinished_writes():
        p.unlink(missing_ok=True)
        done.append(f"removed unfinished state file {p.name}")
    done += [f"removed namespace {n}" for n in clean_namespaces(keep=live_namespaces())]
    return done


class HostBusy(RuntimeError):
    pass


class HostLock:
    """Exclusive use of the host's global settings for the duration of a run (or of
    `dclab clean`). The holder's pid is written into the lock file for messages. The
    descriptor is not inherited: when dclab dies the lock goes with it, and the next
    holder undoes what the dead run left (``recover``)."""

    def __init__(self, on_wait: Callable[[], None] | None = None, wait: bool = True):
        secure_dir(state_dir(), "state directory")
        self.path = state_dir() / "host.lock"
        self.fd: int | None = None
        self.on_wait = on_wait
        self.wait = wait

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def __enter__(self) -> "HostLock":
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not self.wait:
                os.close(self.fd)
                self.fd = None
                raise HostBusy(f"a dclab run (pid {self.holder()}) holds the host") from None
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
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def recover_unless_busy() -> list[str] | None:
    """``recover`` under the host lock if it is free now (after a worker stopped, whose runs
    may have been killed); None when a live run holds it."""
    try:
        with HostLock(wait=False):
            return recover()
    except HostBusy:
        return None
