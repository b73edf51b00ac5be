"""matplotlib set up to write files only, shared by every figure module."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # files only; no display
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["Span", "plt"]

Span = tuple[float, float, str]  # a shaded stretch of a time axis: start, end (s), label
