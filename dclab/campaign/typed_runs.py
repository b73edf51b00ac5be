"""The store's runs typed (``analysis/stored_run.py``): each row's scenario validated as a
``Scenario`` and its options by its experiment's options model, so the report, the figures
and the tables read attributes, not string keys.

A run stored before an option existed ran at that option's default, so its options are
completed with the experiment's defaults first (a new option, e.g. ``--streams``, does not
split its series); a simulated run stored before stand-ins were recorded ran on the model
its stack needs now, and is labelled as one. A run whose experiment is not installed here
keeps its options as recorded (``UnknownOptions``). A run that no longer validates (an
option since renamed, a value since refused) is not read as something it was not: it is
left out and named in ``Typed.unreadable`` with the reason, for the caller to show. Options
are validated as given (those at their default left out, as a user would not give them) and
without the checks of this machine (``experiments/base.py``, STORED).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from ..analysis.stored_run import AnyRun, StoredFlow, StoredRun, UnknownOptions
from ..dcemu.sim_models import unrecorded
from ..experiments import experiments
from ..experiments.base import RunChoices
from ..files import JsonObject, printable
from ..scenario import STORED, Scenario
from .store import Store


@dataclass
class Typed:
    """Runs read from a store; ``unreadable``: (run key, why) of the rows left out."""

    runs: list[AnyRun] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)


def _defaults() -> dict[str, JsonObject]:
    out = {}
    for name, exp in experiments().items():
        try:
            out[name] = exp.options().model_dump(mode="json")
        except ValidationError:  # an experiment with a required option has no defaults to add
            pass
    return out


def _flows_of(r: JsonObject) -> list[tuple[str, str]]:
    """A stored run's (stack, cc) per flow; from its columns when its flows were not kept."""
    flows = [(str(f.get("stack") or ""), str(f.get("cc") or "")) for f in r.get("flows") or []]
    if flows and all(s for s, _ in flows):
        return flows
    return [(part.rpartition("=")[2], str(r.get("cc") or "")) for part in str(r.get("stack") or "").split(",")]


def completed_options(r: JsonObject, defaults: dict[str, JsonObject]) -> JsonObject:
    """A row's options completed with its experiment's defaults, and the stand-ins of a
    simulated run from before they were recorded (see the module's docstring)."""
    stored = r.get("options") or {}
    options = {**defaults.get(r["experiment"], {}), **stored}
    if options.get("backend") == "sim" and "stand_in" not in stored:
        options["stand_in"] = unrecorded(_flows_of(r))
    return options


def _error(e: ValidationError) -> str:
    first = e.errors()[0]
    where = ".".join(str(x) for x in first["loc"]) or "value"
    return f"{where}: {first['msg']}"


def typed(r: JsonObject, defaults: dict[str, JsonObject]) -> AnyRun:
    """One store row (``Store.rows``) typed; ValueError saying what no longer validates."""
    exp = experiments().get(r["experiment"])
    raw = completed_options(r, defaults)
    options: BaseModel
    try:
        scenario = Scenario.model_validate(r.get("scenario") or {}, context={STORED: True})
    except ValidationError as e:
        raise ValueError(f"its scenario: {_error(e)}") from None
    if exp is None:
        options = UnknownOptions(**raw)
        choices = RunChoices(backend="sim" if raw.get("backend") == "sim" else "emu",
                             stand_in=tuple(sorted(dict(raw.get("stand_in") or {}).items())))
    else:
        # Only what differs from the defaults counts as given (validators that ask what was
        # given, e.g. split-layer's --stack against its aggregation, see what the user set).
        given = {k: v for k, v in raw.items() if k not in defaults.get(r["experiment"], {}) or defaults[r["experiment"]][k] != v}
        try:
            known = exp.options_model.model_validate(given, context={STORED: True})
        except ValidationError as e:
            raise ValueError(f"its options: {_error(e)}") from None
        options, choices = known, RunChoices.of(known)
    try:
        flows = tuple(StoredFlow.model_validate({**{k: f.get(k) for k in FLOW_NUMBERS},
                                                 **{k: str(f.get(k) or "") for k in ("name", "stack", "cc", "bearer")}})
                      for f in r.get("flows") or [])
    except ValidationError as e:
        raise ValueError(f"its flows: {_error(e)}") from None
    # pydantic runs a model's after-validators again on an instance given as a field: the
    # context keeps them from checking this machine a second time.
    return StoredRun[Any].model_validate(dict(
        experiment=r["experiment"], scenario=scenario, options=options, ok=bool(r.get("ok")), rep=int(r.get("rep") or 1),
        seed=r.get("seed"), error=r.get("error"), stack=str(r.get("stack") or ""), cc=str(r.get("cc") or ""),
        host_config=str(r.get("host_config") or ""), metrics=dict(r.get("metrics") or {}), flows=flows,
        run_key=str(r.get("run_key") or ""), campaign=str(r.get("campaign") or ""), sweep=str(r.get("sweep") or ""),
        param=str(r.get("param") or ""), value=str(r.get("value") or ""), value_num=r.get("value_num"),
        environment=dict(r.get("environment") or {}), run_dir=str(r.get("run_dir") or ""),
        machine=str(r.get("machine") or ""), started_at=str(r.get("started_at") or ""),
        finished_at=str(r.get("finished_at") or ""), backend=choices.backend, stand_in=choices.stand_ins),
        context={STORED: True})


FLOW_NUMBERS = ("port", "mean_mbps", "goodput_mbps", "bytes", "completion_s", "ok")


def typed_runs(rows: Iterable[JsonObject]) -> Typed:
    """Store rows typed; those that no longer validate are named in ``unreadable``."""
    out = Typed()
    defaults = _defaults()
    for r in rows:
        try:
            out.runs.append(typed(r, defaults))
        except ValueError as e:
            out.unreadable.append((str(r.get("run_key") or ""), printable(str(e), 200)))
    return out


def runs(store: Store, where: str = "1", params: tuple[object, ...] = ()) -> Typed:
    """The store's runs (``where``: an SQL condition on its runs table, as ``Store.rows``)
    typed."""
    return typed_runs(store.rows(where, params))
