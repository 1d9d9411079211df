"""Step times of the whole run, not only the profiled steps: every step record in time order,
per-batch times and their weighted quantiles. Pure.

    r = step_records(tl)              # start, end, batches, busy per record
    values, weights = per_batch_times(tl)
    step_stats(timelines, breakdowns) # {"count", "analyzed", "median_ms", "p90_ms", "max_ms"}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpudiag.analyze.breakdown import Breakdown
from gpudiag.trace.model.timeline import Timeline

# ``sample_ms`` holds at most this many steps, taken evenly across the run: enough for the
# shape of the step distribution (step_modes.py), small in the JSON.
MAX_STEPS = 256


def evenly(values: list[float] | np.ndarray, limit: int = MAX_STEPS) -> np.ndarray:
    """At most ``limit`` values, taken evenly across the run (every phase keeps its share)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    if arr.size <= limit:
        return arr
    return arr[np.linspace(0, arr.size - 1, limit).round().astype(np.int64)]


@dataclass
class StepRecords:
    """Step records of the run in time order: single steps (and aggregated groups)."""

    start: np.ndarray
    end: np.ndarray
    batches: np.ndarray
    busy: np.ndarray  # summed step time (µs)

    @property
    def per_batch(self) -> np.ndarray:
        return self.busy / np.maximum(self.batches, 1)

    def __len__(self) -> int:
        return int(self.start.size)


def step_records(tl: Timeline) -> StepRecords:
    st = tl.steps
    order = np.argsort(st.start, kind="stable")
    starts, ends = st.start[order], st.end[order]
    batches = st.batches[order].astype(np.float64)
    busy = ends - starts
    b = tl.step_buckets
    if len(b):
        starts = np.concatenate([starts, b.start])
        ends = np.concatenate([ends, b.end])
        batches = np.concatenate([batches, b.batches.astype(np.float64)])
        busy = np.concatenate([busy, b.busy])
        order = np.argsort(starts, kind="stable")
        starts, ends, batches, busy = starts[order], ends[order], batches[order], busy[order]
    return StepRecords(starts, ends, batches, busy)


def per_batch_times(tl: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """Per-batch step times (µs) over the whole run and how many batches each stands for,
    so that ``steps_per_execution`` > 1 counts every batch; an aggregated group stands in as
    its median for most of its batches, its p90 for its top tenth and its max once."""
    st = tl.steps
    per_step = np.maximum(st.batches, 1)
    values = [(st.end - st.start) / per_step]
    weights = [per_step.astype(np.float64)]
    b = tl.step_buckets
    if len(b):
        n = b.batches.astype(np.float64)
        top = np.floor(n / 10)
        values += [b.p50, b.p90, b.max]
        weights += [np.maximum(n - top - 1, 0), top, np.ones(len(b))]
    return np.concatenate(values), np.concatenate(weights)


def weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The ``q`` quantile (0..1) of values each counted ``weights`` (whole) times; the same
    interpolation as ``np.percentile`` up to a million values, nearest rank beyond (memory
    stays bounded for runs of millions of steps)."""
    if weights.sum() <= 1_000_000:
        return float(np.percentile(np.repeat(values, weights.astype(np.int64)), 100 * q))
    keep = weights > 0
    v, w = values[keep], weights[keep]
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    cum = np.cumsum(w)
    return float(v[min(int(np.searchsorted(cum, q * cum[-1], side="left")), v.size - 1)])


def step_stats(timelines: list[Timeline], parts: list[Breakdown]) -> dict[str, object]:
    """Step-time figures of the whole run, per batch (``steps_per_execution`` counts every
    batch; aggregated step groups weighted by their batches)."""
    pairs = [per_batch_times(tl) for tl in timelines]
    durations = np.concatenate([v for v, _ in pairs]) if pairs else np.zeros(0)
    weights = np.concatenate([w for _, w in pairs]) if pairs else np.zeros(0)
    analyzed = sum(b.steps_analyzed for b in parts)
    if not len(durations) or weights.sum() <= 0:
        return {"count": 0, "analyzed": 0}
    return {
        "count": int(weights.sum() + 0.5),
        "analyzed": int(analyzed),
        "median_ms": round(weighted_quantile(durations, weights, 0.5) / 1000.0, 3),
        "p90_ms": round(weighted_quantile(durations, weights, 0.9) / 1000.0, 3),
        "max_ms": round(float(np.max(durations)) / 1000.0, 3),
        # evenly across the run: the shape of the step distribution (analyze/step_modes.py)
        "sample_ms": [round(float(v) / 1000.0, 3) for v in evenly(_each_batch(durations, weights))],
    }


def _each_batch(durations: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """One value per batch, in run order, where that stays small; the values alone beyond."""
    if weights.sum() > 1_000_000:
        return durations
    return np.repeat(durations, np.maximum(weights, 0).astype(np.int64))
