"""A latency probe: iputils ``ping`` from the client namespace to the server, its echoes
read back typed. An ICMP echo claims no flow, so dcemu carries it on the plan's first
bearer (``FlowPlan.default_bearer``): the probe waits in the same queues, and under a
split in the same PDCP reordering, as that bearer's downloads.

``ping -D`` prints each reply's arrival (Unix time) and round trip; a request with no
reply prints nothing, so the requests are numbered from its ``icmp_seq`` and the count it
sent. The probe is stopped with SIGINT, on which ping prints its statistics and exits."""

from __future__ import annotations

import re
import signal
import subprocess

from ..analysis.responsiveness import Echo

REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from [^:]+: icmp_seq=(\d+) .*time=([\d.]+) ms")
SENT = re.compile(r"^(\d+) packets transmitted")
MIN_INTERVAL_S = 0.01  # ping's own floor for root is 2 ms; 10 ms keeps the probe's load negligible
MAX_INTERVAL_S = 10.0


def ping_args(address: str, interval_s: float) -> list[str]:
    """ping until stopped, one request every ``interval_s``, numeric, stamped replies."""
    if not MIN_INTERVAL_S <= interval_s <= MAX_INTERVAL_S:
        raise ValueError(f"interval: must be {MIN_INTERVAL_S} to {MAX_INTERVAL_S} s (got {interval_s})")
    return ["ping", "-n", "-D", "-i", f"{interval_s:g}", address]


def parse(text: str, start_wall: float, interval_s: float) -> list[Echo]:
    """Every request ping sent, in order, from its output (``start_wall``: when it started)."""
    replies: dict[int, tuple[float, float]] = {}
    sent = 0
    for line in text.splitlines():
        if m := REPLY.match(line):
            seq, rtt = int(m.group(2)), float(m.group(3))
            replies.setdefault(seq, (float(m.group(1)) - rtt / 1e3, rtt))  # a duplicate reply is not a second echo
        elif m := SENT.match(line):
            sent = int(m.group(1))
    sent = max([sent, *replies])
    out = []
    for seq in range(1, sent + 1):
        if seq in replies:
            out.append(Echo(seq, *replies[seq]))
        else:
            out.append(Echo(seq, start_wall + (seq - 1) * interval_s, None))
    return out


class Probe:
    """A running ping (``start``), stopped by ``stop`` which returns its echoes."""

    def __init__(self, command: list[str], start_wall: float, interval_s: float):
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.start_wall, self.interval_s = start_wall, interval_s

    def stop(self, wait_s: float = 5.0) -> list[Echo]:
        """SIGINT, then its echoes; an error naming ping's own words if it failed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=wait_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
        echoes = parse(out, self.start_wall, self.interval_s)
        if not echoes and self.proc.returncode not in (0, 1, -signal.SIGINT):
            raise RuntimeError(f"ping exited with status {self.proc.returncode}: {err.strip()[-300:]}")
        return echoes
