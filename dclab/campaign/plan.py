"""Campaigns: the matrix of experiments x stack configurations x sweeps x repetitions,
described in a data file (campaigns/NAME.toml), planned with a time estimate. Every
registered experiment can be in a campaign: its table in the file (``[NAME]``) holds
its options, a group's ``configs`` set option fields (stack, cc, udp_buffer), and a sweep
applies to every experiment whose options it can change. A run is identified by a stable
key; `--shard i/n` splits the plan over machines.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, ValidationError

from ..analysis.stand_in import stack_label
from ..dcemu.sim import SIM_MODEL
from ..dcemu.sim_models import used as used_stand_ins
from ..endpoints import get_stack
from ..endpoints.base import StackError
from ..errors import InputError, OptionError
from ..experiments import experiments, get_experiment
from ..experiments.base import Experiment, Options, OptionsT, RunChoices, sweepable_fields
from ..files import FileRefused, JsonObject, check_name, clip, read_toml
from ..flowplan import PlanError
from ..paths import CAMPAIGNS, ROOT
from ..scenario import ADDED_FIELDS, KEY_DEFAULTS, MAX_SEED, Scenario, ScenarioError, build, capacity_mbps
from .sweeps import SWEEPS, expand, frange

OVERHEAD_S = 4.0  # testbed setup and teardown per run, measured on the 2-core VM
# Runs a campaign may plan unless --max-runs says more: the paper campaign is 20,890 runs
# (several days); lists capped one by one still multiply into tens of millions, which
# would fill memory while planning.
MAX_RUNS = 100_000


@dataclass(frozen=True)
class StackConfig:
    stack: str
    cc: str
    udp_buffer: str = "default"

    @property
    def label(self) -> str:
        return self.shown()

    def shown(self, stand_in: dict[str, str] | None = None) -> str:
        """The label, its stack as a run on ``stand_in`` shows it (analysis/stand_in.py)."""
        buffer = f" {self.udp_buffer}-buffer" if get_stack(self.stack).transport == "udp" else ""
        return f"{stack_label(self.stack, stand_in)} {self.cc}{buffer}"

    def option_values(self) -> JsonObject:
        return {"stack": self.stack, "cc": self.cc, "udp_buffer": self.udp_buffer}


@dataclass(frozen=True)
class PlannedRun:
    key: str
    experiment: str
    config: StackConfig
    sweep: str
    value: float
    rep: int
    scenario: Scenario
    options: Options
    estimate_s: float
    group: str = ""  # the campaign group that planned it (its name, or its number from 0)

    @property
    def label(self) -> str:
        """What the run is, for people: in a campaign whose groups differ only in options
        (e.g. mquic-fidelity's variants) the group tells the runs apart."""
        where = f"{self.group}: " if self.group else ""
        return f"{where}{self.experiment} {self.config_label} {self.sweep}={self.value:g} rep {self.rep}"

    @property
    def config_label(self) -> str:
        """The configuration as shown: a simulated stand-in's model after its stack."""
        return self.config.shown(RunChoices.of(self.options).stand_ins or None)


class CampaignFileError(InputError):
    """A campaign file that cannot be planned: its keys, groups, sweeps or options; the
    message names the file and the key (``group[0].configs[1].udp_buffer``)."""


@dataclass
class Campaign:
    name: str
    description: str = ""
    reps: int = 10
    experiment_options: dict[str, JsonObject] = field(default_factory=dict)  # [NAME] tables
    groups: list[JsonObject] = field(default_factory=list)
    source: Path | None = None  # the campaign file, named by planning's errors

    def where(self, group: JsonObject) -> str:
        """"FILE: group NAME" for an error about ``group`` (its index when unnamed)."""
        name = group.get("name") or self.groups.index(group)
        return f"{self.source}: group {name}" if self.source else f"group {name}"


def parse_config(spec: str | JsonObject) -> StackConfig:
    """"aioquic:reno:large" or {stack, cc, udp_buffer}."""
    if isinstance(spec, str):
        parts = spec.split(":")
        spec = {"stack": parts[0], **({"cc": parts[1]} if len(parts) > 1 else {}),
                **({"udp_buffer": parts[2]} if len(parts) > 2 else {})}
    try:
        st = get_stack(spec["stack"])
        cc = st.resolve_cc(spec.get("cc"), option=f"config {spec}: cc")
    except StackError as e:
        raise OptionError(str(e)) from None
    buf = spec.get("udp_buffer", "default")
    if buf not in ("default", "large"):
        raise OptionError(f"config {spec}: udp_buffer must be default or large (got {clip(buf)})")
    return StackConfig(st.name, cc, buf if st.transport == "udp" else "default")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SweepEntry(_Strict):
    name: str
    values: list[FiniteFloat] | None = Field(None, min_length=1, max_length=10_000)
    range: list[FiniteFloat] | None = Field(None, min_length=3, max_length=3)  # lo, hi, step


class ConfigEntry(_Strict):
    stack: str
    cc: str | None = None
    udp_buffer: Literal["default", "large"] = "default"


class GroupFile(_Strict):
    name: str | None = None
    experiments: list[str] | None = Field(None, min_length=1)
    configs: list[ConfigEntry] = Field(min_length=1)
    sweeps: list[str | SweepEntry] = Field(min_length=1)
    scenario: JsonObject = {}
    options: dict[str, JsonObject] = {}  # per experiment: option values of this group (over the file's [NAME])


class CampaignFile(BaseModel):
    """A campaign file as written; experiments' option tables are the other keys."""

    model_config = ConfigDict(extra="allow", strict=True)
    description: str = ""
    name: str | None = None
    reps: int = Field(10, ge=1, le=1000)
    group: list[GroupFile] = Field(min_length=1)


def _where(loc: tuple[Any, ...]) -> str:
    """('group', 0, 'configs', 1, 'cc') -> 'group[0].configs[1].cc'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("str", "SweepEntry", "function")):  # union branch names
            out += ("." if out else "") + str(part)
    return out or "file"


def load(name_or_path: str) -> Campaign:
    """A campaign by name (campaigns/NAME.toml) or path; errors name the file and the field
    (e.g. ``group[0].configs[1].udp_buffer``), with what is allowed."""
    path = Path(name_or_path)
    if not path.suffix:
        if "/" in name_or_path or name_or_path.startswith("."):
            raise CampaignFileError(f"no campaign {clip(name_or_path)}: a campaign is a name in campaigns/ or a .toml file")
        path = CAMPAIGNS / f"{name_or_path}.toml"
    if not path.exists():
        names = ", ".join(sorted(p.stem for p in CAMPAIGNS.glob("*.toml")))
        raise CampaignFileError(f"no campaign {clip(name_or_path)} (known: {names})")
    try:
        d = read_toml(path, "campaign file")
    except FileRefused as e:
        raise CampaignFileError(str(e)) from None
    known = experiments()
    try:
        f = CampaignFile.model_validate(d)
    except ValidationError as e:
        # Of a union's alternatives (a sweep is a name or a table), the one that got furthest.
        err = max(e.errors(), key=lambda x: len(x["loc"]))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing" and err["loc"] == ("group",):
            msg = "no [[group]] tables"
        raise CampaignFileError(f"{path}: {_where(err['loc'])}: {msg}") from None
    for key, value in (f.model_extra or {}).items():
        if key not in known or not isinstance(value, dict):
            raise CampaignFileError(f"{path}: {key}: unknown key (known: description, name, reps, group, and a table of "
                                f"options per experiment: {', '.join(known)})")
    try:
        name = check_name(f.name or path.stem, f"{path}: name" if f.name else f"{path}: the file's name (the campaign's name)")
    except FileRefused as e:
        raise CampaignFileError(str(e)) from None
    c = Campaign(name=name, description=f.description, reps=f.reps, source=path)
    c.experiment_options = {k: dict(v) for k, v in (f.model_extra or {}).items()}
    c.groups = [g.model_dump(exclude_none=True) for g in f.group]
    for i, g in enumerate(c.groups):
        if g.get("name") is not None:
            try:
                check_name(g["name"], f"{path}: group[{i}].name")
            except FileRefused as e:
                raise CampaignFileError(str(e)) from None
        for s in g["sweeps"]:
            sname = s if isinstance(s, str) else s.get("name")
            if sname not in SWEEPS:
                raise CampaignFileError(f"{path}: group[{i}]: unknown sweep {sname!r}; one of {', '.join(SWEEPS)}")
        for name in g.get("experiments", list(known)):
            if name not in known:
                raise CampaignFileError(f"{path}: group[{i}]: unknown experiment {name!r}; one of {', '.join(known)}")
        for name, opts in g.get("options", {}).items():
            if name not in known:
                raise CampaignFileError(f"{path}: group[{i}].options: unknown experiment {name!r}; one of {', '.join(known)}")
            try:
                known[name].options(**{**c.experiment_options.get(name, {}), **opts})
            except ValidationError as err:
                raise CampaignFileError(f"{path}: group[{i}].options.{name}: {_first_error(err)}") from None
    for name, opts in c.experiment_options.items():
        try:
            known[name].options(**opts)
        except ValidationError as err:
            raise CampaignFileError(f"{path}: [{name}]: {_first_error(err)}") from None
    return c


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "options"
    msg = err["msg"].removeprefix("Value error, ")
    return msg if msg.startswith(f"{loc}:") or (loc == "options" and ":" in msg) else f"{loc}: {msg}"


def run_flows(exp: Experiment[OptionsT], s: Scenario, options: OptionsT) -> list[tuple[str, str]] | None:
    """The (stack, cc) of each flow of a run (None: its plan is refused, which its
    preflight reports)."""
    try:
        plan = exp.plan(exp.scenario(s, options), options)
    except (PlanError, StackError, ScenarioError):
        return None
    return [(f.stack, f.cc or "") for f in plan.flows]


def with_used_stand_ins(exp: Experiment[OptionsT], s: Scenario, options: OptionsT) -> OptionsT:
    """``options`` with only the stand-ins its flows run on, so that a group's stand-in
    changes the key and the label of only the runs of the stack it names."""
    stand_in = RunChoices.of(options).stand_ins
    flows = run_flows(exp, s, options) if stand_in else None
    if flows is None:
        return options
    return options.model_copy(update={"stand_in": used_stand_ins(flows, stand_in)})


def run_key(experiment: str, cfg: StackConfig, sweep: str, value: float, rep: int, s: Scenario,
            options: JsonObject) -> str:
    """Stable over releases and machines: the fields of the first store's key (experiment,
    config, sweep, value, repetition, scenario, size, duration) in that order, then any other
    option that differs from the experiment's default, so stores written before plug-ins
    still resume; likewise a scenario field added since (``scenario.ADDED_FIELDS``) only
    when it differs from its default. A trace in the repository enters by its relative
    path (earlier releases used the absolute one, so their trace-driven runs had other
    keys in every checkout)."""
    exp = get_experiment(experiment)
    defaults = exp.options().model_dump(mode="json")
    base = {"stack", "cc", "udp_buffer", "size", "duration"}
    extra = {k: v for k, v in options.items() if k not in base and v != defaults.get(k)}
    duration = options.get("duration")
    scenario = s.model_dump(mode="json")
    # The jitter as run: the stores before a cell's order-preserving default keyed netem's
    # jitter by its absence, and a cell's run that relied on the old default must not resume.
    scenario["jitter_reorders"] = s.reorders_by_jitter
    # Likewise the SN length as run: 16 in every store before the NR links' 18.
    scenario["sn_bits"] = s.pdcp_sn_bits
    for name in ADDED_FIELDS:
        if scenario[name] == KEY_DEFAULTS.get(name, Scenario.model_fields[name].default):
            del scenario[name]
    if scenario.get("trace"):
        scenario["trace"] = _portable(Path(scenario["trace"]))
    if scenario.get("traces"):
        scenario["traces"] = [_portable(Path(t)) for t in scenario["traces"]]
    fields: list[Any] = [experiment, cfg.stack, cfg.cc, cfg.udp_buffer, sweep, value, rep, scenario,
                         options.get("size"), float(duration) if duration is not None else None]
    if extra.get("backend") == "sim":
        extra["sim_model"] = SIM_MODEL  # a simulated run is of one version of the models
    if extra:
        fields.append(extra)
    blob = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _portable(path: Path) -> str:
    """A trace inside the repository by its path from the repository's root, so that a run
    has one key on every machine and in every checkout (shards merge by key)."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def estimate(exp: Experiment[OptionsT], s: Scenario, options: OptionsT) -> float:
    """Seconds one run takes: setup plus what the experiment measures."""
    return OVERHEAD_S + exp.estimate_s(s, options, capacity_mbps(s))


def sweep_values(sw: str | JsonObject) -> tuple[str, list[float]]:
    if isinstance(sw, str):
        return sw, list(SWEEPS[sw].defaults)
    name = sw["name"]
    if "values" in sw:
        return name, [float(x) for x in sw["values"]]
    if "range" in sw:
        return name, frange(*[float(x) for x in sw["range"]])
    return name, list(SWEEPS[name].defaults)


def run_count(c: Campaign, reps: int | None = None) -> int:
    """How many runs plan() would consider (before runs shared by two groups are merged),
    counted from the lists alone: nothing is expanded."""
    n = 0
    for g in c.groups:
        for name in g.get("experiments", list(experiments())):
            sweepable = sweepable_fields(get_experiment(name).options_model)
            points = sum(len(sweep_values(sw)[1]) for sw in g["sweeps"]
                         if SWEEPS[sw if isinstance(sw, str) else sw["name"]].applies_to(sweepable))
            n += len(g["configs"]) * points * (reps or c.reps)
    return n


def plan(c: Campaign, reps: int | None = None, base: Scenario | None = None,
         max_runs: int = MAX_RUNS) -> list[PlannedRun]:
    """Every run of the campaign in a fixed order (groups, experiments, configs, sweeps,
    values, repetitions); a run that two groups share (same key) is planned once. More
    than ``max_runs`` runs are refused before any is planned."""
    total = run_count(c, reps)
    if total > max_runs:
        raise OptionError(f"campaign {c.name} has {total:,} runs, more than {max_runs:,}: give --max-runs {total} "
                            "if you mean it (or fewer values, configs or --reps)")
    runs = []
    seen: set[str] = set()
    for g in c.groups:
        group_name = str(g.get("name") or c.groups.index(g))
        changes = dict(g.get("scenario", {}))
        if changes.get("trace") and not Path(changes["trace"]).is_absolute():
            changes["trace"] = str(ROOT / changes["trace"])  # relative to the repository
        if isinstance(changes.get("traces"), list):
            changes["traces"] = [str(ROOT / t) if isinstance(t, str) and not Path(t).is_absolute() else t
                                 for t in changes["traces"]]
        try:
            if (changes.get("link") or (base and base.link)) and "bw" in changes:
                raise ScenarioError("bw: not used with link (the cell's capacity follows the channel)")
            group_base = build(base, fields_as_in_file=True, **changes)
        except ScenarioError as e:
            raise ScenarioError(f"{c.where(g)}: scenario: {e}") from None
        if group_base.seed + (reps or c.reps) - 1 > MAX_SEED:
            raise ScenarioError(f"{c.where(g)}: scenario: seed: repetition N uses the "
                                f"seed + N - 1, so with {reps or c.reps} repetitions at most {MAX_SEED - (reps or c.reps) + 1}")
        configs = [parse_config(x) for x in g["configs"]]
        for name in g.get("experiments", list(experiments())):
            exp = get_experiment(name)
            fields = set(exp.options_model.model_fields)
            sweepable = sweepable_fields(exp.options_model)
            for cfg in configs:
                for sw in g["sweeps"]:
                    sname, values = sweep_values(sw)
                    if not SWEEPS[sname].applies_to(sweepable):
                        continue
                    for p in expand(sname, values, group_base):
                        values_ = {**c.experiment_options.get(name, {}), **g.get("options", {}).get(name, {}),
                                   **{k: v for k, v in cfg.option_values().items() if k in fields}, **p.options}
                        try:
                            options = with_used_stand_ins(exp, p.scenario, exp.options(**values_))
                        except ValidationError as e:
                            raise OptionError(f"{c.where(g)}: {name} {cfg.label} {sname}={p.value:g}: "
                                              f"{_first_error(e)}") from None
                        dumped = options.model_dump(mode="json")
                        for rep in range(1, (reps or c.reps) + 1):
                            key = run_key(name, cfg, sname, p.value, rep, p.scenario, dumped)
                            if key in seen:
                                continue
                            seen.add(key)
                            runs.append(PlannedRun(key, name, cfg, sname, p.value, rep, p.scenario, options,
                                                   estimate(exp, p.scenario, options), group_name))
    return runs


def select_groups(c: Campaign, patterns: tuple[str, ...] | list[str]) -> Campaign:
    """The campaign with only the groups whose name matches one of ``patterns``
    (shell-style, e.g. ``levels-*``); none: all. A pattern that matches no group is an
    error naming the groups there are (an unnamed group is ``group-I``, from 1)."""
    if not patterns:
        return c
    names = [g.get("name") or f"group-{i + 1}" for i, g in enumerate(c.groups)]
    for p in patterns:
        if not fnmatch.filter(names, p):
            raise OptionError(f"--group: no group of {c.name} matches {p!r} (groups: {', '.join(names)})")
    kept = [g for g, n in zip(c.groups, names, strict=True) if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    return replace(c, groups=kept)


def shard(runs: list[PlannedRun], spec: str | None) -> list[PlannedRun]:
    """'i/n': every n-th run starting at the i-th (1-based), so shards balance."""
    if not spec:
        return runs
    try:
        i, n = (int(x) for x in spec.split("/"))
        assert 1 <= i <= n
    except (ValueError, AssertionError):
        raise OptionError(f"--shard: expected i/n with 1 <= i <= n (got {clip(spec)})") from None
    return runs[i - 1 :: n]


def sweep_campaign(name: str, reps: int, experiments_: list[str], configs: list[StackConfig],
                   params: list[tuple[str, list[float]]], options: dict[str, JsonObject]) -> Campaign:
    """The campaign `dclab sweep` runs: one group, the given sweeps."""
    c = Campaign(name=name, reps=reps, experiment_options=options)
    c.groups = [{"experiments": experiments_, "configs": [cfg.__dict__ for cfg in configs],
                 "sweeps": [{"name": p, "values": v} for p, v in params]}]
    return c


def makespan(estimates: list[float], workers: int, per_run_s: float = 0.0) -> float:
    """Wall time of running jobs of the given durations on ``workers`` machines, longest
    first, each to the machine free first (how the cluster coordinator orders them);
    ``per_run_s`` is added to each job (a cluster's own cost per run)."""
    import heapq

    free = [0.0] * max(1, workers)
    for d in sorted(estimates, reverse=True):
        heapq.heapreplace(free, free[0] + d + per_run_s)
    return max(free)
