"""Flows and bearers as data: the flow plan of one run.

A plan lists the bearers dcemu emulates (a DC bearer split over chosen legs, an SC bearer
pinned to one leg, a duplicated bearer on every leg) and the flows that cross them (a
name, a stack with its congestion control, a server port, a bearer, and the workload its
client fetches). The testbed starts one server per flow and renders the bearers into
dcemu's scenario file; per-flow metrics are read by flow name from dcemu's per-bearer
counters. Experiments build plans; nothing else knows which flows an experiment has.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .endpoints import get_stack
from .endpoints.base import StackError, Workload
from .scenario import Scenario

PORT_BASE = 4433  # the study's DC port; further flows take the next free ports
MAX_FLOWS = 64


class PlanError(ValueError):
    """An inconsistent flow plan; the message names the flow or bearer."""


@dataclass(frozen=True)
class Bearer:
    """One PDCP bearer. ``legs`` are 1-based leg numbers (None: every leg). ``mode`` "dc"
    becomes "dup" when the scenario asks for duplication. ``split`` (a share per leg of
    the bearer) overrides the scenario's split for this bearer."""

    name: str
    mode: Literal["dc", "sc", "dup"] = "dc"
    legs: tuple[int, ...] | None = None
    split: tuple[float, ...] | None = None


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
            legs = b.legs or tuple(range(1, scenario.legs + 1))
            bad = [x for x in legs if not 1 <= x <= scenario.legs]
            if bad:
                raise PlanError(f"bearer {b.name}: leg {bad[0]} does not exist (the scenario has {scenario.legs})")
            if b.mode == "sc" and len(legs) != 1:
                raise PlanError(f"bearer {b.name}: an SC bearer is on exactly one leg (got {len(legs)})")
            if b.split is not None and len(b.split) != len(legs):
                raise PlanError(f"bearer {b.name}: split needs one share per leg of the bearer ({len(legs)})")
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
                cc = get_stack(f.stack).check(f.cc, f.workload)
            except StackError as e:
                raise PlanError(f"flow {f.name}: {e}") from None
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


def single_bearer_plan(scenario: Scenario, flows: list[Flow], stats_interval_ms: float | None = None) -> FlowPlan:
    """Every flow on one DC bearer over every leg (the throughput setup)."""
    return FlowPlan.build([Bearer("dc")], flows, scenario, stats_interval_ms)


def parse_assignments(text: str, flows: list[str], option: str) -> dict[str, str]:
    """'dc=aioquic,sc1=tcp' into {flow: value}, naming ``option`` and the flows on error."""
    out: dict[str, str] = {}
    for part in text.split(","):
        flow, _, value = part.partition("=")
        if flow.strip() not in flows or not value.strip():
            raise PlanError(f"{option}: expected {','.join(f + '=VALUE' for f in flows)} (got {part!r})")
        out[flow.strip()] = value.strip()
    return out
