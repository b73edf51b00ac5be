"""The experiment registry: every module in this package that exports ``EXPERIMENT`` (an
``experiments.base.Experiment``) is an experiment, found on first use. Adding one means
adding one module here; `dclab run`, sweeps, campaigns, the store, `dclab plot` and
`dclab report` take it from the registry."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ..files import check_name, clip
from .base import Experiment

# An experiment found by name: its options type is its own ``options_model``, known only
# at run time (its options come from that model, so they always match).
AnyExperiment = Experiment[Any]

_REGISTRY: dict[str, AnyExperiment] = {}
_LOADED = False


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in ("base", "reps"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        exp = getattr(module, "EXPERIMENT", None)
        if isinstance(exp, Experiment):
            register(exp)


def register(exp: AnyExperiment) -> AnyExperiment:
    """Adds an experiment (modules here are found by themselves; tests and plug-ins
    elsewhere call this). A name may be registered once, and follows files.NAME_RE: it
    becomes a command, a store column read back into file names and a campaign table."""
    check_name(exp.name, "experiment name")
    if exp.name in _REGISTRY and _REGISTRY[exp.name] is not exp:
        raise ValueError(f"experiment {exp.name!r} is registered twice")
    _REGISTRY[exp.name] = exp
    return exp


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def experiments() -> dict[str, AnyExperiment]:
    """Every experiment by name, the default first, then by name."""
    _load()
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (not kv[1].default, kv[0])))


def get_experiment(name: str) -> AnyExperiment:
    known = experiments()
    if name not in known:
        raise ValueError(f"experiment: must be one of {', '.join(known)} (got {clip(name)})")
    return known[name]


def default_experiment() -> AnyExperiment:
    return next(iter(experiments().values()))
