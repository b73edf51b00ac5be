"""The experiment scenario: the links and PDCP of one run, with the swept parameters of
docs/testbed-reference.md and its defaults, validated. Which bearers and flows cross the
links is the flow plan's business (``flowplan.py``); ``dcemu/config.py`` renders
both into dcemu's scenario file.

Per-leg values are lists with one entry per downlink leg (two by default, one to eight).
A scenario can start from a TOML file with the same field names and be overridden by CLI
options.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

import tomli_w
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    InstanceOf,
    PlainSerializer,
    StrictBool,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.fields import FieldInfo

from . import lte, nr, radio
from .batch import is_exact, shares
from .batch import text as ratio_text
from .errors import InputError
from .files import FileRefused, check_input, clip, read_toml

# Every bounded field's range, in one place: the model's constraints and the messages
# both read it. Each sits within dcemu's bound for the field (`dcemu limits`, the
# authority; tests/test_limits.py), so a value taken here is never refused by dcemu.
RANGES: dict[str, tuple[float, float]] = {
    "batch": (1, 100_000), "split": (0, 100), "bw": (0.001, 100_000), "delay": (0, 10_000),
    "delay_cov": (0, 1), "loss": (0, 100), "t_reordering": (0, 60_000), "queue_packets": (1, 1_000_000),
    "delay_limit": (1, 1_000_000), "pdcp_processing": (0, 1000), "header_bytes": (0, 64), "mtu": (1280, 9000), "stats_interval_ms": (1, 10_000),
    "outage_at_s": (0, 86_400), "outage_duration_s": (0.001, 3600), "outage_leg": (1, 8), "x2_delay": (0, 1000),
    "report_period": (1, 1000), "target_delay": (0, 10_000), "sn_at_s": (0, 86_400), "sn_interruption_ms": (0, 60_000),
    "hold_bytes": (9000, 1_000_000_000), "discard_ms": (1, 1500), "fallback_ms": (0, 1000),
    "aqm_target_ms": (0.1, 10_000), "aqm_interval_ms": (0.1, 10_000),
}  # fmt: skip
for _leg in ("bw", "delay", "loss", "queue_packets"):  # the uplink's fields are bounded as the legs'
    RANGES[f"uplink_{_leg}"] = RANGES[_leg]


def bounded(name: str, description: str | None = None) -> FieldInfo:
    """The pydantic Field of ``name``'s range in RANGES."""
    lo, hi = RANGES[name]
    field: FieldInfo = Field(ge=lo, le=hi, description=description)
    return field


# dcemu takes 1 kbit/s to 1000 Gbit/s (`dcemu limits`: direction.rate_bps); tests/test_limits.py
PosMbps = Annotated[float, bounded("bw")]
DelayMs = Annotated[float, bounded("delay")]
LossPct = Annotated[float, bounded("loss")]
Share = Annotated[float, bounded("split")]


MAX_SEED = 2**63 - 1  # dcemu's seed is a u64; repetition N of a run adds N - 1


class Outage(BaseModel):
    """One leg down (every packet lost, both ways) from ``at_s`` seconds after dcemu starts
    forwarding, for ``duration_s`` seconds, and back; "LEG:AT_S:DURATION_S" as text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    leg: Annotated[int, bounded("outage_leg")]
    at_s: Annotated[float, bounded("outage_at_s")]
    duration_s: Annotated[float, bounded("outage_duration_s")]

    def __str__(self) -> str:
        return f"{self.leg}:{self.at_s:g}:{self.duration_s:g}"


def _outage(v: object) -> object:
    """'2:6:2' into Outage's fields (a dict or an Outage passes through)."""
    if not isinstance(v, str):
        return v
    parts = v.split(":")
    try:
        leg, at, dur = parts
        return {"leg": int(leg), "at_s": float(at), "duration_s": float(dur)}
    except ValueError:
        raise ValueError(f"expected LEG:AT_S:DURATION_S, e.g. 2:6:2 (got {clip(v)})") from None


class SnEvent(BaseModel):
    """A secondary node event on leg 2 (EN-DC's NR leg), ``at_s`` seconds after dcemu
    starts forwarding: a release (everything on leg 1), an addition (leg 2 again) or a
    change (leg 2 carries nothing for ``interruption_ms``, then serves as a new
    secondary); what the secondary held is forwarded or, with ``buffered`` "lose", lost.
    As text: "release@AT_S", "add@AT_S", "change@AT_S[:INTERRUPTION_MS]", each with an
    optional ":lose" (docs/endc.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    event: Literal["release", "add", "change"]
    at_s: Annotated[float, bounded("sn_at_s")]
    interruption_ms: Annotated[float, bounded("sn_interruption_ms")] = 50.0
    buffered: Literal["forward", "lose"] = "forward"

    def __str__(self) -> str:
        text = f"{self.event}@{self.at_s:g}"
        if self.event == "change":
            text += f":{self.interruption_ms:g}"
        return text + (":lose" if self.buffered == "lose" else "")


def _sn_event(v: object) -> object:
    """'change@6:80:lose' into SnEvent's fields (a dict or an SnEvent passes through)."""
    if not isinstance(v, str):
        return v
    event, _, rest = v.strip().partition("@")
    parts = rest.split(":") if rest else []
    out: dict[str, object] = {"event": event}
    if parts and parts[-1] in ("lose", "forward"):
        out["buffered"] = parts.pop()
    try:
        if event not in ("release", "add", "change") or not 1 <= len(parts) <= (2 if event == "change" else 1):
            raise ValueError
        out["at_s"] = float(parts[0])
        if len(parts) == 2:
            out["interruption_ms"] = float(parts[1])
    except ValueError:
        raise ValueError("expected release@AT_S, add@AT_S or change@AT_S[:INTERRUPTION_MS], each with an optional "
                         f":lose, e.g. change@6:80 (got {clip(v)})") from None
    return out


def _sn_events(v: object) -> object:
    """A comma-separated text into its events."""
    if isinstance(v, str):
        return [_sn_event(x) for x in v.split(",") if x.strip()]
    if isinstance(v, list):
        return [_sn_event(x) for x in v]
    return v


AqmKind = Literal["tail-drop", "codel", "pie", "fq-codel"]
# The queue delay each AQM aims at unless --aqm-target says otherwise: its RFC's, as the
# core's defaults are (emu/src/qdisc/).
AQM_TARGET_MS: dict[AqmKind, float] = {"codel": 5.0, "fq-codel": 5.0, "pie": 15.0}


def _aqm(v: object) -> object:
    """``--aqm``'s comma-separated text into its list (one per leg, or one for every leg)."""
    if isinstance(v, str):
        return [x.strip() for x in v.split(",")]
    return v


def _link(v: object) -> object:
    """``--link``'s text into its cells, once (a parsed link passes through)."""
    if isinstance(v, str):
        try:
            return radio.parse_link(v)
        except ValueError as e:
            raise ValueError(str(e).removeprefix("--link: ")) from None
    return v


def _link_kind(v: object) -> str | None:
    """The kind of a link given as text or parsed, before validation (None: no link)."""
    if isinstance(v, radio.RadioLink):
        return v.kind
    return str(v).partition(":")[0] if v else None


# The per-leg lists besides the rates: one value per downlink leg.
PER_LEG = ("split", "delay", "loss")


def per_leg_mismatch(name: str, n: int, link: radio.RadioLink | None, got: int) -> str:
    """Why a per-leg list of ``got`` values does not fit ``n`` legs."""
    given_by = f"--link {link} gives {n}" if link is not None else "as --bw gives"
    return f"{name}: needs one value per leg ({n}, {given_by}), got {got}"


# The validation context of what is read back from a store (campaign/typed_runs.py): the
# checks of this machine (a trace file exists, what the kernel offers) are skipped, since
# the run ran elsewhere or before.
STORED = "stored"


class ScenarioError(InputError):
    """An invalid scenario value; the message names the option and the allowed range."""


class Scenario(BaseModel):
    """What one run emulates. Defaults: the reference testbed."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    batch: Annotated[int, bounded("batch", description="PDCP split batch size, packets")] = 100
    split: Annotated[list[Share], Field(min_length=1, max_length=8, description="share per leg (percent or any ratio)")] = [50.0, 50.0]
    bw: Annotated[list[PosMbps], Field(min_length=1, max_length=8, description="downlink rate per leg, Mbit/s")] = [20.0, 20.0]
    delay: Annotated[list[DelayMs], Field(min_length=1, max_length=8, description="downlink delay per leg, ms")] = [10.0, 10.0]
    delay_cov: Annotated[float, bounded("delay_cov", description="delay std / mean (normal jitter)")] = 0.1
    jitter_reorders: Annotated[StrictBool | None, Field(description=(
        "jitter may reorder packets (netem); False: order-preserving jitter, on every direction; None: "
        "the link's own (netem's on the legs, order-preserving over a cell, which delivers in order)"))] = None
    loss: Annotated[list[LossPct], Field(min_length=1, max_length=8, description="random loss per downlink leg, percent")] = [0.0, 0.0]
    loss_at: Annotated[Literal["after-rate", "before-rate"], Field(
        description="where loss judges packets: after the rate stage (a lost packet used its transmission "
                    "time) or before it (it never queues)")] = "after-rate"
    duplicate: StrictBool = False
    reordering: StrictBool = True
    t_reordering: Annotated[float | None, bounded("t_reordering", description="ms; None is infinity")] = 200.0
    trace: Path | None = None
    traces: Annotated[list[Path] | None, Field(min_length=1, max_length=8, description=(
        "a bandwidth trace per downlink leg (not with trace)"))] = None
    outage: Annotated[Outage | None, BeforeValidator(_outage), Field(description=(
        "LEG:AT_S:DURATION_S: that leg loses every packet both ways for the duration"))] = None
    uplink_bw: PosMbps = 20.0
    uplink_delay: DelayMs = 10.0
    uplink_loss: Annotated[LossPct, Field(description="random loss on the uplink (leg 1), percent")] = 0.0
    queue_packets: Annotated[int, bounded("queue_packets")] = 100
    uplink_queue_packets: Annotated[int, bounded("uplink_queue_packets")] = 10_000
    delay_limit: Annotated[int, bounded("delay_limit")] = 10_000
    pdcp_processing: Annotated[float, bounded("pdcp_processing", description=(
        "ms each PDCP entity holds every packet, each way (the study's proxies: about 1)"))] = 0.0
    sn_bits: Annotated[Literal[12, 16, 18] | None, Field(description=(
        "PDCP SN length in bits; None: the link's own, 18 over an NR PDCP (nr:, endc:; TS 38.323 has 12 and 18, "
        "and 16 bits desynchronise a split when one leg holds a PDU for more than 32,768 of the other's), else "
        "16 (the DC study's)"))] = None
    header_bytes: Annotated[int, bounded("header_bytes")] = 2
    mtu: Annotated[int, bounded("mtu")] = 1500
    stats_interval_ms: Annotated[float, bounded("stats_interval_ms")] = 10.0
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 1
    link: Annotated[InstanceOf[radio.RadioLink] | None, BeforeValidator(_link),
                    PlainSerializer(lambda v: None if v is None else v.text, return_type=str | None),
                    Field(description=("cells instead of the legs: lte:LEVEL, nr:LEVEL or endc:LTE_LEVEL,NR_LEVEL "
                                       "(dclab/radio.py)"))] = None
    x2_delay: Annotated[float | None, bounded("x2_delay", description=(
        "ms one way over the X2/Xn hop from the master's PDCP (leg 1) to every other leg, for split and "
        "duplicated packets; None: no hop"))] = None
    split_policy: Annotated[Literal["static", "ddds", "delay-aware", "delay-target"], Field(description=(
        "how PDCP places packets on the legs: static (batch and split), ddds (as much as each secondary leg's "
        "flow-control reports ask for, TS 38.425, the rest on leg 1), delay-aware (each packet on the leg of "
        "the earliest expected delivery) or delay-target (the earliest leg whose queue stays within "
        "target_delay, leg 1's too; what fits none waits unnumbered in PDCP); docs/endc.md"))] = "static"
    report_period: Annotated[float, bounded("report_period", description=(
        "ms between a secondary leg's flow-control reports (ddds, delay-aware, delay-target)"))] = 10.0
    target_delay: Annotated[float, bounded("target_delay", description=(
        "ms of queue a secondary leg asks for beyond its feedback loop (ddds); the queue delay no leg may "
        "exceed (delay-target)"))] = 10.0
    hold_bytes: Annotated[int, bounded("hold_bytes", description=(
        "delay-target: bytes PDCP may hold unnumbered while every leg is at its target"))] = 4_000_000
    discard_ms: Annotated[float, bounded("discard_ms", description=(
        "delay-target: ms an SDU may wait unnumbered before it is discarded (TS 38.323's discard timer)"))] = 100.0
    fallback_ms: Annotated[float, bounded("fallback_ms", description=(
        "ddds, delay-aware, delay-target: a secondary leg that holds packets and serves none for this many ms "
        "reports an outage, and PDCP sends its copies of what it sent there again on leg 1 (leg 1 likewise, its "
        "copies sent to leg 2); 0: off"))] = 0.0
    aqm: Annotated[list[AqmKind] | None, BeforeValidator(_aqm), Field(description=(
        "the queue discipline of each downlink leg's rate stage (with a cell: of each of its device queues): "
        "tail-drop, codel (RFC 8289), pie (RFC 8033) or "
        "fq-codel (RFC 8290: a CoDel per flow, served by deficit round robin, the queue's limits its own); "
        "one value for every leg; None: tail drop everywhere"))] = None
    aqm_target_ms: Annotated[float | None, bounded("aqm_target_ms", description=(
        "the queue delay the AQM aims at, ms; None: the RFC's (CoDel and FQ-CoDel "
        f"{AQM_TARGET_MS['codel']:g}, PIE {AQM_TARGET_MS['pie']:g})"))] = None
    aqm_interval_ms: Annotated[float | None, bounded("aqm_interval_ms", description=(
        "CoDel's interval (how long the delay must stay above target before a drop), PIE's update period, "
        "ms; None: the RFC's (CoDel and FQ-CoDel 100, PIE 15)"))] = None
    aqm_ecn: Annotated[StrictBool, Field(description=(
        "the AQM marks an ECN-capable packet CE instead of dropping it (PIE: while its probability is at "
        "most 10 %)"))] = True
    sn_events: Annotated[list[SnEvent] | None, BeforeValidator(_sn_events), Field(description=(
        "secondary node events on leg 2, in time order: release@AT_S, add@AT_S, change@AT_S[:INTERRUPTION_MS], "
        "each with an optional :lose"))] = None

    @model_validator(mode="before")
    @classmethod
    def _no_bool_numbers(cls, data: object) -> object:
        """`batch = true` in a file is no batch size (pydantic would read it as 1)."""
        if isinstance(data, dict):
            for name, v in data.items():
                field = cls.model_fields.get(str(name))
                if field is None or field.annotation in (bool, StrictBool, bool | None) or name == "jitter_reorders":
                    continue
                if isinstance(v, bool) or (isinstance(v, list) and any(isinstance(x, bool) for x in v)):
                    raise ValueError(f"{name}: expected a number, not {str(v).lower()}")
        return data

    @model_validator(mode="before")
    @classmethod
    def _per_leg_defaults_take_the_leg_count(cls, data: object) -> object:
        """Per-leg lists still at their two-leg defaults take the scenario's leg count: one
        entry for one cell, N for N rates (bw); EN-DC and the study's two legs keep them."""
        if not isinstance(data, dict):
            return data
        kind = _link_kind(data.get("link"))
        bw = data.get("bw", cls.model_fields["bw"].default)
        if kind is not None:
            n = 2 if kind == "endc" else 1
        elif isinstance(bw, list | tuple) and bw:
            n = len(bw)
        else:
            return data  # refused below, naming bw
        data = dict(data)
        for name in PER_LEG:
            default = cls.model_fields[name].default
            given = data.get(name, default)
            if len(default) != n and isinstance(given, list | tuple) and list(given) == default:
                data[name] = default[:1] * n
        aqm = _aqm(data.get("aqm"))
        if isinstance(aqm, list | tuple) and len(aqm) == 1:  # one discipline for every leg
            aqm = list(aqm) * n
            data["aqm"] = aqm
        if isinstance(aqm, list | tuple) and len(aqm) == n and all(k == "tail-drop" for k in aqm):
            data["aqm"] = None  # the default named: one scenario, one run key
        return data

    @model_validator(mode="after")
    def _legs_agree(self, info: ValidationInfo) -> "Scenario":
        if self.link is not None:
            cells = self.link
            if self.bw != type(self).model_fields["bw"].default:
                raise ValueError("bw: not used with --link (the cell's capacity follows the channel)")
            if self.trace is not None or self.traces is not None:
                raise ValueError("trace: not used with --link (the cell's capacity follows the channel)")
            if self.outage is not None and cells.legs == 1:
                raise ValueError("outage: not with one cell (a leg of its own would be needed; endc: has two)")
            if self.duplicate and cells.legs == 1:
                raise ValueError("duplicate: needs two legs; one cell gives one (endc: gives two)")
            if self.loss_at != "after-rate":
                raise ValueError("loss_at: only after-rate with --link (a cell has no rate stage to put loss before)")
            if self.queue_packets != 100:
                raise ValueError(f"queue_packets: not used with --link (each device has its own queue at "
                                 f"the cell: {lte.QUEUE_BYTES // 1000} kB in LTE, dclab/lte.py; "
                                 f"{nr.QUEUE_BYTES // 1000} kB in NR, dclab/nr.py)")
        n = self.legs
        for name in PER_LEG:
            if len(getattr(self, name)) != n:
                raise ValueError(per_leg_mismatch(name, n, self.link, len(getattr(self, name))))
        if sum(self.split) <= 0:
            raise ValueError("split: at least one share must be above 0")
        # A stored run's traces were read where and when it ran; they need not be here now.
        here = not (info.context or {}).get(STORED)
        if self.trace is not None and here:
            check_trace(Path(self.trace))
        if self.traces is not None:
            if self.trace is not None:
                raise ValueError("traces: not with trace (one trace on every leg, or one per leg)")
            if len(self.traces) != n:
                raise ValueError(f"traces: needs one per leg ({n}, as --bw gives), got {len(self.traces)}")
            for t in self.traces if here else ():
                check_trace(Path(t))
        if self.x2_delay is not None and n < 2:
            raise ValueError("x2_delay: needs a secondary leg (two legs or more; endc: gives two)")
        if self.sn_events is not None:
            if n < 2:
                raise ValueError("sn_events: needs a secondary leg (two legs or more; endc: gives two)")
            if not 1 <= len(self.sn_events) <= 100:
                raise ValueError(f"sn_events: give 1 to 100 events (got {len(self.sn_events)})")
            times = [e.at_s for e in self.sn_events]
            if times != sorted(times):
                raise ValueError("sn_events: give the events in time order")
            added = True  # a run starts with its secondary
            for e in self.sn_events:
                if e.event == "add" and added:
                    raise ValueError(f"sn_events: {e} adds a secondary that is there (a run starts with "
                                     "it): release it first")
                if e.event != "add" and not added:
                    raise ValueError(f"sn_events: {e} with no secondary (released before it): add one first")
                added = e.event != "release"
        if self.split_policy != "static":
            if n < 2:
                raise ValueError(f"split_policy: {self.split_policy} needs a secondary leg (two legs or more, "
                                 "the first the master's; endc: gives two)")
            if self.duplicate:
                raise ValueError(f"split_policy: {self.split_policy} splits; duplicate sends every packet on "
                                 "every leg")
        self._aqm_fits(n)
        if self.outage is not None and self.outage.leg > n:
            raise ValueError(f"outage: leg {self.outage.leg} does not exist (the scenario has {n})")
        self._policy_reads_its_options()
        return self

    def _aqm_fits(self, n: int) -> None:
        """An AQM is per leg, on the leg's rate stage or, with --link, on each of its cell's
        device queues; its settings only with one."""
        if self.aqm is not None:
            if len(self.aqm) != n:
                raise ValueError(f"aqm: one value for every leg, or one per leg ({n}), got {len(self.aqm)}")
        if self.aqm_kinds() == {"tail-drop"}:
            for name in ("aqm_target_ms", "aqm_interval_ms", "aqm_ecn"):
                if getattr(self, name) != type(self).model_fields[name].default:
                    raise ValueError(f"{name}: needs an AQM on some leg (codel, pie or fq-codel); tail drop reads nothing "
                                     "of it")

    def aqm_kinds(self) -> set[str]:
        """The queue disciplines the legs run."""
        return set(self.aqm) if self.aqm is not None else {"tail-drop"}

    def _policy_reads_its_options(self) -> None:
        """An option the split policy does not read, changed from its default, is refused:
        it would change nothing but the run's key (two equal runs stored apart)."""
        for name, readers in POLICY_OPTIONS.items():
            default = type(self).model_fields[name].default
            value = getattr(self, name)
            if name == "split" and self.link is not None and self.link.kind != "endc":
                default = default[:1]
            if self.split_policy not in readers and value != default:
                users = " and ".join(readers)
                raise ValueError(f"{name}: not used by split policy {self.split_policy} (only by {users}; "
                                 f"it would change nothing but the run's key)")

    def leg_trace(self, leg: int) -> Path | None:
        """The trace of downlink leg ``leg`` (0-based), None: its fixed rate."""
        return self.traces[leg] if self.traces is not None else self.trace

    @property
    def legs(self) -> int:
        """Downlink legs: one per cell of --link, else one per --bw value."""
        return self.link.legs if self.link is not None else len(self.bw)

    def delay_std(self, leg: int) -> float:
        return self.delay[leg] * self.delay_cov

    @property
    def pdcp_sn_bits(self) -> int:
        """The SN length run: as given, else 18 over an NR PDCP (``nr:``, ``endc:``), else the
        DC study's 16."""
        if self.sn_bits is not None:
            return self.sn_bits
        return 18 if self.link is not None and self.link.kind in ("nr", "endc") else 16

    @property
    def reorders_by_jitter(self) -> bool:
        """Whether jitter may reorder packets: as asked, else netem's on the study's legs
        (docs/testbed-reference.md) and order-preserving over a cell (an LTE cell and its
        core deliver in order; a reordering default there measured the stack's reaction to
        artificial reordering)."""
        return self.jitter_reorders if self.jitter_reorders is not None else self.link is None

    def split_text(self) -> str:
        """The split as run, for titles and summary lines: "batch 100, split 50:50" (with
        what a batch sends when that is not the split: "batch 10, split 5:95 (sent as
        1:9)"), or the flow-controlled policy with its parameters."""
        if self.split_policy == "static":
            sent = "" if is_exact(self.batch, self.split) else f" (sent as {ratio_text(shares(self.batch, self.split))})"
            return f"batch {self.batch}, split {ratio_text(self.split)}{sent}"
        target = f", target {self.target_delay:g} ms" if self.split_policy in ("ddds", "delay-target") else ""
        hold = (f", hold {self.hold_bytes / 1e6:g} MB, discard {self.discard_ms:g} ms"
                if self.split_policy == "delay-target" else "")
        fallback = f", fallback after {self.fallback_ms:g} ms" if self.fallback_ms > 0 else ""
        return f"split {self.split_policy} (reports every {self.report_period:g} ms{target}{hold}{fallback})"

    def jitter(self) -> str:
        """The jitter as run, for summary lines and records: 'none', 'reordering (netem)'
        or 'order-preserving', with the coefficient of variation."""
        if self.delay_cov == 0:
            return "none"
        kind = "reordering (netem)" if self.reorders_by_jitter else "order-preserving"
        return f"{kind}, cov {self.delay_cov:g}"


# The split options and the policies that read them (docs/endc.md, "The split").
POLICY_OPTIONS: dict[str, tuple[str, ...]] = {
    "batch": ("static",), "split": ("static",),
    "report_period": ("ddds", "delay-aware", "delay-target"), "target_delay": ("ddds", "delay-target"),
    "hold_bytes": ("delay-target",), "discard_ms": ("delay-target",),
    "fallback_ms": ("ddds", "delay-aware", "delay-target"),
}


def build(base: Scenario | None = None, *, fields_as_in_file: bool = False, **changes: object) -> Scenario:
    """A validated scenario from ``base`` (default: the reference) with ``changes``
    applied; raises ScenarioError naming the field (as its option, or as a file names it
    with ``fields_as_in_file``) and its allowed range."""
    data = (base or Scenario()).model_dump()
    data.update({k: v for k, v in changes.items() if v is not None})
    if isinstance(data.get("t_reordering"), str) and data["t_reordering"].lower() in ("inf", "infinity"):
        # as in scenario files and campaign groups
        data["t_reordering"] = None
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(describe(e, as_file=fields_as_in_file)) from None


# Fields added after the first campaign store: a run key includes them only when they
# differ from their defaults, so stores written before them still resume (campaign/plan.py).
ADDED_FIELDS: tuple[str, ...] = ("jitter_reorders", "uplink_loss", "link", "loss_at", "pdcp_processing", "traces",
                                 "outage", "x2_delay", "split_policy", "report_period", "target_delay",
                                 "sn_events", "hold_bytes", "discard_ms", "fallback_ms", "aqm", "aqm_target_ms",
                                 "aqm_interval_ms", "aqm_ecn")
# An added field's value in those stores where it is not its default today: the jitter was
# netem's (reordering) on every link, and keys hold the jitter as run (reorders_by_jitter).
KEY_DEFAULTS: dict[str, object] = {"jitter_reorders": True}

# The CLI option of a field where it is not --field-name.
OPTIONS: dict[str, str] = {"queue_packets": "--queue", "uplink_queue_packets": "--uplink-queue", "traces": "--trace",
                           "aqm_target_ms": "--aqm-target", "aqm_interval_ms": "--aqm-interval"}



def describe(e: ValidationError, as_file: bool = False) -> str:
    """One line per problem: the field (as its CLI option, or as the file's field with
    ``as_file``) and what is allowed."""
    lines = []
    for err in e.errors():
        loc = [str(p) for p in err["loc"]]
        msg = err["msg"].removeprefix("Value error, ")
        field = loc[0] if loc else ""
        if not field and ":" in msg:  # a cross-field check names its field first
            field, msg = (x.strip() for x in msg.split(":", 1))
        field = field.lstrip("-").replace("-", "_")
        option = (field or "scenario") if as_file else OPTIONS.get(field, "--" + (field or "scenario").replace("_", "-"))
        item = "event" if field == "sn_events" else "leg"  # the per-leg lists', or the events'
        leg = f" ({item} {int(loc[1]) + 1})" if len(loc) > 1 and loc[1].isdigit() else ""
        if as_file and leg:
            leg = f"[{int(loc[1])}]"
        part = loc[1] if len(loc) > 1 and not loc[1].isdigit() else None  # a field of a nested record
        if field == "sn_events" and len(loc) > 2:
            part = loc[2]
        bounds = RANGES.get(f"sn_{part}" if field == "sn_events" else f"{field}_{part}" if part else field)
        if err["type"] in {"greater_than_equal", "less_than_equal", "greater_than", "less_than"} and bounds:
            lo, hi = bounds
            lo_text = f"at least {lo}"
            got = err.get("input")
            shown = f"{got:g}" if isinstance(got, int | float) and abs(got) >= 1e15 else str(got)[:40]
            msg = f"{part + ' ' if part else ''}must be {lo_text} and at most {hi} (got {shown})"
        elif err["type"] == "extra_forbidden":
            msg = f"unknown field (known: {', '.join(Scenario.model_fields)})"
        if as_file:  # a file's fields are named as in the file, not as options it never gave
            msg = re.sub(r"--([a-z]+(?:-[a-z]+)*)", lambda m: m.group(1).replace("-", "_"), msg)
        lines.append(f"{option}{leg}: {msg}")
    return "; ".join(lines)


def check_trace(path: Path) -> None:
    """ValueError unless ``path`` is a regular file dcemu will read (files.py's limit)."""
    if not path.exists():
        raise ValueError(f"trace: no such file {path}")
    check_input(path, "trace")  # a FileRefused is a ValueError naming the field


def load(path: Path) -> Scenario:
    """A scenario file: TOML with Scenario's field names (missing ones keep defaults)."""
    try:
        data = read_toml(path, "--scenario")
    except FileRefused as e:
        raise ScenarioError(str(e)) from None
    if data.get("link") is not None and "bw" in data:
        raise ScenarioError(f"{path}: bw: not used with link (the cell's capacity follows the channel)")
    if isinstance(data.get("t_reordering"), str) and data["t_reordering"].lower() in ("inf", "infinity"):
        data["t_reordering"] = None
    if isinstance(data.get("trace"), str) and not Path(data["trace"]).is_absolute():
        data["trace"] = str((Path(path).parent / data["trace"]).resolve())
    if isinstance(data.get("traces"), list):
        data["traces"] = [str((Path(path).parent / t).resolve()) if isinstance(t, str) else t for t in data["traces"]]
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(f"{path}: {describe(e, as_file=True)}") from None


def to_toml(s: Scenario) -> str:
    d = s.model_dump(mode="json")
    if d["t_reordering"] is None:
        d["t_reordering"] = "inf"
    d = {k: v for k, v in d.items() if v is not None and not (k == "bw" and s.link is not None)}
    return tomli_w.dumps(d)


def parse_list(option: str, text: str, sep: str = ",") -> list[float]:
    """"20,20" or "50:50" to floats, naming the option on error."""
    try:
        values = [float(x) for x in text.split(sep)]
        if any(v != v or v in (float("inf"), float("-inf")) for v in values):
            raise ValueError
        return values
    except ValueError:
        raise ScenarioError(f"{option}: expected numbers separated by '{sep}' (got {clip(text)})") from None


def capacity_mbps(s: Scenario) -> float:
    """The downlink capacity summed over the legs (a trace's mean rate on every leg)."""
    from .traces import trace_mean_mbps  # reads the trace file; only when there is one

    if s.link is not None:
        return s.link.capacity_mbps
    return trace_mean_mbps(Path(s.trace)) * s.legs if s.trace else sum(s.bw)
