"""What a figure shows, carried in its own PNG: every figure dclab writes goes through
``save_figure``, which embeds a short JSON description (a text chunk under the key
``dclab``) that ``figure_info`` reads back, so a PNG says what it draws and which
command drew it, and tests can check a figure's content rather than its size.

Per axes: title, axis labels, legend entries in order, fixed tick labels (categories),
the text annotations, the positions of reference lines across the axes (``axhline``,
``axvline``), and per drawn series (a line, a group of bars, a scatter) its kind, legend
label, number of points, the extent of its data and the mean of its y values; counts and
the extent of all series per axes. A bar's point is its centre and its end (its top, or
its tip for horizontal bars); error bars and shaded spans are not data. No per-point
data: the description stays small.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter  # noqa: E402
from PIL import Image, PngImagePlugin  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from .. import __version__  # noqa: E402
from ..files import check_input, clip, output_file  # noqa: E402

KEY = "dclab"
DPI = 120

Extent = tuple[float, float]


@dataclass(frozen=True)
class SeriesInfo:
    """One drawn series: ``kind`` "line", "bars" or "scatter"; ``label`` as in the legend
    ("" when it has none); ``n`` points (bars); the extents of its finite data and the mean
    of its finite y values (each point counts once, however far apart the points are)."""

    kind: str
    label: str
    n: int
    x: Extent | None
    y: Extent | None
    mean: float | None


@dataclass(frozen=True)
class AxesInfo:
    """One panel. ``lines``, ``bars`` and ``scatters`` count its series of each kind;
    ``x`` and ``y`` are the extents over all of them."""

    title: str
    xlabel: str
    ylabel: str
    legend: list[str]
    xticks: list[str]
    texts: list[str]
    hlines: list[float]
    vlines: list[float]
    lines: int
    bars: int
    scatters: int
    x: Extent | None
    y: Extent | None
    series: list[SeriesInfo]

    def labelled(self, kind: str | None = None) -> list[SeriesInfo]:
        """The series with a legend label (of ``kind`` when given), in drawing order."""
        return [s for s in self.series if s.label and kind in (None, s.kind)]


@dataclass(frozen=True)
class FigureInfo:
    """A figure: its suptitle, the command line and dclab version that drew it, its panels
    in the order they were made."""

    suptitle: str
    command: str
    version: str
    axes: list[AxesInfo]


def _finite(values: Any) -> Any:
    v = np.asarray(values, dtype=float).ravel()
    return v[np.isfinite(v)]


def _extent(values: Any) -> Extent | None:
    v = _finite(values)
    return (float(v.min()), float(v.max())) if v.size else None


def _of(kind: str, label: str, pts: Any) -> SeriesInfo:
    xy = np.asarray(pts, dtype=float).reshape(-1, 2)
    y = _finite(xy[:, 1])
    return SeriesInfo(kind, label, len(xy), _extent(xy[:, 0]), _extent(y), float(y.mean()) if y.size else None)


def _label(artist: Any) -> str:
    text = str(artist.get_label() or "")
    return "" if text.startswith("_") else text  # matplotlib's names for unlabelled artists


def _union(extents: list[Extent | None]) -> Extent | None:
    known = [e for e in extents if e is not None]
    return (min(e[0] for e in known), max(e[1] for e in known)) if known else None


def _series(ax: Axes) -> tuple[list[SeriesInfo], list[float], list[float]]:
    """The axes' series (lines, then bars, then scatters, each in the order drawn), and the
    positions of its horizontal and vertical reference lines."""
    caps: set[int] = set()
    named: dict[int, str] = {}  # an errorbar's line carries no label; its container does
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            line, caplines, _ = c.lines
            caps.update(id(x) for x in caplines)
            if line is not None:
                named[id(line)] = _label(c)
    out: list[SeriesInfo] = []
    hlines: list[float] = []
    vlines: list[float] = []
    for line in ax.lines:
        if id(line) in caps or not isinstance(line, Line2D):
            continue
        in_x, in_y = line.get_transform().contains_branch_seperately(ax.transData)
        xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
        if in_x and in_y:
            out.append(_of("line", named.get(id(line), _label(line)), xy))
        elif in_x and len(xy):
            vlines.append(float(xy[0, 0]))
        elif in_y and len(xy):
            hlines.append(float(xy[0, 1]))
    for c in ax.containers:
        if isinstance(c, BarContainer):
            up = c.orientation != "horizontal"
            out.append(_of("bars", _label(c), [(r.get_x() + r.get_width() / 2, r.get_y() + r.get_height()) if up else
                                               (r.get_x() + r.get_width(), r.get_y() + r.get_height() / 2)
                                               for r in c.patches]))
    for coll in ax.collections:
        if isinstance(coll, PathCollection) and coll.get_offset_transform().contains_branch(ax.transData):
            out.append(_of("scatter", _label(coll), coll.get_offsets()))
    return out, hlines, vlines


def _axes(ax: Axes) -> AxesInfo:
    series, hlines, vlines = _series(ax)
    legend = ax.get_legend()
    ticks, fmt = ax.xaxis.get_major_locator(), ax.xaxis.get_major_formatter()
    xticks: list[str] = []
    if isinstance(ticks, FixedLocator) and isinstance(fmt, (FixedFormatter, FuncFormatter)):  # set_xticks(ticks, labels)
        xticks = [str(fmt(x, i)) for i, x in enumerate(ticks())]
    return AxesInfo(
        title=ax.get_title(), xlabel=ax.get_xlabel(), ylabel=ax.get_ylabel(),
        legend=[t.get_text() for t in legend.get_texts()] if legend else [], xticks=xticks,
        texts=[t.get_text() for t in ax.texts], hlines=hlines, vlines=vlines,
        lines=sum(s.kind == "line" for s in series), bars=sum(s.kind == "bars" for s in series),
        scatters=sum(s.kind == "scatter" for s in series),
        x=_union([s.x for s in series]), y=_union([s.y for s in series]), series=series)


def _command() -> str:
    """The running command line: the program's name, or ``python -m PACKAGE`` for a
    package run as a module, then its arguments."""
    argv = list(sys.argv) or [""]
    prog = Path(argv[0])
    head = [prog.name]
    if prog.name == "__main__.py":
        package: list[str] = []
        d = prog.parent
        while (d / "__init__.py").is_file():
            package.insert(0, d.name)
            d = d.parent
        head = ["python", "-m", ".".join(package) or prog.parent.name]
    return shlex.join([*head, *argv[1:]])


def describe(fig: Figure) -> FigureInfo:
    """What ``fig`` shows (before it is drawn: nothing here changes it)."""
    return FigureInfo(suptitle=fig.get_suptitle(), command=_command(), version=__version__,
                      axes=[_axes(ax) for ax in fig.axes])


def save_figure(fig: Figure, path: Path, dpi: int = DPI) -> Path:
    """Writes ``fig`` as a PNG at ``path`` (parents made) with its description, and closes
    it. Written beside ``path`` and moved in (files.py): a symlink, device or directory
    there is refused (FileRefused), never written through."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(asdict(describe(fig)), separators=(",", ":"))
        with output_file(path, "figure") as tmp:
            fig.savefig(tmp, dpi=dpi, metadata={KEY: text}, format="png")
    finally:
        plt.close(fig)
    return path


_DESCRIPTION = TypeAdapter(FigureInfo)


def figure_info(path: Path) -> FigureInfo:
    """The description ``save_figure`` embedded in the PNG at ``path``; ValueError when
    the file is not a PNG carrying one (OSError when it cannot be read)."""
    check_input(path, "figure")  # a FIFO or a device is refused, not read
    try:
        with Image.open(path) as im:
            if not isinstance(im, PngImagePlugin.PngImageFile):
                raise ValueError(f"{path}: not a PNG")
            text = im.text.get(KEY)
    except (Image.UnidentifiedImageError, Image.DecompressionBombError, SyntaxError) as e:
        raise ValueError(f"{path}: not a PNG dclab can read ({e})") from None
    if not isinstance(text, str):
        raise ValueError(f"{path}: a PNG without a dclab description (not drawn by dclab, or before figures carried one)")
    try:
        # Every field of the type it has when dclab writes it (a PNG may come from anyone).
        return _DESCRIPTION.validate_python(json.loads(text))
    except (ValueError, RecursionError) as e:  # pydantic's ValidationError is a ValueError
        raise ValueError(f"{path}: its dclab description is damaged ({type(e).__name__}: "
                         f"{clip(str(e).splitlines()[0] if str(e) else '')})") from None
