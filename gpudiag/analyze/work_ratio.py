"""How much faster one run is than another, in work per second, with the interval the runs'
own noise allows. Pure.

The figure is what a user's wall clock says: time per batch NEW/BASE over each run's steady
part (``throughput.py``: whole epochs after the first, or the steps after warm-up), per sample
when the batches differ. The interval comes from a bootstrap that respects how that time is
made up:

* where a run has several epochs, the epochs are resampled first (a slow phase of one run,
  another job's, shows as epoch-to-epoch spread instead of deciding the answer);
* within each chosen epoch, its blocks of consecutive steps are resampled, except the one that
  opens it (the iterator's start: a worker pool restarted, a shuffle buffer filled — one per
  epoch, kept with its epoch);
* a run of recorded steps without epochs resamples all its blocks; with few of them the
  interval is widened by Student's t over the normal quantile (a bootstrap of a handful of
  values is too narrow).

The ratio is of totals (time over batches), never of medians: a worker pool that delivers most
batches at once and some late has a small median step and the same throughput.

    r = work_ratio(base_throughput, new_throughput)
    r.ratio, r.interval, r.measurable
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# Resamples of each run: the 2.5% and 97.5% quantiles of 2000 ratios move by about 1% of the
# interval's width between seeds, far below what the runs' own noise decides.
RESAMPLES = 2000
SEED = 0  # the same two runs give the same interval every time
# Student's t at 97.5% for 1..29 degrees of freedom; 30 and more: the normal 1.96.
T_975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045,
)  # fmt: skip
Z_975 = 1.959964


@dataclass(frozen=True)
class WorkRatio:
    """NEW time per unit of work / BASE's: point (of totals), 95% interval, what it rests on."""

    ratio: float
    low: float
    high: float
    basis: str

    @property
    def interval(self) -> tuple[float, float]:
        return (self.low, self.high)

    @property
    def measurable(self) -> bool:
        """True when the runs differ beyond their own noise (1.0 lies outside the interval)."""
        return self.high < 1.0 or self.low > 1.0

    def scaled(self, factor: float) -> WorkRatio:
        """The same ratio per unit of work, when a step of each run does different work."""
        return WorkRatio(self.ratio * factor, self.low * factor, self.high * factor, self.basis)


def _stretches(t: dict[str, Any]) -> list[np.ndarray]:
    """Each stretch's blocks as rows of (batches, seconds), in order."""
    rows = np.asarray(t.get("blocks") or [], dtype=np.float64).reshape(-1, 3)
    return [rows[rows[:, 0] == k][:, 1:] for k in np.unique(rows[:, 0])]


def _resampled(t: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Seconds per batch of ``RESAMPLES`` bootstrap copies of one run's steady part."""
    parts = _stretches(t)
    keep_opening = t.get("basis") == "epochs"
    sums = np.zeros((RESAMPLES, len(parts), 2))
    for k, blocks in enumerate(parts):
        fixed = blocks[:1] if keep_opening else blocks[:0]
        pool = blocks[len(fixed) :]
        if pool.size:
            pick = rng.integers(0, len(pool), size=(RESAMPLES, len(pool)))
            sums[:, k] = pool[pick].sum(axis=1)
        sums[:, k] += fixed.sum(axis=0)
    if len(parts) > 1:  # the epochs themselves, with replacement
        which = rng.integers(0, len(parts), size=(RESAMPLES, len(parts)))
        sums = np.take_along_axis(sums, which[:, :, None], axis=1)
    total = sums.sum(axis=1)
    return total[:, 1] / np.maximum(total[:, 0], 1e-12)


def _units(t: dict[str, Any]) -> int:
    """How many values the bootstrap of a run resamples at its top level."""
    parts = _stretches(t)
    return len(parts) if len(parts) > 1 else max(1, len(parts[0]) if parts else 0)


def widening(n: int) -> float:
    """How much wider a percentile interval over ``n`` resampled values must be (Student's t
    over the normal quantile, with the n/(n-1) variance correction); 1 from 30 on."""
    if n >= 30:
        return 1.0
    if n < 2:
        return 1.0
    return T_975[n - 2] / Z_975 * math.sqrt(n / (n - 1))


def work_ratio(base: dict[str, Any] | None, new: dict[str, Any] | None) -> WorkRatio | None:
    """NEW's time per batch over BASE's and its 95% interval; None without a steady part on a
    side. ``base``/``new``: ``Diagnosis.run["throughput"]``."""
    if not base or not new or not base.get("blocks") or not new.get("blocks"):
        return None
    point = (new["seconds"] / new["batches"]) / (base["seconds"] / base["batches"])
    rng = np.random.default_rng(SEED)
    b, n = _resampled(base, rng), _resampled(new, rng)
    logs = np.log(n / b)
    lo, hi = (float(x) for x in np.percentile(logs, [2.5, 97.5]))
    centre = math.log(point)
    few = [_units(x) for x in (base, new) if len(_stretches(x)) == 1]
    if few:  # a run of few steps: the bootstrap's spread is too narrow by this much
        w = max(widening(k) for k in few)
        lo, hi = centre - w * (centre - lo), centre + w * (hi - centre)
    lo, hi = min(lo, centre), max(hi, centre)
    basis = " and ".join(sorted({str(x.get("basis")) for x in (base, new)}))
    return WorkRatio(point, math.exp(lo), math.exp(hi), basis)
