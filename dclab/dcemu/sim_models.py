"""What the simulation models, per stack and congestion controller (``COVERAGE``), and the
stand-ins a user may name for what it does not.

A model (``Model``, emu/src/model/) reproduces one stack's transport and controllers. A
(stack, cc) with a model of its own runs on it; one without is refused on ``--backend
sim`` unless the user names a model of the same transport to stand in for it
(``--stand-in ngtcp2=aioquic``, or ``tcp:bbr=dclab-bbr`` for one controller). The stand-in
runs in the stack's place with the stack's own host costs, and its results carry the
model's name wherever the stack is shown ("ngtcp2 (aioquic model)").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..endpoints import STACKS, get_stack
from ..endpoints.base import StackError
from ..files import clip


class SimError(RuntimeError):
    pass


@dataclass(frozen=True)
class Model:
    """A modelled behaviour: whose transport it reproduces, and its controllers."""

    name: str  # what --stand-in names, and what a stand-in's label shows
    transport: Literal["quic", "tcp"]
    ccs: tuple[str, ...]
    quic: str = "aioquic-1.7"  # whose QUIC behaviour (emu/src/sim/workload.rs)
    about: str = ""


AIOQUIC = Model("aioquic", "quic", ("reno", "cubic", "bbr"), about="aioquic 1.7.2; its bbr is dclab's BBR v1 (bbr.py)")
AIOQUIC_2020 = Model("aioquic-2020", "quic", ("reno",), quic="aioquic-0.8", about="aioquic 0.8.7, QUIC draft 27")
LINUX_TCP = Model("tcp", "tcp", ("reno", "cubic"), about="Linux TCP: Reno, CUBIC with HyStart")
# dcemu's TCP with cc bbr: the Linux TCP model driven by dclab's BBR v1 (emu/src/model/cc/bbr.rs,
# with Linux's 1 % pacing margin), not a model of Linux's own tcp_bbr.
DCLAB_BBR = Model("dclab-bbr", "tcp", ("bbr",), about="Linux TCP with dclab's BBR v1, not Linux's tcp_bbr")
MODELS: dict[str, Model] = {m.name: m for m in (AIOQUIC, AIOQUIC_2020, LINUX_TCP, DCLAB_BBR)}

# The aioquic client's time per packet while packets wait in its socket: the value of the
# calibration kept in data/calibration/aioquic-client.json (scripts/calibrate_client.py: batch
# 50, 0.1 % loss and the delay ratio 2, none of them a validation point; tests/test_calibration.py
# holds the two together). It is this machine's: a faster or slower one needs its own.
AIOQUIC_CLIENT_US = 259.1


@dataclass(frozen=True)
class Modelled:
    """One row of what the simulation models: a stack with one of its controllers, its own
    model (None: not modelled), and its hosts' CPU per packet (µs at the client, at the
    server; 0: not measured, free). A stand-in keeps the stack's own host costs."""

    stack: str
    cc: str
    model: Model | None
    client_packet_us: float = 0.0
    server_packet_us: float = 0.0


# Giving a stack a model of its own means raising SIM_MODEL (sim.py): before stand-ins were
# recorded, ngtcp2 ran silently on aioquic's model and TCP BBR on dclab-bbr, and those stored
# runs' keys are those its own model's runs would otherwise get.
COVERAGE: tuple[Modelled, ...] = (
    Modelled("aioquic", "reno", AIOQUIC, AIOQUIC_CLIENT_US),
    Modelled("aioquic", "cubic", AIOQUIC, AIOQUIC_CLIENT_US),
    Modelled("aioquic", "bbr", AIOQUIC, AIOQUIC_CLIENT_US),
    Modelled("aioquic-2020", "reno", AIOQUIC_2020),
    Modelled("mptcp", "cubic", None),
    Modelled("mptcp", "reno", None),
    Modelled("mptcp", "bbr", None),
    Modelled("ngtcp2", "cubic", None),
    Modelled("ngtcp2", "reno", None),
    Modelled("ngtcp2", "bbr", None),
    Modelled("ngtcp2", "bbr2", None),
    Modelled("noq", "cubic", None),
    Modelled("noq", "reno", None),
    Modelled("noq", "bbr", None),
    Modelled("quic-go", "reno", None),
    Modelled("quinn", "cubic", None),
    Modelled("quinn", "reno", None),
    Modelled("quinn", "bbr", None),
    Modelled("tcp", "reno", LINUX_TCP),
    Modelled("tcp", "cubic", LINUX_TCP),
    Modelled("tcp", "bbr", None),
)
_ROWS = {(r.stack, r.cc): r for r in COVERAGE}


def row(stack: str, cc: str) -> Modelled:
    """The table's row of a stack's controller (SimError naming the stacks it has)."""
    r = _ROWS.get((stack, cc))
    if r is None:
        raise SimError(f"{stack} {cc} has no row in the simulation's table (it has {modelled_text()})")
    return r


def modelled_text() -> str:
    """'aioquic reno, cubic, bbr; aioquic-2020 reno; tcp reno, cubic': what has a model."""
    by_stack: dict[str, list[str]] = {}
    for r in COVERAGE:
        if r.model is not None:
            by_stack.setdefault(r.stack, []).append(r.cc)
    return "; ".join(f"{s} {', '.join(ccs)}" for s, ccs in by_stack.items())


def transport_of(stack: str) -> str:
    return "tcp" if get_stack(stack).transport == "tcp" else "quic"


def suggestion(stack: str, cc: str) -> Model | None:
    """The first model of the stack's transport that has ``cc``: what to name for it."""
    t = transport_of(stack)
    return next((m for m in MODELS.values() if m.transport == t and cc in m.ccs), None)


def subject_of(stack: str, cc: str, stand_in: Mapping[str, str]) -> str | None:
    """The --stand-in subject that names this stack's controller (``stack:cc`` before ``stack``)."""
    return next((s for s in (f"{stack}:{cc}", stack) if s in stand_in), None)


def refusal(stack: str, cc: str, stand_in: Mapping[str, str]) -> str | None:
    """Why a (stack, cc) cannot run on the simulation as asked; None when it can."""
    if row(stack, cc).model is not None:
        return None
    subject = subject_of(stack, cc, stand_in)
    if subject is not None:
        named = MODELS[stand_in[subject]]
        if cc in named.ccs:
            return None
        return (f"{stack} {cc} has no model of its own, and the {named.name} model named by --stand-in "
                f"{subject}={named.name} has no {cc} (it has {', '.join(named.ccs)})")
    what = f"{stack} {cc} has no model of its own (the simulation models {modelled_text()})"
    m = suggestion(stack, cc)
    if m is None:
        return f"{what}, and no model has {cc} to stand in for it: run it with --backend emu"
    whole = len(unmodelled_ccs(stack)) == len(get_stack(stack).ccs)  # no controller of it is modelled
    subject = stack if whole else f"{stack}:{cc}"
    return (f"{what}. To run it on another model anyway, name that model: --stand-in {subject}={m.name} "
            f"(its results are labelled \"{stack} ({m.name} model)\")")


def unmodelled_ccs(stack: str) -> list[str]:
    return [r.cc for r in COVERAGE if r.stack == stack and r.model is None]


def model_for(stack: str, cc: str, stand_in: Mapping[str, str]) -> tuple[Modelled, Model]:
    """The table's row of a flow and the model it runs on: its own, else the stand-in named
    for it. SimError with ``refusal``'s reason otherwise."""
    why = refusal(stack, cc, stand_in)
    if why is not None:
        raise SimError(why)
    r = row(stack, cc)
    if r.model is not None:
        return r, r.model
    subject = subject_of(stack, cc, stand_in)
    assert subject is not None
    return r, MODELS[stand_in[subject]]


def used(flows: Iterable[tuple[str, str]], stand_in: Mapping[str, str]) -> dict[str, str]:
    """The stand-ins that flows of (stack, cc) run on: those naming a stack's controller
    that has no model of its own."""
    out = {}
    for stack, cc in flows:
        if row(stack, cc).model is None and (subject := subject_of(stack, cc, stand_in)) is not None:
            out[subject] = stand_in[subject]
    return dict(sorted(out.items()))


def parse(value: Any) -> dict[str, str]:
    """``"ngtcp2=aioquic,tcp:bbr=dclab-bbr"`` (or a TOML table of the same) into a mapping;
    ValueError naming the form."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, str):
        items = []
        for part in (p.strip() for p in value.split(",")):
            subject, eq, model = part.partition("=")
            if not part or not eq:
                raise ValueError(f"expected STACK[:CC]=MODEL[,...], e.g. ngtcp2=aioquic (got {clip(value)})")
            items.append((subject, model))
    else:
        raise ValueError(f"expected STACK[:CC]=MODEL[,...], e.g. ngtcp2=aioquic (got {clip(value)})")
    out: dict[str, str] = {}
    for subject, model in items:
        subject, model = str(subject).strip(), str(model).strip()
        if subject in out:
            raise ValueError(f"{subject} is given twice")
        out[subject] = model
    return dict(sorted(out.items()))


def check(stand_in: Mapping[str, str]) -> None:
    """Each subject a stack (or stack:cc) with a controller that has no model of its own,
    each model a known one of the same transport that has such a controller; ValueError."""
    for subject, name in stand_in.items():
        stack, _, cc = subject.partition(":")
        if stack not in STACKS:
            raise ValueError(f"{subject}={name}: {stack!r} is not a stack (stacks: {', '.join(STACKS)})")
        try:
            get_stack(stack).resolve_cc(cc or None, option=subject)
        except StackError as e:
            raise ValueError(str(e)) from None
        m = MODELS.get(name)
        if m is None:
            raise ValueError(f"{subject}={name}: no model {name!r} (models: {', '.join(MODELS)})")
        missing = [cc] if cc else unmodelled_ccs(stack)
        if cc and row(stack, cc).model is not None:
            raise ValueError(f"{subject}={name}: {stack} {cc} has a model of its own")
        if not missing:
            raise ValueError(f"{subject}={name}: every controller of {stack} has a model of its own")
        if m.transport != transport_of(stack):
            raise ValueError(f"{subject}={name}: the {name} model is of {m.transport.upper()}, {stack} is a "
                             f"{transport_of(stack).upper()} stack")
        if not set(missing) & set(m.ccs):
            raise ValueError(f"{subject}={name}: the {name} model has {', '.join(m.ccs)}, none of what {stack} "
                             f"has no model for ({', '.join(missing)})")


def unrecorded(flows: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The stand-ins of a simulated run stored before they were recorded: such a run put a
    stack without a model of its own on the first model of its transport with its
    controller (ngtcp2 on aioquic's, TCP BBR on dclab-bbr), as ``suggestion`` still picks."""
    out = {}
    for stack, cc in flows:
        r = _ROWS.get((stack, cc))
        m = suggestion(stack, cc) if r is not None and r.model is None else None
        if m is not None:
            whole = len(unmodelled_ccs(stack)) == len(get_stack(stack).ccs)
            out[stack if whole else f"{stack}:{cc}"] = m.name
    return dict(sorted(out.items()))
