"""What an experiment is: one object per module under ``experiments/``, found by the
registry (``experiments/__init__.py``).

An experiment has a name, a typed options model (pydantic; the CLI, sweeps and campaign
files are generated from it), the flow plan it needs, how it measures one repetition on a
testbed, its headline metrics, how it summarizes repetitions, and its figures and table:
per run (drawn from the run's directory and its stored record, at run time and in the
report alike) and per sweep (from the store's rows). Nothing outside ``experiments/``
names a particular experiment.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    model_validator,
)
from pydantic_core import to_jsonable_python

from ..analysis import figures
from ..analysis.diagnosis import Diagnosis
from ..analysis.metrics import mean_std
from ..analysis.run_events import RunFacts
from ..analysis.stand_in import stack_label
from ..analysis.stored_run import StoredFlow, StoredRun
from ..dcemu.mode import DEFAULT_SPIN_US, MAX_SPIN_US, EmulatorMode, TunOffload
from ..dcemu.mode import HELP as MODE_HELP
from ..dcemu.sim_models import MODELS, modelled_text
from ..dcemu.sim_models import check as check_stand_ins
from ..dcemu.sim_models import parse as parse_stand_ins
from ..endpoints import STACKS, get_stack
from ..endpoints.base import TransferResult
from ..files import JsonObject
from ..flowplan import IPV4_TCP_HEADERS, IPV4_UDP_HEADERS, MAX_MTU, MIN_QUIC_DATAGRAM, MIN_TCP_MSS, TCP_MSS, FlowPlan
from ..scenario import Scenario
from ..testbed import Bed
from ..testbed.inspection import Inspection
from ..units import parse_size


def _stack_name(name: str) -> str:
    get_stack(name)  # raises naming the valid stacks
    return name


def _size(v: object, info: ValidationInfo) -> int:
    """A size, its errors naming the field it is given for (``short``, not ``size``)."""
    return parse_size(v if isinstance(v, (int, str)) else str(v), info.field_name or "size")


def _stand_ins(v: dict[str, str]) -> dict[str, str]:
    check_stand_ins(v)
    return v


Size = Annotated[int, BeforeValidator(_size)]
# {"ngtcp2": "aioquic"}: the model a stack (or "stack:cc") without one of its own runs on in
# the simulation; "ngtcp2=aioquic,quinn=aioquic" on the command line.
StandIns = Annotated[dict[str, str], BeforeValidator(parse_stand_ins), AfterValidator(_stand_ins)]
STAND_IN_HELP = (f"With --backend sim only: run a stack that has no model of its own on the model named, "
                 f"STACK[:CC]=MODEL[,...], e.g. ngtcp2=aioquic; its results are labelled \"ngtcp2 (aioquic model)\". "
                 f"Modelled: {modelled_text()}; models: {', '.join(MODELS)}.")
StackName = Annotated[str, AfterValidator(_stack_name), Field(json_schema_extra={"choices": list(STACKS)})]


def in_range(lo: int, hi: int, hi_text: str = "") -> AfterValidator:
    """A field check ``lo <= v <= hi`` whose message names the range (``hi_text`` says what
    bounds it when the real bound is checked later)."""
    def check(v: int | None) -> int | None:
        if v is not None and not lo <= v <= hi:
            raise ValueError(f"must be {lo} to {hi_text or hi} (got {v})")
        return v
    return AfterValidator(check)


class Options(BaseModel):
    """Base of every experiment's options: typed, validated, unknown names refused. Field
    names are the CLI option names (``udp_buffer`` is ``--udp-buffer``); a field's
    ``json_schema_extra`` may give ``choices``, ``show`` (the default as shown), ``metavar``
    (the value's form) and ``flag`` (a boolean switch)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Inspection on request, for every experiment (testbed/inspection.py); never swept.
    pcap: StrictBool = Field(False, description="Keep dcemu's captures at both ends (client-end.pcap, server-end.pcap) "
                             "in the run directory.", json_schema_extra={"sweep": False})
    keylog: StrictBool = Field(False, description="Keep every end's TLS secrets (<end>/tls-keys.log, NSS key log format) "
                               "so Wireshark decrypts the captures.", json_schema_extra={"sweep": False})
    qlog: StrictBool = Field(False, description="Write qlog files (QUIC stacks that have it) into the run directory.",
                             json_schema_extra={"sweep": False})
    sockets: StrictBool = Field(False, description=(
        "Sample every TCP and MPTCP socket of both ends with ss every 100 ms into sockets.jsonl (window, RTT, "
        "retransmissions, buffers); costs the endpoints some CPU."), json_schema_extra={"sweep": False})

    # How dcemu runs, for every experiment (dcemu/mode.py); never swept (a
    # campaign's groups may still set them differently, to compare).
    busy_poll: StrictBool = Field(False, description=MODE_HELP["busy_poll"], json_schema_extra={"sweep": False})
    realtime: StrictBool = Field(False, description=MODE_HELP["realtime"], json_schema_extra={"sweep": False})
    spin_us: Annotated[int, in_range(0, MAX_SPIN_US)] = Field(DEFAULT_SPIN_US, description=MODE_HELP["spin_us"],
                                                              json_schema_extra={"sweep": False})
    idle_halt: StrictBool = Field(False, description=MODE_HELP["idle_halt"], json_schema_extra={"sweep": False})
    tun_offload: TunOffload = Field("all", description=MODE_HELP["tun_offload"], json_schema_extra={"sweep": False})

    def inspection(self) -> Inspection:
        return Inspection(pcap=self.pcap, keylog=self.keylog, qlog=self.qlog, sockets=self.sockets)

    def emulator_mode(self) -> EmulatorMode:
        return EmulatorMode(busy_poll=self.busy_poll, realtime=self.realtime, spin_us=self.spin_us,
                            idle_halt=self.idle_halt, tun_offload=self.tun_offload)

    def emulator_args(self) -> tuple[str, ...]:
        """dcemu run options these options ask for."""
        return self.emulator_mode().args()


def sweepable_fields(model: type[Options]) -> set[str]:
    """Option fields a sweep may change (all but those marked ``{"sweep": False}``)."""
    out = set()
    for name, f in model.model_fields.items():
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        if extra.get("sweep", True):
            out.add(name)
    return out


_MSS_RANGE = f"the scenario's MTU - {IPV4_TCP_HEADERS}"
_DATAGRAM_RANGE = f"the scenario's MTU - {IPV4_UDP_HEADERS}"


class PacketSizeOptions(Options):
    """The packet sizes of a run's stacks: the TCP MSS clamp and the QUIC max datagram
    size (upper bounds from the scenario's MTU, checked by ``FlowPlan.with_packet_sizes``
    when the runner builds the plan)."""

    tcp_mss: Annotated[int, in_range(MIN_TCP_MSS, MAX_MTU - IPV4_TCP_HEADERS, _MSS_RANGE)] = Field(
        TCP_MSS, description=f"TCP MSS clamped on SYNs in both namespaces, bytes ({MIN_TCP_MSS} to {_MSS_RANGE}) "
                             f"[default: {TCP_MSS}, or the MTU - {IPV4_TCP_HEADERS} if that is less].")
    quic_datagram: Annotated[int | None, in_range(MIN_QUIC_DATAGRAM, MAX_MTU - IPV4_UDP_HEADERS, _DATAGRAM_RANGE)] = Field(
        None, description=f"Max UDP payload the QUIC stacks send, bytes ({MIN_QUIC_DATAGRAM} to {_DATAGRAM_RANGE}) "
                          f"[default: each stack's own: aioquic 1252, ngtcp2 1200 raised to about 1450 by its path MTU "
                          f"discovery; aioquic-2020 sends 1280 and takes no other].")

    def packet_sizes(self) -> dict[str, int | None]:
        return {"tcp_mss": self.tcp_mss, "quic_datagram": self.quic_datagram}


def plan_with_packet_sizes(plan: FlowPlan, scenario: Scenario, options: Options) -> FlowPlan:
    """``plan`` with the packet sizes of ``options`` when it has them (PlanError naming
    the option when the scenario's MTU cannot carry them); else unchanged."""
    if isinstance(options, PacketSizeOptions):
        mss = options.tcp_mss
        if "tcp_mss" not in options.model_fields_set:  # the study's clamp, as far as the MTU carries it
            mss = min(mss, scenario.mtu - IPV4_TCP_HEADERS)
        return plan.with_packet_sizes(scenario, mss, options.quic_datagram)
    return plan


class StackOptions(PacketSizeOptions):
    """Options every experiment with real stacks shares."""

    stack: StackName = Field("aioquic", description="Transport stack.")
    cc: str | None = Field(None, description="Congestion control [default: the stack's first: reno for aioquic, cubic otherwise].")
    udp_buffer: Literal["default", "large"] = Field(
        "default", description="QUIC host configuration: net.core.rmem_default 212992 (default) or 32 MiB (large).")
    ecn: bool = Field(False, description=(
        "Kernel TCP (tcp, mptcp) asks for ECN: net.ipv4.tcp_ecn = 1 in both namespaces, so an AQM (--aqm) marks "
        "its packets instead of dropping them; in the simulation, the modelled TCP. QUIC stacks keep their own "
        "ECN behaviour."))
    backend: Literal["emu", "sim"] = Field(
        "emu", description="emu: real stacks through dcemu in real time; sim: modelled endpoints in virtual time "
                           "(`dcemu sim`, no root; experiments that declare it).")
    stand_in: StandIns = Field(default_factory=dict, description=STAND_IN_HELP,
                               json_schema_extra={"sweep": False, "show": "none", "metavar": "STACK[:CC]=MODEL[,...]"})

    @model_validator(mode="after")
    def _stand_in_is_simulated(self) -> "StackOptions":
        if self.stand_in and self.backend != "sim":
            raise ValueError("stand_in: only with --backend sim (an emulated run is the real stack; a stand-in is "
                             "another stack's model)")
        return self


@dataclass(frozen=True)
class RunChoices:
    """What the runner takes from any experiment's options to set a repetition up: the
    backend, the hosts' UDP buffers and the simulation's stand-ins (the defaults for
    options without them, e.g. those without real stacks)."""

    backend: Literal["emu", "sim"] = "emu"
    udp_buffer: Literal["default", "large"] = "default"
    stand_in: tuple[tuple[str, str], ...] = ()
    ecn: bool = False

    @classmethod
    def of(cls, options: Options) -> RunChoices:
        if isinstance(options, StackOptions):
            return cls(options.backend, options.udp_buffer, tuple(sorted(options.stand_in.items())), options.ecn)
        return cls()

    @property
    def stand_ins(self) -> dict[str, str]:
        return dict(self.stand_in)


@dataclass(frozen=True)
class Metric:
    """A headline metric of an experiment: recorded per repetition, summarized as mean and
    standard deviation, stored, plotted against swept parameters."""

    name: str
    label: str  # what it is, e.g. "goodput"
    unit: str = ""  # e.g. "Mbit/s"
    digits: int = 2

    @property
    def axis(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def column(self, what: str = "mean") -> str:
        return f"{self.label} {what}" + (f" ({self.unit})" if self.unit else "")


class FlowResult(BaseModel):
    """One flow of a repetition: what its client measured, and its throughput at the
    bearer where the experiment measures one. The same record is the store's flow row
    (``campaign/store.py`` FLOW_COLUMNS): its derived values are computed here, once."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    stack: str
    cc: str
    bearer: str
    port: int
    transfer: JsonObject | None = None  # TransferResult.to_dict()
    mean_mbps: float | None = None  # at the bearer, over the measured window
    goodput_mbps: float | None = None  # bytes / (last byte - request), from the client
    bytes: int | None = None  # received by the client
    completion_s: float | None = None  # request to last byte, when the transfer is complete
    ok: bool | None = None  # the client's verdict (None: no transfer)

    @classmethod
    def of(cls, plan: FlowPlan, name: str, transfer: TransferResult | None, mean_mbps: float | None = None) -> "FlowResult":
        f = plan.flow(name)
        if transfer is None:
            return cls(name=name, stack=f.stack, cc=f.cc or "", bearer=f.bearer, port=f.port or 0, mean_mbps=mean_mbps)
        return cls(name=name, stack=f.stack, cc=f.cc or "", bearer=f.bearer, port=f.port or 0,
                   transfer=transfer.to_dict(), mean_mbps=mean_mbps, goodput_mbps=transfer.goodput_mbps,
                   bytes=transfer.bytes, completion_s=transfer.completion_s, ok=transfer.ok)  # fmt: skip

    def typed(self) -> StoredFlow:
        """As the figures read a flow (``stored``), with the request's wall time."""
        d = self.stored()
        del d["transfer"]
        return StoredFlow(**d, request_wall=(self.transfer or {}).get("request_wall"))

    def stored(self) -> JsonObject:
        """The record with its derived values, from ``transfer`` where a record written
        before they were kept lacks them (a result.json read back)."""
        if self.ok is None and self.transfer:
            t = _Totals.model_validate(self.transfer)
            done = t.last_byte_s - t.request_s if t.ok and t.last_byte_s is not None else None
            return self.model_copy(update={"ok": t.ok, "bytes": t.bytes, "completion_s": done}).model_dump()
        return self.model_dump()


class _Totals(BaseModel):
    """What an old record's ``transfer`` (``TransferResult.to_dict()``) gives of its totals."""

    ok: bool | None = None
    bytes: int | None = None
    request_s: float = 0.0
    last_byte_s: float | None = None


class RepResult(BaseModel):
    """One repetition, as written to ``rep-NN/result.json`` and stored by campaigns."""

    experiment: str
    rep: int = 1
    seed: int
    ok: bool
    error: str | None = None
    metrics: dict[str, float | None] = {}
    flows: list[FlowResult] = []
    stack: str
    cc: str
    host_config: str
    t0_ms: float | None = None  # dcemu time of the measurement's start
    details: dict[str, Any] = {}  # experiment-specific (PDCP summary, window, ...)
    environment: JsonObject = {}  # testbed/environment.py, as recorded

    def all_metrics(self) -> JsonObject:
        """The metrics and details as the store keeps them (one JSON object: the records
        among the details as their fields)."""
        out: JsonObject = to_jsonable_python({**self.details, **self.metrics, "t0_ms": self.t0_ms})
        return out

    def stored(self, scenario: Scenario, options: OptionsT) -> StoredRun[OptionsT]:
        """The repetition as the figures read a run (as the store gives one back, with the
        request's wall time the store does not keep)."""
        choices = RunChoices.of(options)
        flows = tuple(f.typed() for f in self.flows)
        return StoredRun(experiment=self.experiment, scenario=scenario, options=options, ok=self.ok,
                         rep=self.rep, seed=self.seed, error=self.error, stack=self.stack, cc=self.cc,
                         host_config=self.host_config, metrics=self.all_metrics(), flows=flows,
                         backend=choices.backend, stand_in=choices.stand_ins)


class MetricSummary(BaseModel):
    mean: float | None
    std: float | None
    runs: list[float | None]


class FlowSummary(BaseModel):
    mean_mbps: float | None
    std_mbps: float | None
    stack: str
    runs: list[float | None]


class Summary(BaseModel):
    """Repetitions summarized, as written to ``results.json``."""

    experiment: str
    metrics: dict[str, MetricSummary]
    flows: dict[str, FlowSummary]
    stack: str | None
    cc: str | None
    host_config: str | None
    reps: int
    failed: int
    seeds: list[int]
    options: JsonObject  # the options' and scenario's JSON, as results.json keeps them
    scenario: JsonObject
    extra: dict[str, Any] = {}  # experiment-specific (e.g. per-size tables)


@dataclass(frozen=True)
class Table:
    """A table for the report: header cells and rows of text; ``failed`` marks rows with
    no successful run; the first ``text_columns`` columns name the row (set left, as
    text) and the rest hold values."""

    columns: list[str]
    rows: list[list[str]]
    failed: list[bool]
    text_columns: int = 2


OptionsT = TypeVar("OptionsT", bound=Options)


class Experiment(ABC, Generic[OptionsT]):
    """Subclass as ``Experiment[MyOptions]``, set the class attributes (``options_model =
    MyOptions``), implement ``plan`` and ``measure``, and export one instance as
    ``EXPERIMENT`` from a module in ``dclab/experiments/``. Every method that takes the
    options gets ``MyOptions``, so none needs a cast."""

    name: ClassVar[str]
    help: ClassVar[str]  # one paragraph for --help
    options_model: type[OptionsT]  # a class attribute (a ClassVar cannot hold a type variable)
    metrics: ClassVar[tuple[Metric, ...]]  # metrics[0] is the primary one
    run_figure_name: ClassVar[str] = "run.png"  # the per-run figure in each rep directory
    run_figure_kind: ClassVar[str] = "run"  # what the per-run figure shows, for captions
    # `dclab run` prints why a run stalled (``run_diagnosis``): experiments drawn with the
    # leg-usage figure, whose one transfer the diagnosis times
    diagnoses: ClassVar[bool] = False
    default: ClassVar[bool] = False  # the experiment `make demo` and `scenario show` use
    # Repetitions share one testbed (experiments/reps.py, Session): ``measure`` must then
    # leave the testbed running (no ``bed.finish()``) and put what its figure needs in the
    # repetition's directory.
    one_testbed: ClassVar[bool] = False
    # ``measure`` also works on a simulated bed (testbed/simbed.py): only run_clients,
    # finish, start_wall and state, for flows of one object on one connection.
    simulates: ClassVar[bool] = False

    # -- what a repetition needs and does -------------------------------------------------

    def options(self, **values: Any) -> OptionsT:
        """Validated options (pydantic ValidationError names the field)."""
        return self.options_model.model_validate(values)

    @abstractmethod
    def plan(self, scenario: Scenario, options: OptionsT) -> FlowPlan:
        """The bearers and flows of one repetition (raises PlanError or StackError)."""

    def scenario(self, scenario: Scenario, options: OptionsT) -> Scenario:
        """The scenario a repetition runs (default: unchanged)."""
        return scenario

    def unused(self, options: OptionsT) -> dict[str, str]:
        """The options ``options`` make this experiment ignore, each with why. Given on the
        command line they are refused: they would change nothing but the run's key (a
        campaign file's experiment table sets them for every group, so it may)."""
        return {}

    def host_transports(self, plan: FlowPlan) -> set[str]:
        return plan.transports()

    @abstractmethod
    def measure(self, bed: Bed, scenario: Scenario, plan: FlowPlan, options: OptionsT, result: RepResult) -> RepResult:
        """Runs the clients on a bed whose servers are up (the real-time testbed, or with
        ``simulates`` the simulated one), calls ``bed.finish()`` for dcemu's records, and
        returns ``result`` completed (ok, metrics, flows, t0_ms)."""

    def estimate_s(self, scenario: Scenario, options: OptionsT, capacity_mbps: float) -> float:
        """Seconds one repetition measures (setup excluded), for campaign estimates."""
        return 10.0

    def longest_s(self, scenario: Scenario, plan: FlowPlan, options: OptionsT) -> float | None:
        """The longest the clients of one repetition can run, s (None: not known). An
        outage or secondary node event later than this (and the start-up) never happens,
        and is refused before the run."""
        return None

    def timeout_s(self, plan: FlowPlan, capacity_mbps: float) -> float:
        """How long the clients may take: ten times the transfer at ``capacity_mbps`` (at
        least 2 Mbit/s) plus a minute."""
        nbytes = sum(f.workload.total_bytes for f in plan.flows)
        return nbytes * 8 / (max(capacity_mbps, 2.0) * 1e6) * 10 + 60

    # -- repetitions ---------------------------------------------------------------------

    def describe(self, rep: RepResult) -> str:
        """One progress line for a finished repetition."""
        if not rep.ok:
            return f"failed: {rep.error}"
        m = self.metrics[0]
        v = rep.metrics.get(m.name)
        return f"{m.name} {v:.{m.digits}f}" if v is not None else f"{m.name} -"

    def summarize(self, runs: list[RepResult], scenario: Scenario, options: OptionsT) -> Summary:
        ok = [r for r in runs if r.ok]
        metrics = {}
        for m in self.metrics:
            ms = mean_std([r.metrics.get(m.name) for r in ok])
            metrics[m.name] = MetricSummary(mean=ms.mean, std=ms.std, runs=[r.metrics.get(m.name) for r in runs])
        flows = {}
        for f in runs[0].flows if runs else []:
            vals = [_flow_value(r, f.name) for r in runs]
            ms = mean_std([_flow_value(r, f.name) for r in ok])
            flows[f.name] = FlowSummary(mean_mbps=ms.mean, std_mbps=ms.std, stack=f.stack, runs=vals)
        first = runs[0] if runs else None
        return Summary(experiment=self.name, metrics=metrics, flows=flows, stack=first.stack if first else None,
                       cc=first.cc if first else None, host_config=first.host_config if first else None,
                       reps=len(runs), failed=len(runs) - len(ok), seeds=[r.seed for r in runs],
                       options=options.model_dump(mode="json"), scenario=scenario.model_dump(mode="json"))

    def json_output(self, summary: Summary) -> JsonObject:
        """What ``dclab run NAME --json`` prints (``out`` is added by the CLI)."""
        return summary.model_dump(mode="json")

    def table(self, summary: Summary) -> Table:
        """The table ``dclab run`` prints."""
        cols = ["stack", "cc", "host config"] + [c for m in self.metrics for c in (m.column(), "std")] + ["runs"]
        row = [stack_label(summary.stack or "-", summary.options.get("stand_in")), summary.cc or "-",
               summary.host_config or "-"]
        for m in self.metrics:
            ms = summary.metrics[m.name]
            row += [_fmt(ms.mean, m.digits), _fmt(ms.std, m.digits)]
        row.append(f"{summary.reps - summary.failed}/{summary.reps}")
        return Table(cols, [row], [summary.failed == summary.reps], text_columns=3)

    def headline(self, summary: Summary) -> str:
        """The line ``dclab run`` ends with."""
        m = self.metrics[0]
        ms = summary.metrics[m.name]
        return f"{m.name}: {_fmt(ms.mean, m.digits)}" if ms.mean is not None else f"{m.name}: no successful run"

    # -- figures and tables, from runs (RepResult.stored, or the store's) --------------------

    def run_figure(self, run_dir: Path, run: StoredRun[OptionsT], path: Path, title: str) -> Path:
        """The time-series figure of one run (default: per-leg link utilization over the
        whole transfer with the events that explain its shape and its first seconds,
        docs/run-figure.md; over EN-DC or a flow-controlled split, the DC bearer's legs,
        queues and reports over the whole run)."""
        capacities = figures.capacities_of(run.scenario)
        if figures.shows_split(run.scenario):
            return figures.split_usage(run_dir, run.t0_ms, capacities, path, title)
        return figures.link_usage(run_dir, run.t0_ms, capacities, path, title=title, facts=RunFacts.of(run))

    def run_diagnosis(self, run_dir: Path, run: StoredRun[OptionsT]) -> Diagnosis | None:
        """Why one run's transfer stalled, when that cost it more than 5 % (``diagnosis.py``);
        None for an experiment whose figure is not the leg-usage one (``diagnoses``) and for
        a split drawn as a split bearer's."""
        if not self.diagnoses or figures.shows_split(run.scenario):
            return None
        return figures.run_diagnosis(run_dir, RunFacts.of(run), figures.capacities_of(run.scenario))

    def run_title(self, scenario: Scenario, options: OptionsT, result: RepResult) -> str:
        stack = stack_label(result.stack, RunChoices.of(options).stand_ins)
        return f"{self.name}: {stack} {result.cc}, {scenario.split_text()}"

    def sweep_figure(self, rows: Sequence[StoredRun[OptionsT]], path: Path, title: str, xlabel: str) -> Path:
        """Per sweep (default): the primary metric against the swept value, one line per series."""
        m = self.metrics[0]
        return figures.metric_vs_param(rows, m.name, m.axis, path, title, xlabel)

    def sweep_figures(self, rows: Sequence[StoredRun[OptionsT]], out_dir: Path, stem: str, title: str,
                      xlabel: str) -> list[tuple[Path, str]]:
        """Every figure of a sweep with its caption, files named ``out_dir/stem*.png``
        (default: ``sweep_figure`` alone). Each row is a stored run with ``run_path``: its
        raw data's directory on this machine (``run_path``), None where it is not here."""
        m = self.metrics[0]
        path = self.sweep_figure(rows, out_dir / f"{stem}.png", title, xlabel)
        return [(path, f"{title} ({m.label}: mean, std over repetitions)")]

    def sweep_tables(self, rows: Sequence[StoredRun[OptionsT]]) -> list[tuple[str, Table]]:
        """Every table of a sweep with its caption (default: ``sweep_table`` alone)."""
        return [("", self.sweep_table(rows))]

    def sweep_table(self, rows: Sequence[StoredRun[OptionsT]]) -> Table:
        m = self.metrics[0]
        out, failed = [], []
        for d in figures.metric_table(rows, m.name):
            out.append([d.at.value or "-", d.at.series, _fmt(d.mean, m.digits), _fmt(d.std, m.digits), str(d.n),
                        str(d.failed)])
            failed.append(d.n == 0)
        return Table(["value", "series", m.column(), "std", "n", "failed"], out, failed)


def stand_in_output(summary: Summary) -> JsonObject:
    """What ``--json`` adds for a run on a stand-in model: the stand-ins and the stack as
    shown; nothing for any other run, whose output stays as it was."""
    stand_in = summary.options.get("stand_in")
    if not stand_in:
        return {}
    return {"stand_in": stand_in, "stack_label": stack_label(summary.stack or "", stand_in)}


def _flow_value(r: RepResult, name: str) -> float | None:
    """A flow's throughput as a stored run gives it (``StoredFlow.mbps``)."""
    f = next((f for f in r.flows if f.name == name), None)
    return f.typed().mbps if f is not None else None


def _fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"
