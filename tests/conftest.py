"""Shared fixtures: root checks and a pair of namespaces joined by a veth pair (the
kernel path, no dcemu), for endpoint tests that do not need the emulator."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from dclab.testbed.netns import Namespaces, veth_link
from dclab.testbed.procs import stop_group

SERVER, CLIENT = "198.18.0.1", "198.18.0.2"


def pytest_collection_modifyitems(config, items):
    slow_ok = os.environ.get("DCLAB_SLOW") == "1"
    for item in items:
        if "root" in item.keywords and os.geteuid() != 0:
            item.add_marker(pytest.mark.skip(reason="needs root"))
        if "slow" in item.keywords and not slow_ok:
            item.add_marker(pytest.mark.skip(reason="slow: set DCLAB_SLOW=1"))


# The skips CI accepts, by marker: under CI=true any other skipped test fails the run, so a
# missing stack, tool or privilege cannot pass unseen.
ALLOWED_SKIPS: dict[str, str] = {
    # The release check (CONTRIBUTING.md, "Tests": the release check): long real-time runs whose short versions
    # run in every CI run (tests/test_directions.py).
    "slow": "slow: set DCLAB_SLOW=1",
}


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and in_ci()) or hasattr(report, "wasxfail"):
        return
    reason = (report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)).removeprefix("Skipped: ")
    if any(m in item.keywords and reason == r for m, r in ALLOWED_SKIPS.items()):
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI ({reason}): a test CI cannot run fails it; make the test runnable "
                       f"here or add it to ALLOWED_SKIPS in tests/conftest.py with a comment saying why")


@pytest.fixture
def veth_pair():
    """Two namespaces (server, client) joined by veth, 198.18.0.1 <-> 198.18.0.2."""
    with Namespaces() as ns, veth_link(ns, SERVER, CLIENT):
        yield ns


@pytest.fixture
def certs(tmp_path):
    from dclab.testbed.certs import make_certs

    return make_certs(tmp_path / "certs", SERVER)


def start_in(ns: str, cmd: list[str], log) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], stdout=log, stderr=subprocess.STDOUT)


class ServerPool:
    """Servers started in a namespace for one test: refuses a port a leftover server holds,
    waits until each listens, and on close stops them all and checks nothing survived."""

    def __init__(self, ns: str, transport: str, logdir):
        from dclab.testbed import netns

        self.netns, self.ns, self.transport, self.logdir = netns, ns, transport, logdir
        self.started: list[subprocess.Popen] = []
        self.logs: list = []

    def start(self, cmd: list[str], port: int) -> subprocess.Popen:
        assert not self.netns.listening(self.ns, port, self.transport), "a leftover server holds the port"
        log = open(self.logdir / f"server-{len(self.started)}.log", "wb")
        self.logs.append(log)
        proc = start_in(self.ns, cmd, log)
        self.started.append(proc)
        self.netns.wait_listening(self.ns, port, self.transport, proc, 10.0)
        return proc

    def close(self) -> None:
        for proc in self.started:
            self.netns.stop_process(proc)
        for log in self.logs:
            log.close()
        assert all(p.poll() is not None for p in self.started)
        self.netns.kill_in(self.ns)  # belt and braces: nothing may outlive the test
        assert subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True).stdout == ""


def _default_sigint() -> None:
    # A suite started in the background inherits SIGINT ignored, and a Python child whose
    # SIGINT is ignored at start never raises KeyboardInterrupt: give children the default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def dclab_process(*args: str, **kw: Any) -> Iterator[subprocess.Popen]:
    """`python -m dclab.cli ARGS` in its own session with SIGINT at its default. Whatever
    the test does, on exit the run is stopped (SIGTERM to its group, then SIGKILL) and
    `dclab clean` undoes what it left, so a failing test leaves no run holding the lock."""
    kw.setdefault("stdout", subprocess.DEVNULL)
    kw.setdefault("stderr", subprocess.DEVNULL)
    p = subprocess.Popen([sys.executable, "-m", "dclab.cli", *args], start_new_session=True,
                         preexec_fn=_default_sigint, **kw)
    try:
        yield p
    finally:
        if p.poll() is None:
            stop_group(p, grace_s=20)
            if os.geteuid() == 0:
                subprocess.run([sys.executable, "-m", "dclab.cli", "clean"], capture_output=True, timeout=120,
                               env=kw.get("env"))


def run_dclab(*args: str, timeout: float = 1800, env: dict | None = None) -> subprocess.CompletedProcess:
    """`dclab ARGS` to completion (stdout, stderr as text); stopped and cleaned up if it
    outlives ``timeout`` or the test fails while it runs."""
    with dclab_process(*args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as p:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"dclab {' '.join(args)} did not end within {timeout} s") from None
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def wait_for(cond, timeout_s: float, what: str, proc: subprocess.Popen | None = None) -> None:
    t0 = time.monotonic()
    while not cond():
        assert proc is None or proc.poll() is None, f"the process ended before {what}"
        assert time.monotonic() - t0 < timeout_s, f"no {what} after {timeout_s} s"
        time.sleep(0.05)


@pytest.fixture
def no_hang():
    """The test fails after 60 s instead of blocking forever (e.g. a read of a FIFO that
    a regression stopped refusing)."""
    def boom(*_: object) -> None:
        raise TimeoutError("blocked for 60 s")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
