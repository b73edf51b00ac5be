"""Network namespaces that a run creates and always removes.

Every name starts with ``dclab-`` and carries a per-run tag, so two runs never collide and
``dclab clean`` can find what a killed run left behind.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from dataclasses import dataclass, field

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

    def __post_init__(self) -> None:
        self.server = f"{PREFIX}{self.tag}-srv"
        self.client = f"{PREFIX}{self.tag}-cli"

    def __enter__(self) -> "Namespaces":
        try:
            for ns in (self.server, self.client):
                sh("ip", "netns", "add", ns)
                sh("ip", "-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for ns in (self.server, self.client):
            kill_in(ns)
            sh("ip", "netns", "del", ns, check=False)

    def exec(self, ns: str, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", ns, *cmd]


def kill_in(ns: str) -> None:
    """Kills every process living in namespace ``ns``."""
    p = sh("ip", "netns", "pids", ns, check=False)
    for pid in p.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def leftovers() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def clean(keep: set[str] = frozenset()) -> list[str]:
    """Removes every dclab namespace but those in ``keep`` (the processes and devices in
    them go too)."""
    gone = []
    for ns in leftovers():
        if ns in keep:
            continue
        kill_in(ns)
        sh("ip", "netns", "del", ns, check=False)
        gone.append(ns)
    return gone
