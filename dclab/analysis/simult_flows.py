"""The Linux kernel's MPTCP selftest ``simult_flows.sh`` as a yardstick: its five cases
(two paths with given rates and one-way delays) and its pass rule (a 16 MiB transfer must
finish within the time the two paths' summed rate allows, plus 10 % for headers and a
fixed allowance), applied to any aggregation dclab runs over the same legs
(experiments/simult_flows.py, docs/split-layer.md).

The selftest (tools/testing/selftests/net/mptcp/simult_flows.sh in the kernel tree) puts a
netem qdisc with ``rate R mbit delay D ms`` on both ends of each path, so a path's round
trip is twice its delay and both directions are rate-limited; it sends 2 x 2048 x 4096
bytes and fails the case when ``mptcp_connect -T`` exceeds

    floor(1000 * size * 8 * 10 / ((r1 + r2) * 1e6 * 9)) + 400 + 50  ms

(400 ms for its program's two 200 ms waits for the join, 50 ms of slack). It runs each
case in both directions; a download here is its ``large`` direction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SIZE = 2 * 2048 * 4096  # bytes, the selftest's large file (16 MiB)
JOIN_WAITS_MS = 400  # mptcp_connect's waits for the MP_JOIN handshakes, 200 ms on each side
SLACK_MS = 50  # the selftest's slack on a non-debug kernel
HEADERS = 10 / 9  # the selftest's allowance for header overhead

CaseName = Literal["balanced", "balanced-delay", "unbalanced", "unbalanced-delay", "opposed-delay"]


@dataclass(frozen=True)
class Case:
    """One of the selftest's cases: each path's rate (Mbit/s) and one-way delay (ms)."""

    name: CaseName
    title: str  # as the selftest prints it
    rates: tuple[int, int]
    delays: tuple[int, int]

    @property
    def rtts_ms(self) -> tuple[int, int]:
        """Each path's round trip: the delay is on both directions of the path."""
        return (2 * self.delays[0], 2 * self.delays[1])


CASES: dict[str, Case] = {c.name: c for c in (
    Case("balanced", "balanced bwidth", (10, 10), (0, 0)),
    Case("balanced-delay", "balanced bwidth with unbalanced delay", (10, 10), (1, 25)),
    Case("unbalanced", "unbalanced bwidth", (15, 5), (0, 0)),
    Case("unbalanced-delay", "unbalanced bwidth with unbalanced delay", (15, 5), (1, 25)),
    Case("opposed-delay", "unbalanced bwidth with opposed, unbalanced delay", (15, 5), (25, 1)),
)}  # fmt: skip


def max_time_ms(size: int, rates: tuple[int, int]) -> int:
    """The selftest's limit for ``size`` bytes over paths of ``rates`` Mbit/s, in ms, with
    its integer arithmetic (shell ``$(( ))``)."""
    return 1000 * size * 8 * 10 // (sum(rates) * 1000 * 1000 * 9) + JOIN_WAITS_MS + SLACK_MS


@dataclass(frozen=True)
class Verdict:
    """One transfer against the rule."""

    case: str
    completion_s: float | None
    max_time_s: float

    @property
    def passed(self) -> bool:
        return self.completion_s is not None and self.completion_s <= self.max_time_s

    @property
    def ratio(self) -> float | None:
        """Completion time over the limit (below 1 passes)."""
        return self.completion_s / self.max_time_s if self.completion_s is not None else None


def judge(case: Case, completion_s: float | None, size: int = SIZE) -> Verdict:
    return Verdict(case.name, completion_s, max_time_ms(size, case.rates) / 1000)
