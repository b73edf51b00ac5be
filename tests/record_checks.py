"""Whether a record dcemu wrote has exactly the fields of its model in
dclab/dcemu/records.py, at every level (the models give missing fields defaults, so a
parse alone would not see a field dcemu stopped writing)."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

from dclab.dcemu import records as r

# Fields dcemu leaves out on purpose: absent in virtual time, on a leg without a cell or
# an uplink, with reordering off, while zero, in interval records.
MAY_BE_ABSENT = {"runtime", "cell", "uplink", "rx", "dropped_count_exhausted", "buckets", "x2",
                 # a cell's HARQ and blockage counters, left out while 0
                 "harq_failed", "harq_retx", "harq_lost_packets", "harq_lost_bytes", "blocked_ttis",
                 "rlc_retx", "rlc_retx_packets",
                 # a static split has no flow control; a leg without secondary node events; a
                 # split other than delay-target holds nothing unnumbered
                 "flow", "secondary", "hold",
                 # a queue with tail drop alone has no AQM; a cell's downlink no rate stage's sojourn
                 "aqm", "sojourn",
                 # per flow deliveries: in the summary record only, and none beyond dcemu's limit
                 "flows", "flows_beyond"}


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The record model inside an annotation (``Leg``, ``list[Leg]``, ``Rx | None``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def mismatches(d: dict[str, Any], model: type[BaseModel] = r.Stats, where: str = "") -> list[str]:
    """Every field written but not modelled, or modelled but not written, with its path."""
    out = [f"{where}{k}: written, not in {model.__name__}" for k in d if k not in model.model_fields]
    for name, f in model.model_fields.items():
        if name not in d:
            if name not in MAY_BE_ABSENT:
                out.append(f"{where}{name}: in {model.__name__}, not written")
            continue
        sub = _model_of(f.annotation)
        value = d[name]
        if sub is None or value is None:
            continue
        items = value if isinstance(value, list) else [value]
        for i, item in enumerate(items):
            out += mismatches(item, sub, f"{where}{name}[{i}]." if isinstance(value, list) else f"{where}{name}.")
    return out


def kinds_seen(d: dict[str, Any], model: type[BaseModel] = r.Stats, seen: set[str] | None = None) -> set[str]:
    """The models a record exercised (to say a test saw the cell, the receiver, ...)."""
    seen = set() if seen is None else seen
    seen.add(model.__name__)
    for name, f in model.model_fields.items():
        sub = _model_of(f.annotation)
        if sub is None or d.get(name) is None:
            continue
        for item in d[name] if isinstance(d[name], list) else [d[name]]:
            kinds_seen(item, sub, seen)
    return seen


__all__ = ["MAY_BE_ABSENT", "kinds_seen", "mismatches", "types"]
