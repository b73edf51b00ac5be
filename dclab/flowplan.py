"""Flows and bearers as data: the flow plan of one run.

A plan lists the bearers dcemu emulates (a DC bearer split over chosen legs, an SC bearer
pinned to one leg, a duplicated bearer on every leg) and the flows that cross them (a
name, a stack with its congestion control, a server port, a bearer, and the workload its
client fetches). The testbed starts one server per flow and renders the bearers into
dcemu's scenario file; per-flow metrics are read by flow name from dcemu's per-bearer
counters. Experiments build plans; nothing else knows which flows an experiment has.
A ``paths`` bearer aggregates at the transport layer instead: its flows' clients get an
address per leg (``path_addresses``), and dcemu pins each address to its
leg both ways (one ``path`` bearer per leg, ``{name}-leg{k}``), so every subflow or path
of a multipath transport crosses exactly one leg. A plan also carries the run's packet sizes (the TCP MSS clamp, the QUIC max datagram
size), checked against the scenario's MTU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from ipaddress import IPv4Address
from typing import Literal

from .endpoints import STACKS, get_stack
from .endpoints.base import StackError, Workload
from .errors import InputError
from .files import clip
from .paths import CLIENT_ADDR
from .scenario import RANGES, Scenario

PORT_BASE = 4433  # the study's DC port; further flows take the next free ports
MAX_FLOWS = 64
TCP_MSS = 1280  # the study's TCP MSS clamp (docs/testbed-reference.md), so headers + PDCP fit
MIN_TCP_MSS = 536  # the MSS a TCP host must accept (RFC 9293); the study's ns-3 TCP used it
MIN_QUIC_DATAGRAM = 1200  # the smallest max UDP payload QUIC allows (RFC 9000, 14)
IPV4_TCP_HEADERS = 40  # IPv4 + TCP headers without options: MSS <= MTU - 40
IPV4_UDP_HEADERS = 28  # IPv4 + UDP headers: a QUIC datagram's payload <= MTU - 28
MAX_MTU = int(RANGES["mtu"][1])  # the largest MTU a scenario may have


class PlanError(InputError):
    """An inconsistent flow plan; the message names the flow or bearer."""


@dataclass(frozen=True)
class Bearer:
    """One PDCP bearer. ``legs`` are 1-based leg numbers (None: every leg). ``mode`` "dc"
    becomes "dup" when the scenario asks for duplication. ``split`` (a share per leg of
    the bearer) overrides the scenario's split for this bearer. ``paths``: no PDCP, one
    path per leg for a multipath transport (its stack needs ``Capabilities.multipath``)."""

    name: str
    mode: Literal["dc", "sc", "dup", "paths"] = "dc"
    legs: tuple[int, ...] | None = None
    split: tuple[float, ...] | None = None

    def leg_numbers(self, n_legs: int) -> tuple[int, ...]:
        """Its legs over a scenario of ``n_legs`` legs, in order."""
        return self.legs or tuple(range(1, n_legs + 1))


@dataclass(frozen=True)
class Flow:
    """One client-server pair. ``cc`` None is the stack's default."""

    name: str
    stack: str
    bearer: str
    workload: Workload
    cc: str | None = None
    port: int | None = None  # None: allocated by the plan


@dataclass(frozen=True)
class FlowPlan:
    """Bearers and the flows over them; ``FlowPlan.build`` validates and allocates ports."""

    bearers: tuple[Bearer, ...]
    flows: tuple[Flow, ...]
    stats_interval_ms: float | None = None  # the experiment's wish for dcemu's stats records
    tcp_mss: int = TCP_MSS  # the testbed clamps SYNs' MSS to this in both namespaces
    quic_datagram: int | None = None  # max UDP payload QUIC stacks send; None: each stack's own default
    # Sysctls the testbed sets in both namespaces for these flows (e.g. MPTCP's scheduler)
    netns_sysctls: tuple[tuple[str, str], ...] = ()

    @classmethod
    def build(cls, bearers: list[Bearer], flows: list[Flow], scenario: Scenario,
              stats_interval_ms: float | None = None) -> "FlowPlan":
        """A plan whose names are unique, whose flows use known bearers, stacks and
        congestion controllers (resolved), whose bearers use the scenario's legs, and
        whose flows all have distinct ports."""
        if not bearers:
            raise PlanError("a plan needs at least one bearer")
        if not 1 <= len(flows) <= MAX_FLOWS:
            raise PlanError(f"a plan needs 1 to {MAX_FLOWS} flows (got {len(flows)})")
        names = [b.name for b in bearers]
        if len(set(names)) != len(names):
            raise PlanError(f"bearer names must be unique (got {', '.join(names)})")
        for b in bearers:
            legs = b.leg_numbers(scenario.legs)
            bad = [x for x in legs if not 1 <= x <= scenario.legs]
            if bad:
                raise PlanError(f"bearer {b.name}: leg {bad[0]} does not exist (the scenario has {scenario.legs})")
            if b.mode == "sc" and len(legs) != 1:
                raise PlanError(f"bearer {b.name}: an SC bearer is on exactly one leg (got {len(legs)})")
            if b.split is not None and len(b.split) != len(legs):
                raise PlanError(f"bearer {b.name}: split needs one share per leg of the bearer ({len(legs)})")
            if b.mode == "paths" and (len(legs) < 2 or b.split is not None):
                raise PlanError(f"bearer {b.name}: a paths bearer spans 2 legs or more and has no split "
                                f"(the transport splits; got {len(legs)} legs)")
        paths = [b.name for b in bearers if b.mode == "paths"]
        if len(paths) > 1:  # the kernel's MPTCP path manager is one per namespace: every
            # connection would open subflows from every paths bearer's addresses
            raise PlanError(f"a plan has at most one paths bearer (got {', '.join(paths)})")
        if paths and scenario.link is not None:
            raise PlanError(f"bearer {paths[0]}: a paths bearer (MPTCP, multipath QUIC) runs over wired legs "
                            f"(--bw, --delay); over cells (--link {scenario.link}) it is not built")
        fnames = [f.name for f in flows]
        if len(set(fnames)) != len(fnames):
            raise PlanError(f"flow names must be unique (got {', '.join(fnames)})")
        taken = {f.port for f in flows if f.port is not None}
        if len(taken) != len([f for f in flows if f.port is not None]):
            raise PlanError("two flows were given the same port")
        out = []
        next_port = PORT_BASE
        for f in flows:
            if f.bearer not in names:
                raise PlanError(f"flow {f.name}: no bearer {f.bearer!r} (bearers: {', '.join(names)})")
            try:
                stack = get_stack(f.stack)
                cc = stack.check(f.cc, f.workload)
            except StackError as e:
                raise PlanError(f"flow {f.name}: {e}") from None
            if next(b for b in bearers if b.name == f.bearer).mode == "paths" and not stack.capabilities.multipath:
                multi = ", ".join(n for n in STACKS if get_stack(n).capabilities.multipath)
                raise PlanError(f"flow {f.name}: {f.stack} is one path; bearer {f.bearer} needs a multipath stack "
                                f"({multi})")
            port = f.port
            if port is None:
                while next_port in taken:
                    next_port += 1
                port = next_port
                taken.add(port)
            out.append(Flow(f.name, f.stack, f.bearer, f.workload, cc, port))
        return cls(tuple(bearers), tuple(out), stats_interval_ms)

    @property
    def default_bearer(self) -> str:
        """Where packets no flow claims go (the first bearer)."""
        return self.bearers[0].name

    def bearer(self, name: str) -> Bearer:
        return next(b for b in self.bearers if b.name == name)

    def path_addresses(self, legs: int) -> dict[str, tuple[str, ...]]:
        """The paths bearer's client addresses, one per leg in leg order: the client's own
        (198.18.0.2) on its first leg, then the next ones (198.18.0.3, ...)."""
        first = IPv4Address(CLIENT_ADDR)
        return {b.name: tuple(str(first + k) for k in range(len(b.leg_numbers(legs))))
                for b in self.bearers if b.mode == "paths"}

    def client_paths(self, flow: Flow, legs: int) -> tuple[str, ...]:
        """A flow's addresses for ``ClientSpec.paths`` (empty unless on a paths bearer)."""
        return self.path_addresses(legs).get(flow.bearer, ())

    def flow(self, name: str) -> Flow:
        return next(f for f in self.flows if f.name == name)

    def stacks(self) -> list[str]:
        return list(dict.fromkeys(f.stack for f in self.flows))

    def transports(self) -> set[str]:
        return {get_stack(f.stack).transport for f in self.flows}

    def tcp_ccs(self) -> tuple[str, ...]:
        """Congestion controllers the kernel must allow (TCP flows)."""
        return tuple(dict.fromkeys(f.cc for f in self.flows if get_stack(f.stack).transport == "tcp" and f.cc))

    def stack_label(self) -> str:
        """'aioquic' when every flow uses it, else 'flow=stack,...'."""
        names = self.stacks()
        return names[0] if len(names) == 1 else ",".join(f"{f.name}={f.stack}" for f in self.flows)

    def cc_label(self) -> str:
        return ",".join(sorted({f.cc or "" for f in self.flows}))

    def split_label(self, scenario: Scenario) -> str:
        """How PDCP places this plan's packets, for summary lines: the scenario's split
        where a DC bearer spans legs, else what the bearers do instead (a split nothing
        reads is not shown as if it were run)."""
        legs = scenario.legs
        if any(b.mode == "dc" and len(b.leg_numbers(legs)) > 1 for b in self.bearers):
            return "PDCP duplication" if scenario.duplicate else scenario.split_text()
        if any(b.mode == "dup" for b in self.bearers):
            return "PDCP duplication"
        modes = sorted({b.mode for b in self.bearers})
        return f"no PDCP split ({' and '.join(modes)} bearers)"

    def with_packet_sizes(self, scenario: Scenario, tcp_mss: int = TCP_MSS, quic_datagram: int | None = None) -> "FlowPlan":
        """This plan with the TCP MSS clamp and the QUIC max datagram size, checked against
        the scenario's MTU (PlanError naming the option and its range)."""
        hi = scenario.mtu - IPV4_TCP_HEADERS
        if not MIN_TCP_MSS <= tcp_mss <= hi:
            raise PlanError(f"--tcp-mss: must be {MIN_TCP_MSS} to {hi} (the MTU {scenario.mtu} - {IPV4_TCP_HEADERS}) "
                            f"(got {tcp_mss})")
        hi = scenario.mtu - IPV4_UDP_HEADERS
        if quic_datagram is not None and not MIN_QUIC_DATAGRAM <= quic_datagram <= hi:
            raise PlanError(f"--quic-datagram: must be {MIN_QUIC_DATAGRAM} to {hi} (the MTU {scenario.mtu} - "
                            f"{IPV4_UDP_HEADERS}) (got {quic_datagram})")
        for name in self.stacks():  # a stack with a fixed datagram size takes no other
            err = get_stack(name).datagram_error(quic_datagram, hi)
            if err:
                raise PlanError(err)
        return replace(self, tcp_mss=tcp_mss, quic_datagram=quic_datagram)


def single_bearer_plan(scenario: Scenario, flows: list[Flow], stats_interval_ms: float | None = None) -> FlowPlan:
    """Every flow on one DC bearer over every leg (the throughput setup)."""
    return FlowPlan.build([Bearer("dc")], flows, scenario, stats_interval_ms)


def parse_assignments(text: str, flows: list[str], option: str) -> dict[str, str]:
    """'dc=aioquic,sc1=tcp' into {flow: value}, naming ``option`` and the flows on error."""
    out: dict[str, str] = {}
    for part in text.split(","):
        flow, _, value = part.partition("=")
        if flow.strip() not in flows or not value.strip():
            raise PlanError(f"{option}: expected {','.join(f + '=VALUE' for f in flows)} (got {clip(part)})")
        if flow.strip() in out:
            raise PlanError(f"{option}: {flow.strip()} given twice ({out[flow.strip()]!r} and {clip(value.strip())})")
        out[flow.strip()] = value.strip()
    return out
