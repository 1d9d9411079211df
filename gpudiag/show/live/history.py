"""Binning a counter's samples into the columns of a history strip, apart from any drawing.

    values, bin_s = columns(points, cols=60, bin_s=0.5)
    # values[i]: mean of the samples in column i (None: no sample); bin_s: seconds per column

Columns sit on a fixed time grid, so between frames the strip scrolls by whole columns instead
of re-binning (and flickering) each time a new sample arrives.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence


def columns(
    points: Sequence[tuple[float, float]], cols: int, bin_s: float, end_us: float | None = None
) -> tuple[list[float | None], float]:
    """Mean per column over the last ``cols`` columns ending at ``end_us`` (default: the
    newest sample); returns (values, seconds per column). Empty columns: None. ``points`` are
    (timestamp µs, value), sorted by time; ``bin_s`` is the finest column."""
    if cols <= 0 or not points:
        return [None] * max(cols, 0), bin_s
    ts = [p[0] for p in points]
    # a column never narrower than the typical spacing, or it would show false holes
    recent = ts[-12:]
    gaps = sorted(b - a for a, b in itertools.pairwise(recent) if b > a)
    spacing = gaps[len(gaps) // 2] / 1e6 if gaps else bin_s
    bin_s = max(bin_s, spacing * 1.05)
    width = bin_s * 1e6
    end = math.ceil((ts[-1] if end_us is None else end_us) / width) * width
    start = end - cols * width
    i = bisect.bisect_right(ts, start)
    sums = [0.0] * cols
    counts = [0] * cols
    for t, v in points[i:]:
        if t > end:
            break
        c = min(cols - 1, int((t - start) / width))
        sums[c] += v
        counts[c] += 1
    return [s / n if n else None for s, n in zip(sums, counts, strict=True)], bin_s
