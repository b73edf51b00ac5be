"""What a figure shows, read back from the description its PNG carries
(dclab/analysis/figure_info.py), for tests that check a figure's content, not its size."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from dclab.analysis.figure_info import AxesInfo, FigureInfo, SeriesInfo, figure_info

PNG = b"\x89PNG\r\n\x1a\n"


def figure(path: Path, titles: list[str] | None = None, suptitle: str | None = None) -> FigureInfo:
    """The figure at ``path``, a PNG with a description; with ``titles``, its panels' titles
    in order (so also their number), with ``suptitle`` its suptitle."""
    path = Path(path)
    assert path.is_file(), f"no figure at {path}"
    assert path.read_bytes()[:8] == PNG, f"{path} is not a PNG"
    info = figure_info(path)
    if titles is not None:
        assert [a.title for a in info.axes] == titles, f"{path.name}: panels"
    if suptitle is not None:
        assert info.suptitle == suptitle, f"{path.name}: suptitle"
    return info


def check(ax: AxesInfo, **expect: Any) -> AxesInfo:
    """Each given field of the panel (title, xlabel, legend, lines, y, ...) equals its
    expected value (extents compared with pytest.approx)."""
    for name, want in expect.items():
        got = getattr(ax, name)
        if name in ("x", "y", "hlines", "vlines") and isinstance(want, (tuple, list)):
            want = pytest.approx(want)
        assert got == want, f"panel {ax.title!r}: {name} is {got!r}, expected {want!r}"
    return ax


def panel(path: Path, **expect: Any) -> AxesInfo:
    """The one panel of the figure at ``path``, checked as ``check`` does."""
    info = figure(path)
    assert len(info.axes) == 1, f"{Path(path).name}: {len(info.axes)} panels, expected 1"
    return check(info.axes[0], **expect)


def empty(path: Path, message: str, title: str | None = None) -> AxesInfo:
    """The figure that says why there is nothing to show: one panel with the message and
    nothing drawn."""
    ax = panel(path, texts=[message], lines=0, bars=0, scatters=0, legend=[])
    if title is not None:
        check(ax, title=title)
    return ax


def series(ax: AxesInfo, label: str, kind: str | None = None) -> SeriesInfo:
    """The one series of the panel with this legend label (and kind)."""
    found = [s for s in ax.series if s.label == label and kind in (None, s.kind)]
    assert len(found) == 1, f"panel {ax.title!r}: {len(found)} series labelled {label!r}: {ax.series}"
    return found[0]


def spans(values: Iterable[float]) -> Any:
    """The extent of ``values`` (min, max), to compare an extent with."""
    vs = [float(v) for v in values]
    return pytest.approx((min(vs), max(vs)))


def each(*extents: tuple[float, float], rel: float = 1e-6) -> list[Any]:
    """Extents to compare a list of extents with, each within ``rel``."""
    return [pytest.approx(e, rel=rel) for e in extents]
