"""Starting and stopping dcemu on a scenario, and reading its stats."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ..paths import DCEMU
from .records import Stats, StatsRecords


def die_with_parent(cmd: list[str]) -> list[str]:
    """``cmd`` with a parent-death signal (SIGTERM when the dclab process that starts it
    dies, even by SIGKILL), so nothing of a run outlives it unguarded. setpriv (util-linux,
    always on Debian) sets it and execs; `ip netns exec` execs without forking, so the
    signal reaches the program itself."""
    return ["setpriv", "--pdeathsig", "TERM", "--", *cmd]


def topology_toml(server_ns: str, client_ns: str, tag: str) -> str:
    """The [topology] section for a run's namespaces, for scenario files written by hand
    (bench/run.py); TUN names carry the run tag."""
    return (
        "[topology]\n"
        f'server_netns = "{server_ns}"\n'
        f'client_netns = "{client_ns}"\n'
        f'server_tun = "dcemu-{tag}s"\n'
        f'client_tun = "dcemu-{tag}c"\n'
    )


def check_scenario(text: str) -> str | None:
    """What `dcemu check` says is wrong with a scenario file (None: nothing). The same code
    that runs it reads it, traces included, so a bad trace is refused before a run starts."""
    if not DCEMU.exists():
        return f"{DCEMU} is missing: run `make build` first"
    with tempfile.TemporaryDirectory(prefix="dclab-check-") as d:
        f = Path(d) / "scenario.toml"
        f.write_text(text)
        try:
            p = subprocess.run([str(DCEMU), "check", str(f)], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return "dcemu check took more than 60 s"
    if p.returncode == 0:
        return None
    return (p.stderr.strip() or p.stdout.strip() or f"exit {p.returncode}").removeprefix("dcemu: ").replace(str(f), "scenario")


class Emulator:
    """dcemu as a context manager: started and ready on enter, stopped with SIGTERM (its
    summary written, its devices removed) on exit."""

    def __init__(self, scenario_text: str, workdir: Path, extra_args: tuple[str, ...] = (),
                 on_spawn: Callable[[int], None] | None = None):
        self.workdir = workdir
        self.scenario = workdir / "scenario.toml"
        self.stats = workdir / "dcemu-stats.jsonl"
        self.log = workdir / "dcemu.log"
        self.scenario_text = scenario_text
        self.extra_args = extra_args
        self.on_spawn = on_spawn  # told the PID at once, before waiting (a journal records it)
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_wall: float | None = None  # Unix time of the stats' t_ms = 0

    def __enter__(self) -> "Emulator":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.scenario.write_text(self.scenario_text)
        ready = self.workdir / "dcemu.ready"
        ready.unlink(missing_ok=True)
        log = open(self.log, "wb")
        self.proc = subprocess.Popen(
            die_with_parent([str(DCEMU), "run", str(self.scenario), "--stats", str(self.stats), "--ready-file", str(ready),
                             *self.extra_args]),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        if self.on_spawn:
            self.on_spawn(self.proc.pid)
        deadline = time.monotonic() + 10
        while not ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"dcemu failed to start: {self.log.read_text().strip()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("dcemu not ready after 10 s")
            time.sleep(0.01)
        for _ in range(100):  # the file may be seen before its content is written
            parts = ready.read_text().split()
            if len(parts) == 2:
                self.start_wall = int(parts[1]) / 1e9
                break
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def records(self) -> StatsRecords:
        return StatsRecords.of_file(self.stats)

    def summary(self) -> Stats | None:
        return self.records().summary()


class NotReady(RuntimeError):
    """This machine cannot run a testbed at all (not root, dcemu not built): no run can,
    so runners stop rather than try the next one."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise NotReady("dclab must run as root (sudo): it creates network namespaces and TUN devices")
    if not DCEMU.exists():
        raise NotReady(f"{DCEMU} is missing: run `make build` first")
