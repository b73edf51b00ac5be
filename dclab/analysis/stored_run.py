"""A run as the figures and tables read it: typed, whether it comes back from the store
(``campaign/typed_runs.py`` builds it from a store row, its options validated by its
experiment's model) or from a repetition just measured (``RepResult.stored``).

``StoredRun[O]`` holds the scenario as a ``Scenario`` and the options as the experiment's
options model ``O``; what several readers derive from a run (the throughput of a flow,
the stand-ins it ran on, its headline values) is a property here, computed once. Its
``metrics`` stay the JSON object the run recorded: each experiment records its own
details there (PDCP summaries, per-download records), and the store keeps them as JSON.
``Store.rows()`` (plain dicts) stays for CSV, Parquet and pandas.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from ..files import JsonObject
from ..scenario import Scenario
from .metrics import PdcpSummary
from .stand_in import stack_label


def number(v: object) -> float | None:
    """``v`` as a float when it is a finite-or-infinite number (not NaN, not a bool)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
        return None
    return float(v)


class StoredFlow(BaseModel):
    """One flow of a run: the store's flow row (``campaign/store.py`` FLOW_COLUMNS)."""

    model_config = ConfigDict(frozen=True)

    name: str
    stack: str = ""
    cc: str = ""
    bearer: str = ""
    port: int | None = None
    mean_mbps: float | None = None  # at the bearer, over the measured window
    goodput_mbps: float | None = None  # bytes / (last byte - request), from the client
    bytes: int | None = None
    completion_s: float | None = None  # request to last byte, when the transfer completed
    ok: bool | None = None
    # The wall-clock time of the request: known for a repetition just measured (its
    # client's transfer), not kept in the store.
    request_wall: float | None = None

    @property
    def mbps(self) -> float | None:
        """The flow's throughput: at its bearer where measured there, else its goodput."""
        return self.mean_mbps if self.mean_mbps is not None else self.goodput_mbps


OptionsT = TypeVar("OptionsT", bound=BaseModel)


class StoredRun(BaseModel, Generic[OptionsT]):
    """One run (one repetition at one point) with what identifies it in its campaign."""

    model_config = ConfigDict(frozen=True)

    experiment: str
    scenario: Scenario
    options: OptionsT
    ok: bool
    rep: int = 1
    seed: int | None = None
    error: str | None = None
    stack: str = ""  # 'aioquic', or per flow 'dc=aioquic,sc1=tcp,sc2=tcp'
    cc: str = ""
    host_config: str = ""
    metrics: JsonObject = {}  # the run's JSON object of metrics and details
    flows: tuple[StoredFlow, ...] = ()
    # Its place in a campaign ('' for a repetition just measured).
    run_key: str = ""
    campaign: str = ""
    sweep: str = ""
    param: str = ""
    value: str = ""
    value_num: float | None = None
    environment: JsonObject = {}  # kernel, host settings, versions (JSON, as recorded)
    run_dir: str = ""  # as stored
    machine: str = ""
    started_at: str = ""
    finished_at: str = ""
    # What the options say about how it ran, read once by typed_runs/RepResult.stored: the
    # backend ("emu", "sim") and the stand-in models of a simulated run.
    backend: str = "emu"
    stand_in: dict[str, str] = {}
    # Views: a label an experiment gives its runs' series, and where the run's raw data is
    # on this machine (None: not here, or not looked for).
    series: str | None = None
    run_path: Path | None = None

    def metric(self, name: str) -> float | None:
        """A numeric metric of the run (None: absent, not a number, or NaN)."""
        return number(self.metrics.get(name))

    def flow(self, name: str) -> StoredFlow | None:
        return next((f for f in self.flows if f.name == name), None)

    def flow_mbps(self, name: str) -> float | None:
        """A flow's throughput (``StoredFlow.mbps``), None without that flow."""
        f = self.flow(name)
        return f.mbps if f is not None else None

    def detail(self, name: str) -> JsonObject:
        """A JSON object among the metrics (e.g. ``pdcp``), {} without one."""
        v = self.metrics.get(name)
        return v if isinstance(v, dict) else {}

    @property
    def pdcp(self) -> PdcpSummary | None:
        """The PDCP summary the run kept (``pdcp``), None where it kept none."""
        return PdcpSummary.of(self.metrics.get("pdcp"))

    @property
    def t0_ms(self) -> float:
        """dcemu's time of the measurement's start, ms (0 when not recorded)."""
        return self.metric("t0_ms") or 0.0

    @property
    def stack_shown(self) -> str:
        """Its stack as every table and legend shows it: a stand-in's model named
        (``stand_in.stack_label``)."""
        return stack_label(self.stack, self.stand_in)

    @property
    def simulated(self) -> bool:
        return self.backend == "sim"

    def options_json(self) -> JsonObject:
        return self.options.model_dump(mode="json")

    def scenario_json(self) -> JsonObject:
        return self.scenario.model_dump(mode="json")


class UnknownOptions(BaseModel):
    """The options of a run whose experiment is not installed here: kept as recorded."""

    model_config = ConfigDict(extra="allow", frozen=True)


AnyRun = StoredRun[Any]
