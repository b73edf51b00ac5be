"""The dcemu scenario file of one run: the scenario's links and PDCP, the flow plan's
bearers (each matching its flows' server ports), and the run's topology."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import tomli_w

from ..files import JsonObject
from ..flowplan import FlowPlan
from ..scenario import Scenario


def _direction(rate_or_trace: JsonObject, queue: int, delay_ms: float, std_ms: float, limit: int,
               loss_pct: float, jitter_reorders: bool, loss_at: str = "after-rate") -> JsonObject:
    d: JsonObject = {**rate_or_trace, "queue_packets": queue, "delay_limit": limit,
                         "jitter_reorders": jitter_reorders, "loss_at": loss_at}
    if std_ms > 0:
        d["delay"] = {"distribution": "normal", "mean_ms": delay_ms, "std_ms": std_ms}
    else:
        d["delay"] = {"distribution": "constant", "ms": delay_ms}
    if loss_pct > 0:
        d["loss"] = {"model": "bernoulli", "percent": loss_pct}
    return d


def x2(s: Scenario) -> JsonObject:
    """The X2/Xn hop to a secondary leg: --x2-delay one way, no rate limit."""
    return {"rate": "unlimited", "queue_packets": 1_000_000,
            "delay": {"distribution": "constant", "ms": s.x2_delay}}


def cell_legs(s: Scenario, plan: FlowPlan) -> list[JsonObject]:
    """``--link``: leg ``k``'s downlink is the ``k``-th cell (one device per bearer on the
    leg, in bearer order, as dcemu counts them, all at the level's SINR) followed by the
    leg's --delay and --loss (the core network); the uplink is the ordinary one, on leg 1
    (EN-DC's master)."""
    assert s.link is not None
    out = []
    for i, cell in enumerate(s.link.cells):
        down = _direction({}, s.queue_packets, s.delay[i], s.delay_std(i), s.delay_limit, s.loss[i],
                          s.reorders_by_jitter)
        del down["queue_packets"]  # the cell has a queue per device
        down["cell"] = cell.cell(sum(1 for b in plan.bearers if b.legs is None or i + 1 in b.legs))
        if (table := aqm(s, i)) is not None:
            down["aqm"] = table  # dcemu runs it on each of the cell's device queues
        leg: JsonObject = {"name": f"leg{i + 1}", "downlink": down}
        if i > 0 and s.x2_delay is not None:
            leg["x2"] = x2(s)
        if i == 0:
            leg["uplink"] = _direction({"rate": f"{s.uplink_bw}mbit"}, s.uplink_queue_packets, s.uplink_delay,
                                       s.uplink_delay * s.delay_cov, s.delay_limit, s.uplink_loss,
                                       s.reorders_by_jitter)
        out.append(leg)
    return out


def aqm(s: Scenario, leg: int) -> JsonObject | None:
    """Leg ``leg``'s ``[legs.downlink.aqm]`` (None: tail drop); a setting left at None takes
    dcemu's default, the RFC's for the kind."""
    kind = s.aqm[leg] if s.aqm is not None else "tail-drop"
    if kind == "tail-drop":
        return None
    table: JsonObject = {"kind": kind, "ecn": s.aqm_ecn}
    if s.aqm_target_ms is not None:
        table["target_ms"] = s.aqm_target_ms
    if s.aqm_interval_ms is not None:
        table["interval_ms"] = s.aqm_interval_ms
    return table


def legs(s: Scenario, plan: FlowPlan) -> list[JsonObject]:
    """Every downlink leg; the uplink rides on leg 1 only, as in the study, unless the plan
    has a paths bearer: then every leg has the uplink's settings, so each path's uplink is
    its own leg's (the DC and SC bearers' stays on leg 1)."""
    every_uplink = any(b.mode == "paths" for b in plan.bearers)
    out = []
    for i in range(s.legs):
        trace = s.leg_trace(i)
        rate = {"trace": {"path": str(Path(trace).resolve())}} if trace else {"rate": f"{s.bw[i]}mbit"}
        leg: JsonObject = {
            "name": f"leg{i + 1}",
            "downlink": _direction(rate, s.queue_packets, s.delay[i], s.delay_std(i), s.delay_limit, s.loss[i],
                                   s.reorders_by_jitter, s.loss_at),
        }
        if (table := aqm(s, i)) is not None:
            leg["downlink"]["aqm"] = table
        if i > 0 and s.x2_delay is not None:
            leg["x2"] = x2(s)
        if i == 0 or every_uplink:
            leg["uplink"] = _direction({"rate": f"{s.uplink_bw}mbit"}, s.uplink_queue_packets, s.uplink_delay,
                                       s.uplink_delay * s.delay_cov, s.delay_limit, s.uplink_loss, s.reorders_by_jitter,
                                       s.loss_at)
        out.append(leg)
    return out


def bearers(s: Scenario, plan: FlowPlan) -> list[JsonObject]:
    """The plan's bearers; a paths bearer becomes one dcemu ``path`` bearer per leg,
    ``{name}-leg{k}``, matching its flows' server ports from that leg's client address."""
    out: list[JsonObject] = []
    addrs = plan.path_addresses(s.legs)
    for b in plan.bearers:
        if b.mode == "paths":
            ports = [f.port for f in plan.flows if f.bearer == b.name]
            for leg, addr in zip(b.leg_numbers(s.legs), addrs[b.name], strict=True):
                out.append({"name": path_bearer(b.name, leg), "mode": "path", "legs": [f"leg{leg}"],
                            "match": [{"server_port": p, "client_addr": addr} for p in ports]})
            continue
        mode = "dup" if b.mode == "dc" and s.duplicate else b.mode
        d: JsonObject = {"name": b.name, "mode": mode}
        if b.legs is not None:
            d["legs"] = [f"leg{x}" for x in b.legs]
        d["match"] = [{"server_port": f.port} for f in plan.flows if f.bearer == b.name]
        if b.split is not None:
            d["split"] = split(s, b.split)
        out.append(d)
    return out


def split(s: Scenario, ratio: Sequence[float]) -> JsonObject:
    """A dcemu [split] table: the batch and ``ratio``, and the flow control's policy and
    parameters when it is not static."""
    out: JsonObject = {"batch": s.batch, "ratio": list(ratio)}
    if s.split_policy != "static":
        out.update(policy=s.split_policy, period_ms=s.report_period, target_delay_ms=s.target_delay)
    if s.split_policy == "delay-target":
        out.update(hold_bytes=s.hold_bytes, discard_ms=s.discard_ms)
    if s.split_policy != "static" and s.fallback_ms > 0:
        out["fallback_ms"] = s.fallback_ms
    return out


def _loss(percent: float) -> JsonObject:
    return {"model": "bernoulli", "percent": percent}


def schedule(s: Scenario, rendered_legs: list[JsonObject]) -> list[JsonObject]:
    """The scenario's changes for dcemu: the outage (its leg loses every packet, each
    direction it has, from ``at_s``, and has its own loss again ``duration_s`` later) and
    the secondary node events on leg 2."""
    out = [{"at_ms": e.at_s * 1e3, "leg": rendered_legs[1]["name"],
            "secondary": {"event": e.event, "interruption_ms": e.interruption_ms, "buffered": e.buffered}}
           for e in s.sn_events or []]
    o = s.outage
    if o is None:
        return out
    leg = rendered_legs[o.leg - 1]
    start, end = o.at_s * 1e3, (o.at_s + o.duration_s) * 1e3
    for direction, loss in (("downlink", s.loss[o.leg - 1]), ("uplink", s.uplink_loss)):
        if direction in leg:
            out += [{"at_ms": start, "leg": leg["name"], "direction": direction, "loss": _loss(100.0)},
                    {"at_ms": end, "leg": leg["name"], "direction": direction, "loss": _loss(loss)}]
    return sorted(out, key=lambda c: c["at_ms"])


def path_bearer(bearer: str, leg: int) -> str:
    """The dcemu bearer of a paths bearer's path on ``leg`` (1-based)."""
    return f"{bearer}-leg{leg}"


def to_dcemu(s: Scenario, plan: FlowPlan, topology: JsonObject) -> str:
    """The dcemu scenario file. ``topology`` is the [topology] table (namespaces, devices,
    addresses)."""
    paths = [a for addrs in plan.path_addresses(s.legs).values() for a in addrs[1:]]  # addrs[0]: the client's own
    extra = {"client_extra_addrs": paths} if paths else {}
    rendered = bearers(s, plan)
    rendered_legs = cell_legs(s, plan) if s.link is not None else legs(s, plan)
    doc = {
        "seed": s.seed,
        "default_bearer": rendered[0]["name"] if plan.bearers[0].mode == "paths" else plan.default_bearer,
        "topology": {**topology, "mtu": s.mtu, **extra},
        "pdcp": {
            "sn_bits": s.pdcp_sn_bits,
            "header_bytes": s.header_bytes,
            "t_reordering_ms": "inf" if s.t_reordering is None else s.t_reordering,
            # One LTE cell has nothing to reorder (its RLC delivers in order), and its queue
            # drops would leave holes the receiver waits t-Reordering for; NR's RLC hands
            # HARQ-delayed packets up out of order, and EN-DC splits, so PDCP reorders.
            "reordering": s.reordering and (s.link is None or s.link.kind != "lte"),
            "processing_ms": s.pdcp_processing,
        },
        "split": split(s, s.split),
        "stats": {"interval_ms": max(s.stats_interval_ms, plan.stats_interval_ms or 0.0)},
        "legs": rendered_legs,
        "bearers": rendered,
    }
    changes = schedule(s, rendered_legs)
    if changes:
        doc["schedule"] = changes
    return tomli_w.dumps(doc)
