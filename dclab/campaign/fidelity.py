"""The report's fidelity page: dclab's measurements beside published values that the user
gives in a reference file (dclab ships none), point by point, with the ratio.

A reference file is TOML, one ``[[point]]`` per published value::

    [[point]]
    experiment = "throughput"           # a registered experiment
    sweep = "loss"                      # the campaign's sweep ("none" for a group without one)
    value = 0.2                         # the swept value, as the campaign ran it
    series = "aioquic reno quic-large"  # optional: the report's series label; omitted: every series
    metric = "goodput_mbps"             # optional: default the experiment's first metric
    published = 7.6
    source = "Fig. 7"                   # optional: where the value comes from

A point is matched to the stored runs of its experiment and sweep whose value equals
``value`` (to 1e-9) and, when given, whose series label (as in the report's figures) is
``series``; dclab's figure is the mean, standard deviation and count of the metric over
those runs that succeeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..analysis import figures
from ..analysis.metrics import mean_std
from ..analysis.stored_run import AnyRun
from ..errors import OptionError
from ..experiments import experiments
from ..experiments.base import Table, _fmt
from ..files import FileRefused, read_toml


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    experiment: str
    sweep: str
    value: float
    series: str | None = None
    metric: str | None = None
    published: float
    source: str = ""


class ReferenceFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    point: list[Point] = Field(min_length=1, max_length=10_000)


def load_reference(path: Path) -> list[Point]:
    """The points of a reference file; errors name the file, the point and the field."""
    try:
        data = read_toml(path, "--reference")
    except FileRefused as e:
        raise OptionError(str(e)) from None
    try:
        points = ReferenceFile.model_validate(data).point
    except ValidationError as e:
        err = e.errors()[0]
        where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"]).lstrip(".")
        raise OptionError(f"--reference {path}: {where or 'file'}: {err['msg']}") from None
    known = experiments()
    for i, p in enumerate(points):
        exp = known.get(p.experiment)
        if exp is None:
            raise OptionError(f"--reference {path}: point[{i}].experiment: unknown {p.experiment!r} "
                                f"(one of {', '.join(known)})")
        names = [m.name for m in exp.metrics]
        if p.metric is not None and p.metric not in names:
            raise OptionError(f"--reference {path}: point[{i}].metric: {p.experiment} has {', '.join(names)} "
                                f"(got {p.metric!r})")
        if not math.isfinite(p.published):
            raise OptionError(f"--reference {path}: point[{i}].published: must be a finite number")
    return points


@dataclass(frozen=True)
class Compared:
    """What dclab measured at a published point: mean, std and n of the successful runs,
    the failed runs, the series matched, and the ratio measured / published (None without
    a measurement or when published is 0)."""

    point: Point
    metric: str
    mean: float | None
    std: float | None
    n: int
    failed: int
    series: list[str]
    ratio: float | None
    digits: int


def compare(rows: Sequence[AnyRun], points: list[Point]) -> list[Compared]:
    """Per point, what dclab measured there (``Compared``)."""
    known = experiments()
    out = []
    for p in points:
        metrics = {m.name: m for m in known[p.experiment].metrics}
        metric = p.metric or known[p.experiment].metrics[0].name
        at = [r for r in rows if r.experiment == p.experiment and (r.sweep or "none") == p.sweep
              and r.value_num is not None and abs(r.value_num - p.value) <= 1e-9]
        labels = figures.series_of(at) if at else {}
        mine = [r for r in at if p.series is None or labels[r.run_key] == p.series]
        ok = [r for r in mine if r.ok and r.metric(metric) is not None]
        ms = mean_std([r.metric(metric) for r in ok])
        ratio = ms.mean / p.published if ms.mean is not None and p.published else None
        out.append(Compared(point=p, metric=metric, mean=ms.mean, std=ms.std, n=ms.n, failed=len(mine) - len(ok),
                            series=sorted({labels[r.run_key] for r in mine}), ratio=ratio,
                            digits=metrics[metric].digits))
    return out


def fidelity_table(compared: list[Compared]) -> Table:
    rows, failed = [], []
    for c in compared:
        p = c.point
        series = p.series or (", ".join(c.series) if c.series else "-")
        rows.append([f"{p.experiment}: {p.sweep} = {p.value:g}", series, c.metric, _fmt(c.mean, c.digits),
                     _fmt(c.std, c.digits), str(c.n), str(c.failed), f"{p.published:g}", _fmt(c.ratio, 3),
                     p.source or "-"])
        failed.append(c.n == 0)
    return Table(["point", "series", "metric", "dclab mean", "std", "n", "failed", "published", "dclab / published",
                  "source"], rows, failed, text_columns=3)
