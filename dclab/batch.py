"""How dcemu's static split divides a batch of PDUs among the legs, in whole packets
(emu/src/pdcp/tx.rs, SplitPattern::new): largest-remainder rounding, ties to the lower
leg, a zero weight gets none. A batch too small for the ratio sends another one (5:95 in a
batch of 10 is 1:9), so titles and run headers say what was sent."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

EXACT = 1e-9  # percentage points: a share this close to the asked one is sent as asked
MAX_SUGGESTED = 1000  # the largest batch suggested to send a ratio exactly


def shares(batch: int, ratio: Sequence[float]) -> list[int]:
    """PDUs per leg in one batch of ``batch``; ``ratio`` has a positive weight (the
    scenario checks it)."""
    total = sum(ratio)
    quotas = [batch * w / total for w in ratio]
    out = [math.floor(q) for q in quotas]
    order = sorted((i for i, w in enumerate(ratio) if w > 0), key=lambda i: (-(quotas[i] - math.floor(quotas[i])), i))
    for i in itertools.islice(itertools.cycle(order), batch - sum(out)):
        out[i] += 1
    return out


def is_exact(batch: int, ratio: Sequence[float]) -> bool:
    """Whether a batch of ``batch`` sends ``ratio`` exactly."""
    return off_by_points(batch, ratio) < EXACT


def exact_batch(ratio: Sequence[float]) -> int | None:
    """The smallest batch that sends ``ratio`` exactly (None: none up to MAX_SUGGESTED)."""
    return next((b for b in range(1, MAX_SUGGESTED + 1) if is_exact(b, ratio)), None)


def off_by_points(batch: int, ratio: Sequence[float]) -> float:
    """How far the sent shares are from the asked ones, in percentage points (the worst leg)."""
    total = sum(ratio)
    return max(abs(100 * s / batch - 100 * w / total) for s, w in zip(shares(batch, ratio), ratio, strict=True))


def text(parts: Sequence[float]) -> str:
    """A ratio or the PDUs a batch sends as written in titles and warnings: 5:95, 1:19."""
    return ":".join(f"{x:g}" for x in parts)
