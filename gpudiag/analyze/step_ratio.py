"""How much faster one run is than another, with the interval the runs' own noise allows. Pure.

A ratio of two medians says nothing about whether the runs differ beyond their noise. Two
sources of noise are measured here, both from the runs themselves:

* step to step: the Hodges–Lehmann estimate of the ratio NEW/BASE (the median of every
  pairwise ratio of a NEW step to a BASE step, on a log scale) and its distribution-free
  confidence interval from the Mann–Whitney rank statistic;
* phase to phase: where both runs span several epochs, the ratio of the slowest and fastest
  epoch medians, so a slowdown in a few epochs of one run (another job, thermal throttling)
  widens the interval instead of deciding the answer.

The interval is the union of the two. A change is measurable only when 1.0 lies outside it.

    r = step_ratio([100.0, 101.0, 99.0] * 10, [50.0, 51.0, 49.0] * 10)
    r.ratio, r.interval   # ≈ 0.5, (0.495, 0.505)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# 95% two-sided: the usual level of a confidence interval; the gate then fires on a change
# that would arise from the runs' own noise about once in 40 comparisons.
Z_95 = 1.959964
# Each side's steps are subsampled evenly to this many before the pairwise ratios (256² =
# 65,536 ratios: a millisecond of work, and far beyond what the interval's width needs).
MAX_STEPS = 256
# An epoch median stands for its phase only when it has this many steps (fewer: one slow
# step decides it).
MIN_EPOCH_STEPS = 5


@dataclass(frozen=True)
class StepRatio:
    """NEW step time / BASE step time: point estimate, 95% interval and how it was bounded."""

    ratio: float
    low: float
    high: float
    basis: str  # "steps" | "steps and epochs"

    @property
    def interval(self) -> tuple[float, float]:
        return (self.low, self.high)

    @property
    def measurable(self) -> bool:
        """True when the runs differ beyond their own noise (1.0 lies outside the interval)."""
        return self.high < 1.0 or self.low > 1.0

    def scaled(self, factor: float) -> StepRatio:
        """The same ratio per unit of work, when a step of each run does different work."""
        return StepRatio(self.ratio * factor, self.low * factor, self.high * factor, self.basis)


def evenly(values: list[float] | np.ndarray, limit: int = MAX_STEPS) -> np.ndarray:
    """At most ``limit`` values, taken evenly across the run (every phase keeps its share)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    if arr.size <= limit:
        return arr
    return arr[np.linspace(0, arr.size - 1, limit).round().astype(np.int64)]


def step_ratio(
    base_ms: list[float] | np.ndarray,
    new_ms: list[float] | np.ndarray,
    base_epochs_ms: list[float] | None = None,
    new_epochs_ms: list[float] | None = None,
) -> StepRatio | None:
    """The ratio NEW/BASE of step times and its interval; None without steps on a side."""
    x, y = np.log(evenly(base_ms)), np.log(evenly(new_ms))
    n, m = x.size, y.size
    if not n or not m:
        return None
    diffs = np.sort((y[None, :] - x[:, None]).ravel())
    point = float(np.median(diffs))
    k = math.floor(n * m / 2 - Z_95 * math.sqrt(n * m * (n + m + 1) / 12))
    k = max(0, min(k, diffs.size - 1))
    low, high = float(diffs[k]), float(diffs[diffs.size - 1 - k])
    basis = "steps"
    be = [e for e in base_epochs_ms or [] if e > 0]
    ne = [e for e in new_epochs_ms or [] if e > 0]
    if len(be) >= 2 and len(ne) >= 2:
        low = min(low, math.log(min(ne) / max(be)))
        high = max(high, math.log(max(ne) / min(be)))
        basis = "steps and epochs"
    return StepRatio(math.exp(point), math.exp(low), math.exp(high), basis)


def epoch_medians(run: dict[str, object]) -> list[float]:
    """Median step (ms) of each epoch with enough steps, from ``Diagnosis.run``."""
    out = []
    for e in run.get("epochs") or []:  # type: ignore[attr-defined]
        if isinstance(e, dict) and (e.get("steps") or 0) >= MIN_EPOCH_STEPS:
            ms = e.get("median_ms")
            if isinstance(ms, int | float) and ms > 0:
                out.append(float(ms))
    return out
