"""The flows experiment: N QUIC against M TCP flows at once over one bottleneck (the LTE
study's fairness experiment). ``--mix aioquic:reno=1,tcp:reno=5`` starts one client per flow, every client
downloading a large file (``--size``) and stopped at the end of the window; each flow's
mean throughput over [warmup, duration] seconds from the clients' start comes from
dcemu's per-bearer delivered bytes. Reported per flow, per protocol (flows grouped by
stack, and by transport: QUIC or TCP) as the mean and standard deviation over flows, the
QUIC/TCP ratio (mean QUIC flow over mean TCP flow), and Jain's index over all flows and
within each transport.

The plan: every flow has its own SC bearer on leg 1, named after the flow (so dcemu counts
each flow's delivered bytes by name). On a wired leg all bearers share that leg's one
FIFO queue and rate: the flows compete at a wired bottleneck. With ``--link lte:LEVEL``
leg 1 is an LTE cell and each bearer one device with its own queue, served by the cell's
scheduler (dcemu/config.py renders it; the plan is the same). Other legs of the
scenario carry no flow. Several mixes in one campaign (its groups) are drawn as one
group of bars per mix (``by_mix``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..analysis import figures
from ..analysis.metrics import jain, mean_std
from ..analysis.stored_run import StoredRun
from ..endpoints import STACKS, get_stack
from ..endpoints.base import StackError, Workload
from ..files import JsonObject, clip
from ..flowplan import Bearer, Flow, FlowPlan
from ..scenario import Scenario, build
from ..testbed import Bed
from .base import Experiment, FlowResult, Metric, PacketSizeOptions, RepResult, Size, Summary, Table, _fmt
from .window import run_window

STATS_INTERVAL_MS = 100.0  # as fairness: long runs, many bearers
MAX_PER_ENTRY = 32
MAX_FLOWS = 32
LEG = 1  # every flow's bearer is on this leg
TRANSPORTS = ("quic", "tcp")  # a stack's transport "udp" is QUIC here


@dataclass(frozen=True)
class MixEntry:
    """``count`` flows of ``stack`` with congestion control ``cc`` (resolved)."""

    stack: str
    cc: str
    count: int

    @property
    def transport(self) -> str:
        return transport_of(self.stack)


def transport_of(stack: str) -> str:
    """'quic' or 'tcp'."""
    return "tcp" if get_stack(stack).transport == "tcp" else "quic"


def parse_mix(text: str) -> list[MixEntry]:
    """'aioquic:reno=1,tcp=5' into entries; ValueError saying what is allowed (the option
    is named by whoever reports it)."""
    form = "expected STACK[:CC]=COUNT[,...], e.g. aioquic:reno=1,tcp:reno=5"
    out: list[MixEntry] = []
    seen: set[tuple[str, str]] = set()
    if not text or not text.strip():
        raise ValueError(f"{form} (got {clip(text)})")
    for part in text.split(","):
        spec, eq, count_text = part.partition("=")
        stack, _, cc = spec.strip().partition(":")
        if not eq or not stack or not count_text.strip() or (":" in spec and not cc.strip()):
            raise ValueError(f"{form} (got {clip(part)})")
        if stack not in STACKS:
            raise ValueError(f"stack must be one of {', '.join(STACKS)} (got {clip(stack)} in {clip(part)})")
        try:
            resolved = get_stack(stack).resolve_cc(cc.strip() or None, option="cc")
        except StackError as e:
            raise ValueError(f"{e} in {part!r}") from None
        try:
            count = int(count_text.strip())
        except ValueError:
            raise ValueError(f"COUNT must be a whole number from 1 to {MAX_PER_ENTRY} (got {count_text.strip()!r} "
                             f"in {clip(part)})") from None
        if not 1 <= count <= MAX_PER_ENTRY:
            raise ValueError(f"COUNT must be a whole number from 1 to {MAX_PER_ENTRY} (got {count} in {clip(part)})")
        if (stack, resolved) in seen:
            raise ValueError(f"{stack}:{resolved} is given twice; give its count once")
        seen.add((stack, resolved))
        out.append(MixEntry(stack, resolved, count))
    total = sum(e.count for e in out)
    if total > MAX_FLOWS:
        raise ValueError(f"at most {MAX_FLOWS} flows in all (got {total})")
    tcp = sorted({e.cc for e in out if e.transport == "tcp"})
    if len(tcp) > 1:
        raise ValueError(f"TCP flows share the server namespace's congestion control; give them one "
                         f"(got {', '.join(tcp)})")
    return out


def _mix(text: str) -> str:
    parse_mix(text)
    return text


MixText = Annotated[str, AfterValidator(_mix)]


def flow_names(mix: list[MixEntry]) -> list[tuple[str, MixEntry]]:
    """Each flow's name with its entry: STACK-CC-I, numbered from 1 per entry."""
    return [(f"{e.stack}-{e.cc}-{i}", e) for e in mix for i in range(1, e.count + 1)]


def mix_plan(scenario: Scenario, mix: list[MixEntry], size: int) -> FlowPlan:
    """One SC bearer on leg 1 per flow, named after it; ports allocated by the plan."""
    named = flow_names(mix)
    bearers = [Bearer(name, "sc", (LEG,)) for name, _ in named]
    flows = [Flow(name, e.stack, name, Workload.single(size), e.cc) for name, e in named]
    return FlowPlan.build(bearers, flows, scenario, STATS_INTERVAL_MS)


class FlowsOptions(PacketSizeOptions):
    mix: MixText = Field("aioquic:reno=1,tcp:reno=1",
                         description=(f"Flows as STACK[:CC]=COUNT, comma-separated, e.g. aioquic:reno=1,tcp:reno=5 "
                                      f"(stacks {', '.join(STACKS)}; CC one the stack offers, default its first; "
                                      f"COUNT 1-{MAX_PER_ENTRY}, at most {MAX_FLOWS} flows; TCP flows share one CC)."),
                         json_schema_extra={"sweep": False})
    udp_buffer: Literal["default", "large"] = Field(
        "default", description="QUIC host configuration: net.core.rmem_default 212992 (default) or 32 MiB (large).")
    # The window, not the size, ends a run: sweeping the size would measure nothing new.
    size: Size = Field(1_000_000_000, description="Bytes each client asks for.",
                       json_schema_extra={"show": "1GB", "sweep": False})
    duration: float = Field(60.0, ge=1, le=86400, description="Seconds from the clients' start to the end of the window.")
    warmup: float = Field(5.0, ge=0, le=86400, description="Seconds from the clients' start left out of the window.")

    @model_validator(mode="after")
    def _window(self) -> "FlowsOptions":
        if self.duration - self.warmup < 1:
            raise ValueError(f"warmup: must end at least 1 s before --duration ({self.duration:g} s) "
                             f"(got {self.warmup:g})")
        return self

    def entries(self) -> list[MixEntry]:
        return parse_mix(self.mix)


class FlowGroup(BaseModel):
    """The flows of one transport or stack in one repetition: their mean and std over
    flows of the flows' mean Mbit/s, and their JFI."""

    model_config = ConfigDict(frozen=True)

    flows: int = 0
    mean_mbps: float | None = None
    std_mbps: float | None = None
    jfi: float | None = None


class Groups(BaseModel):
    """A repetition's flows grouped by transport ("quic", "tcp") and by stack."""

    model_config = ConfigDict(frozen=True)

    transport: dict[str, FlowGroup] = {}
    stack: dict[str, FlowGroup] = {}


class GroupOverReps(BaseModel):
    """A group over repetitions: the mean and std of its mean, and the means of its std
    over flows and of its JFI."""

    model_config = ConfigDict(frozen=True)

    flows: int
    mean_mbps: float | None
    mean_mbps_std: float | None
    std_mbps: float | None
    jfi: float | None


class FlowInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    stack: str
    cc: str
    transport: str


class FlowsSummarized(BaseModel):
    """The summary's extra: each flow's stack, cc and transport, and the groups over
    repetitions by transport and by stack."""

    model_config = ConfigDict(frozen=True)

    flows: dict[str, FlowInfo] = {}
    transport: dict[str, GroupOverReps] = {}
    stack: dict[str, GroupOverReps] = {}


def _over_reps(reps: list[dict[str, FlowGroup]]) -> dict[str, GroupOverReps]:
    """Each group (by name, in order of first appearance) over the repetitions that have it."""
    out = {}
    for k in dict.fromkeys(k for g in reps for k in g):
        per = [g[k] for g in reps if k in g]
        ms = mean_std([g.mean_mbps for g in per])
        out[k] = GroupOverReps(flows=per[0].flows, mean_mbps=ms.mean, mean_mbps_std=ms.std,
                               std_mbps=mean_std([g.std_mbps for g in per]).mean, jfi=mean_std([g.jfi for g in per]).mean)
    return out


def flow_metrics(means: dict[str, float | None], stacks: dict[str, str]) -> tuple[dict[str, float | None], Groups]:
    """The repetition's metrics from each flow's mean Mbit/s (``means``) and its stack
    (``stacks``, by flow): JFI over all flows and per transport, per-transport mean and
    std over flows, the QUIC/TCP ratio (None when a side has no flow or the TCP flows
    delivered nothing) and the total; and its ``Groups``. A flow without a mean counts
    nowhere."""
    def group(names: list[str]) -> FlowGroup:
        vals = [v for v in (means.get(n) for n in names) if v is not None]
        ms = mean_std(vals)
        return FlowGroup(flows=len(names), mean_mbps=ms.mean, std_mbps=ms.std, jfi=jain(vals))

    by_transport: dict[str, list[str]] = {}
    by_stack: dict[str, list[str]] = {}
    for name, stack in stacks.items():
        by_transport.setdefault(transport_of(stack), []).append(name)
        by_stack.setdefault(stack, []).append(name)
    groups = Groups(transport={t: group(by_transport[t]) for t in TRANSPORTS if t in by_transport},
                    stack={s: group(ns) for s, ns in by_stack.items()})
    vals = [v for v in (means.get(n) for n in stacks) if v is not None]
    metrics: dict[str, float | None] = {"jfi": jain(vals), "total_mbps": sum(vals) if vals else None}
    for t in TRANSPORTS:
        g = groups.transport.get(t, FlowGroup())
        metrics[f"{t}_mean_mbps"] = g.mean_mbps
        metrics[f"{t}_std_mbps"] = g.std_mbps
        metrics[f"jfi_{t}"] = g.jfi
    q, t_ = metrics["quic_mean_mbps"], metrics["tcp_mean_mbps"]
    metrics["quic_tcp_ratio"] = q / t_ if q is not None and t_ else None
    return metrics, groups


Run = StoredRun[FlowsOptions]


def _n_flows(n: int) -> str:
    return f"{n} flow" if n == 1 else f"{n} flows"


def _flow_names_of(rows: Sequence[Run]) -> list[str]:
    """Every flow of the rows, in their order of first appearance."""
    return list(dict.fromkeys(f.name for r in rows for f in r.flows if f.name))


def per_stack_rows(rows: Sequence[Run]) -> list[Run]:
    """One row per flow of each run, carrying the flow's stack and cc and its mean
    throughput as the metric ``flow_mbps``: figures then draw a series per stack and cc
    (flows of one stack in one run are averaged with its repetitions)."""
    out = []
    for r in rows:
        for f in r.flows:
            out.append(r.model_copy(update={"run_key": f"{r.run_key}/{f.name}", "stack": f.stack, "cc": f.cc,
                                            "metrics": {"flow_mbps": f.mean_mbps},
                                            "ok": r.ok and f.mean_mbps is not None}))
    return out


def by_mix(rows: Sequence[Run], xlabel: str) -> tuple[Sequence[Run], str]:
    """Rows of several mixes (a campaign's groups, e.g. the LTE study's four) relabelled so
    that each mix is one group of bars: its value becomes the mix (after the swept value
    when there are several) and every row one series; rows of one mix as they are."""
    mixes = {r.options.mix for r in rows}
    if len(mixes) <= 1:
        return rows, xlabel
    several = len({(r.value_num, r.value) for r in rows}) > 1
    out = []
    for r in rows:
        mix = r.options.mix or "?"
        value = f"{r.value} {mix}" if several else mix
        out.append(r.model_copy(update={"value": value, "value_num": None, "stack": "mixes", "cc": "",
                                        "host_config": "mixes"}))
    return out, (f"{xlabel}, mix" if several else "mix")


class Flows(Experiment[FlowsOptions]):
    name = "flows"
    help = ("N QUIC against M TCP flows: --mix STACK[:CC]=COUNT,... clients at once, each on its own bearer on leg 1 "
            "(a wired bottleneck: leg 1's one queue; with --link lte:LEVEL one device of the cell each), each "
            "downloading --size; per-flow mean throughput over [--warmup, --duration], per-transport mean and std, "
            "the QUIC/TCP ratio and Jain's index (all, per transport).")
    options_model = FlowsOptions
    metrics = (
        Metric("jfi", "Jain's fairness index", digits=3),
        Metric("jfi_quic", "JFI among QUIC flows", digits=3),
        Metric("jfi_tcp", "JFI among TCP flows", digits=3),
        Metric("quic_tcp_ratio", "QUIC/TCP ratio", digits=3),
        Metric("quic_mean_mbps", "mean QUIC flow", "Mbit/s"),
        Metric("quic_std_mbps", "std over QUIC flows", "Mbit/s"),
        Metric("tcp_mean_mbps", "mean TCP flow", "Mbit/s"),
        Metric("tcp_std_mbps", "std over TCP flows", "Mbit/s"),
        Metric("total_mbps", "sum over flows", "Mbit/s"),
    )
    run_figure_name = "flows.png"
    run_figure_kind = "flows"

    def scenario(self, scenario: Scenario, options: FlowsOptions) -> Scenario:
        return build(scenario, stats_interval_ms=max(scenario.stats_interval_ms, STATS_INTERVAL_MS))

    def plan(self, scenario: Scenario, options: FlowsOptions) -> FlowPlan:
        o = options
        return mix_plan(scenario, o.entries(), o.size)

    def estimate_s(self, scenario: Scenario, options: FlowsOptions, capacity_mbps: float) -> float:
        return 2.0 + float(options.duration)

    def longest_s(self, scenario: Scenario, plan: FlowPlan, options: FlowsOptions) -> float | None:
        return float(options.duration)

    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: FlowsOptions, result: RepResult) -> RepResult:
        o = options
        w = run_window(bed, o.duration, o.warmup)
        records, t0_ms, means = w.records, w.t0_ms, w.means
        names = [f.name for f in plan.flows]
        result.flows = [FlowResult.of(plan, n, w.transfers.get(n), means.get(n)) for n in names]
        result.ok = bool(records) and all(means.get(n) is not None for n in names)
        result.error = None if result.ok else "no dcemu statistics for the window"
        metrics, groups = flow_metrics({n: means.get(n) for n in names}, {f.name: f.stack for f in plan.flows})
        result.metrics = metrics if result.ok else {m.name: None for m in self.metrics}
        result.t0_ms = t0_ms
        result.details = {"window_s": o.duration, "warmup_s": o.warmup, "size": o.size, "mix": o.mix,
                          "groups": groups if result.ok else {}}
        return result

    def describe(self, rep: RepResult) -> str:
        if not rep.ok:
            return f"failed: {rep.error}"
        m = rep.metrics
        parts = [f"JFI {_fmt(m.get('jfi'), 3)}"]
        for t in TRANSPORTS:
            if m.get(f"{t}_mean_mbps") is not None:
                parts.append(f"{t.upper()} {_fmt(m.get(f'{t}_mean_mbps'))} Mbit/s per flow")
        if m.get("quic_tcp_ratio") is not None:
            parts.append(f"QUIC/TCP {_fmt(m.get('quic_tcp_ratio'), 3)}")
        return ", ".join(parts)

    def summarize(self, runs: list[RepResult], scenario: Scenario, options: FlowsOptions) -> Summary:
        """The base summary, plus ``extra``: each flow's stack, cc and transport, and per
        group (``transport`` and ``stack``) the mean and std over repetitions of the
        group's mean, the mean over repetitions of its std over flows, and of its JFI."""
        s = super().summarize(runs, scenario, options)
        ok = [r for r in runs if r.ok]
        flows = {f.name: FlowInfo(stack=f.stack, cc=f.cc, transport=transport_of(f.stack))
                 for f in (runs[0].flows if runs else [])}
        reps = [Groups.model_validate(r.details.get("groups") or {}) for r in ok]
        s.extra = dict(FlowsSummarized(flows=flows, transport=_over_reps([g.transport for g in reps]),
                                       stack=_over_reps([g.stack for g in reps])))
        return s

    def headline(self, summary: Summary) -> str:
        j, r = summary.metrics["jfi"], summary.metrics["quic_tcp_ratio"]
        if j.mean is None or j.std is None:
            return "JFI: no successful run"
        ratio = f"{r.mean:.3f} (std {r.std:.3f})" if r.mean is not None and r.std is not None else "- (one side absent)"
        return f"JFI: {j.mean:.3f} (std {j.std:.3f}); QUIC/TCP ratio: {ratio}"

    def table(self, summary: Summary) -> Table:
        """A row per flow (mean and std over repetitions), a row per transport (and per
        stack where a transport has several): the mean flow, its std over repetitions and
        the std over the group's flows; then the QUIC/TCP ratio and the JFIs."""
        cols = ["flow", "stack", "cc", "mean (Mbit/s)", "std over reps", "std over flows", "JFI"]
        e = FlowsSummarized.model_validate(summary.extra)
        rows, failed = [], []
        for name, v in summary.flows.items():
            i = e.flows.get(name)
            rows.append([name, v.stack, i.cc if i else "-", _fmt(v.mean_mbps), _fmt(v.std_mbps), "", ""])
            failed.append(v.mean_mbps is None)
        by_t: dict[str, set[str]] = {}
        for i in e.flows.values():
            by_t.setdefault(i.transport, set()).add(i.stack)
        shown = [(t.upper(), ",".join(sorted(by_t.get(t, ()))), g) for t, g in e.transport.items()]
        if any(len(v) > 1 for v in by_t.values()):
            shown += [(st, st, g) for st, g in e.stack.items()]
        for label, stacks, g in shown:
            rows.append([f"{label} ({_n_flows(g.flows)})", stacks, "-", _fmt(g.mean_mbps), _fmt(g.mean_mbps_std),
                         _fmt(g.std_mbps), _fmt(g.jfi, 3)])
            failed.append(g.mean_mbps is None)
        r = summary.metrics["quic_tcp_ratio"]
        rows.append(["QUIC/TCP ratio", "-", "-", _fmt(r.mean, 3), _fmt(r.std, 3), "", ""])
        failed.append(r.mean is None)
        j = summary.metrics["jfi"]
        rows.append([f"sum of all ({_n_flows(len(summary.flows))})", "-", "-", _fmt(summary.metrics["total_mbps"].mean),
                     _fmt(summary.metrics["total_mbps"].std), "", _fmt(j.mean, 3)])
        failed.append(j.mean is None)
        return Table(cols, rows, failed)

    def json_output(self, summary: Summary) -> JsonObject:
        e = FlowsSummarized.model_validate(summary.extra)
        flows = {f: {"stack": v.stack, "cc": (i := e.flows.get(f)) and i.cc, "transport": i and i.transport,
                     "mean_mbps": v.mean_mbps, "std_mbps": v.std_mbps, "runs": v.runs}
                 for f, v in summary.flows.items()}
        return {"flows": flows, "groups": e.model_dump(include={"transport", "stack"}),
                "metrics": {k: v.model_dump() for k, v in summary.metrics.items()},
                "jfi": summary.metrics["jfi"].model_dump(), "quic_tcp_ratio": summary.metrics["quic_tcp_ratio"].model_dump(),
                "host_config": summary.host_config, "reps": summary.reps, "failed": summary.failed,
                "options": summary.options, "scenario": summary.scenario, "seeds": summary.seeds}

    def run_title(self, scenario: Scenario, options: FlowsOptions, result: RepResult) -> str:
        link = scenario.link or f"leg 1 {scenario.bw[0]:g} Mbit/s"
        return f"flows: {options.mix}, {link}, {scenario.delay[0]:g} ms"

    def run_figure(self, run_dir: Path, run: Run, path: Path, title: str) -> Path:
        order = {f.name: f.name for f in run.flows}  # the legend in the plan's order
        return figures.flows_over_time(run_dir, run.t0_ms, path, window_s=run.metric("window_s"), title=title,
                                       warmup_s=run.metric("warmup_s"), labels=order)

    def sweep_figures(self, rows: Sequence[Run], out_dir: Path, stem: str, title: str,
                      xlabel: str) -> list[tuple[Path, str]]:
        """Bars per flow with JFI and the QUIC/TCP ratio above each group; the ratio
        against the swept value (or the mix, when groups of a campaign ran several)."""
        original, original_xlabel = rows, xlabel
        rows, xlabel = by_mix(rows, xlabel)
        names = _flow_names_of(rows)
        bars = figures.flow_bars(rows, names, out_dir / f"{stem}.png", title, xlabel, annotate="jfi",
                                 more={"quic_tcp_ratio": "QUIC/TCP"})
        ratio = figures.metric_vs_param(rows, "quic_tcp_ratio", "QUIC/TCP ratio (mean QUIC flow / mean TCP flow)",
                                        out_dir / f"{stem}-ratio.png", title, xlabel)
        out = [(bars, f"{title} (each flow's mean throughput over [warm-up, duration], std over repetitions; "
                      "JFI over all flows and the QUIC/TCP ratio above each group)"),
               (ratio, f"{title} (QUIC/TCP ratio: mean, std over repetitions)")]
        if len({r.value_num for r in original if r.value_num is not None}) > 1:
            lines = figures.metric_vs_param(per_stack_rows(original), "flow_mbps", "mean flow throughput (Mbit/s)",
                                            out_dir / f"{stem}-per-stack.png", title, original_xlabel)
            out.append((lines, f"{title} (per stack and congestion control: mean flow throughput against "
                               f"{original_xlabel}, std over repetitions and flows; a series per mix when several)"))
        return out

    def sweep_tables(self, rows: Sequence[Run]) -> list[tuple[str, Table]]:
        rows, _ = by_mix(rows, "")
        names = _flow_names_of(rows)
        cols = ["value", "series"] + [c for i, f in enumerate(names)
                                      for c in (f"{f} mean" + (" (Mbit/s)" if i == 0 else ""), f"{f} std")]
        cols += ["JFI", "n", "failed"]
        out, failed = [], []
        for d in figures.flow_table(rows, names, annotate="jfi"):
            cells = [d.at.value or "-", d.at.series]
            for f in names:
                cells += [_fmt(d.flows[f].mean), _fmt(d.flows[f].std)]
            cells += [_fmt(d.annotation, 3), str(d.n), str(d.failed)]
            out.append(cells)
            failed.append(d.n == 0)
        per_flow = Table(cols, out, failed)
        keys = ("quic_mean_mbps", "tcp_mean_mbps", "quic_tcp_ratio", "jfi_quic", "jfi_tcp", "jfi")
        summary = []
        for d in figures.flow_table(rows, [], more=keys):
            m = d.more
            summary.append([d.at.value or "-", d.at.series, _fmt(m["quic_mean_mbps"]), _fmt(m["tcp_mean_mbps"]),
                            _fmt(m["quic_tcp_ratio"], 3), _fmt(m["jfi_quic"], 3), _fmt(m["jfi_tcp"], 3),
                            _fmt(m["jfi"], 3), str(d.n), str(d.failed)])
        per_transport = Table(["value", "series", "mean QUIC flow (Mbit/s)", "mean TCP flow (Mbit/s)", "QUIC/TCP",
                               "JFI QUIC", "JFI TCP", "JFI", "n", "failed"], summary, [row[-2] == "0" for row in summary])
        return [("each flow's mean throughput (Mbit/s) over the window", per_flow),
                ("per transport: mean flow, QUIC/TCP ratio, JFI (means over repetitions)", per_transport)]


EXPERIMENT = Flows()
