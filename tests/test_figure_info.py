"""The description every figure carries in its PNG (dclab/analysis/figure_info.py): what a
hand-made figure draws is read back exactly, the pixels are those of a plain savefig, and
`dclab figure` says it."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from click.testing import CliRunner
from figure_checks import check, figure, series
from PIL import Image

import dclab
from dclab import __version__
from dclab.analysis.figure_info import figure_info, save_figure
from dclab.cli import app


def _draw():
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.6))
    left.errorbar([1, 2, 3], [2.0, 4.0, 3.0], yerr=[0.5, 0.5, 9.0], capsize=3, label="mean")  # the whiskers are not data
    left.plot([0.5, 1.0, math.nan], [1.0, math.nan, 8.0], label="gappy")
    left.plot([1, 2], [0.0, 0.0])  # unlabelled
    left.axhline(5.0, linestyle="--")
    left.axvline(2.5)
    left.axvspan(0, 1, label="shaded")  # a span is not data
    left.scatter([4.0, 6.0], [-1.0, 1.0], label="points")
    left.text(1, 1, "JFI 0.93\nratio 0.50")
    left.set_title("left")
    left.set_xlabel("x (s)")
    left.set_ylabel("y (Mbit/s)")
    left.legend()
    right.bar([0.0, 1.0, 2.0], [3.0, 7.0, 5.0], 0.4, yerr=[1.0, 1.0, 1.0], capsize=2, label="flow a")
    right.bar([0.4, 1.4], [2.0, 1.0], 0.4, bottom=[1.0, 1.0], label="flow b")  # stacked: tips at 3 and 2
    right.set_xticks([0.2, 1.2, 2.2], ["0", "0.1", "1"])
    right.legend()
    fig.suptitle("both")
    fig.tight_layout()
    return fig


def test_a_figure_reads_back_as_drawn(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/opt/venv/bin/dclab", "plot", "my campaign"])
    info = figure(save_figure(_draw(), tmp_path / "sub" / "f.png"), ["left", ""], "both")
    assert info.command == "dclab plot 'my campaign'" and info.version == __version__
    left = check(info.axes[0], xlabel="x (s)", ylabel="y (Mbit/s)", legend=["gappy", "shaded", "points", "mean"],
                 lines=3, bars=0, scatters=1, texts=["JFI 0.93\nratio 0.50"], hlines=[5.0], vlines=[2.5], xticks=[],
                 x=(0.5, 6.0), y=(-1.0, 8.0))
    assert [(s.kind, s.label, s.n) for s in left.series] == [("line", "mean", 3), ("line", "gappy", 3), ("line", "", 2),
                                                             ("scatter", "points", 2)]
    assert series(left, "mean").y == (2.0, 4.0) and series(left, "mean").mean == 3.0, "whiskers left out"
    gappy = series(left, "gappy")
    assert gappy.x == (0.5, 1.0) and gappy.y == (1.0, 8.0) and gappy.mean == 4.5, "finite values only"
    assert [s.label for s in left.labelled("line")] == ["mean", "gappy"]
    right = check(info.axes[1], bars=2, lines=0, legend=["flow a", "flow b"], xticks=["0", "0.1", "1"], x=(0.0, 2.0),
                  y=(2.0, 7.0))
    assert series(right, "flow a", "bars").y == (3.0, 7.0) and series(right, "flow a").mean == 5.0
    assert series(right, "flow b").y == (2.0, 3.0) and series(right, "flow b").mean == 2.5, "tips of stacked bars"
    assert series(right, "flow a").x == (0.0, 2.0), "a bar's centre"


def test_the_pixels_are_those_of_a_plain_savefig(tmp_path):
    save_figure(_draw(), tmp_path / "described.png")
    fig = _draw()
    fig.savefig(tmp_path / "plain.png", dpi=120)
    plt.close(fig)
    with Image.open(tmp_path / "described.png") as a, Image.open(tmp_path / "plain.png") as b:
        assert a.size == b.size and np.array_equal(np.asarray(a), np.asarray(b))
        assert "dclab" in a.text and "dclab" not in b.text


def test_a_png_without_a_description_is_refused(tmp_path):
    Image.new("RGB", (4, 4)).save(tmp_path / "other.png")
    with pytest.raises(ValueError, match="without a dclab description"):
        figure_info(tmp_path / "other.png")
    Image.new("RGB", (4, 4)).save(tmp_path / "other.jpg")
    with pytest.raises(ValueError, match="not a PNG"):
        figure_info(tmp_path / "other.jpg")
    r = CliRunner().invoke(app, ["figure", str(tmp_path / "other.png")])
    assert r.exit_code == 1 and "without a dclab description" in r.output


def test_dclab_figure_says_what_a_png_shows(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(Path(dclab.__file__).parent / "cli" / "__main__.py"), "report", "smoke"])
    path = save_figure(_draw(), tmp_path / "f.png")
    r = CliRunner().invoke(app, ["figure", str(path)])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"{path}: drawn by `python -m dclab.cli report smoke` (dclab {__version__}): both"
    assert lines[1:5] == ["  panel 1: left", "    x: x (s), data 0.5 to 6", "    y: y (Mbit/s), data -1 to 8",
                          "    3 lines, 0 groups of bars, 1 scatters; legend: gappy | shaded | points | mean"]
    assert "    text: JFI 0.93 ratio 0.50" in lines and "  panel 2: (no title)" in lines
    r = CliRunner().invoke(app, ["figure", "--json", str(path)])
    d = json.loads(r.output)
    assert d["path"] == str(path) and [a["bars"] for a in d["axes"]] == [0, 2]
