"""``straggler`` (run rule): one rank (or device) consistently slower than the others.

Why it costs time: in synchronous training every rank waits for the slowest at the
all-reduce, so step times equalise and the whole run goes at the straggler's pace; what
differs is the *work* before the wait.

Across ranks the rule takes who arrives last at the collectives (analyze/arrival.py, found by
the facade); within one process it compares the replicas' per-step work time (step time less
exposed sync), step by step.

Example: "The other ranks wait for rank 3: 20% of their step (2.1 ms) in the collectives", or
within a process "GPU 1 is consistently slower than the others (30%)". Fix: investigate it:
its data shard, host load, thermal throttling, NIC/NVLink placement.

    >>> f = find_straggler({"rank 0": [10.1, 10.0, 9.9], "rank 1": [13.0, 12.8, 13.1]})
    >>> f.title, f.severity
    ('rank 1 is consistently slower than the others (29%)', 'high')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RunEvidence, Situation, pct, shown
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs

ID = "straggler"
NEEDS = {"investigate-straggler": Needs()}
# a rank this much slower than the median of the others sets the whole run a quarter
# slower than it could go: high severity
SLOWDOWN_HIGH = 0.25


def detect_run(run: RunEvidence) -> Finding | None:
    """Across ranks by arrival order at the collectives (analyze/arrival.py), else across the
    replicas of one process by per-step work time."""
    if run.waited_for is not None:
        return run.waited_for
    for b in run.breakdowns:
        if len(b.work_us) > 1:
            # compare devices, not ranks: in-process replicas share one step clock
            f = find_straggler(b.work_us)
            if f:
                return f
    return None


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    if f.measured is None:
        return []
    if "others_wait_share_pct" in f.evidence:  # across ranks: measured is the others' wait
        # the others stop waiting for it: their wait share disappears
        wait = f.measured
        g = Gain.of(
            removed(wait),
            1.0,
            removed(wait),
            f"the other ranks wait {pct(wait):.0f}% of their step for it",
        )
    else:  # within a process: measured is its slowdown against the median of the others
        slow = f.measured
        g = Gain.of(
            1.0 + slow,
            1.0,
            1.0 + slow,
            f"the straggler is {shown(slow):.0%} slower than the median rank",
        )
    return [
        g.suggestion(
            f"Investigate {f.evidence.get('straggler')}",
            "Everyone waits for the slowest rank at each all-reduce: check its data shard "
            "size, host load, thermal throttling (NVML clocks) and NIC/NVLink placement.",
            ID,
            "investigate-straggler",
        )
    ]


# device x step cells the comparison holds: a steady slowdown shows in any spread of steps
MAX_COMPARED_CELLS = 1_000_000


def find_straggler(work_us: Mapping[str, Sequence[float] | np.ndarray]) -> Finding | None:
    """``work_us``: entity -> per-step work time, aligned by step position. Each entity is
    compared, step by step, with the median of the others: one sort per step for all of
    them (a median of a copy per entity was quadratic in the entities)."""
    if len(work_us) < 2:
        return None
    n = min(len(v) for v in work_us.values())
    if n < T.STRAGGLER_MIN_STEPS:
        return None
    names = list(work_us)
    cols = np.arange(n)
    if len(names) * n > MAX_COMPARED_CELLS:  # evenly spread steps
        keep = max(T.STRAGGLER_MIN_STEPS, MAX_COMPARED_CELLS // len(names))
        cols = np.unique(np.linspace(0, n - 1, keep).astype(np.int64))
    m = np.array([np.asarray(work_us[k], dtype=np.float64)[cols] for k in names])
    ratio = m / np.maximum(median_of_others(m), 1e-9)  # entities x steps
    consistency = np.mean(ratio >= 1.0 + T.STRAGGLER_MARGIN, axis=1)
    slow = np.median(ratio, axis=1) - 1.0
    candidates = np.flatnonzero(consistency >= T.STRAGGLER_CONSISTENCY)
    if not candidates.size:
        return None
    i = int(candidates[np.argmax(slow[candidates])])  # the slowest, the first among equals
    worst = float(slow[i])
    return Finding(
        id="straggler",
        severity="high" if worst >= SLOWDOWN_HIGH else "moderate",
        title=f"{names[i]} is consistently slower than the others ({100 * worst:.0f}%)",
        evidence={
            "straggler": names[i],
            "median_slowdown_pct": round(100 * worst, 1),
            "late_in_steps_pct": round(100 * float(consistency[i]), 1),
            "steps_compared": int(cols.size),
            "entities": len(names),
        },
        measured=worst,
    )


def median_of_others(m: np.ndarray) -> np.ndarray:
    """For each row and column of ``m`` (entities x steps), the median of the column
    without that row (``np.median`` of the others), from one sort of each column."""
    rows = m.shape[0]
    order = np.argsort(m, axis=0, kind="stable")
    ordered = np.take_along_axis(m, order, axis=0)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(rows)[:, None], axis=0)
    others = rows - 1

    def kth(k: int) -> np.ndarray:  # the k-th smallest of the others, per row and column
        return np.take_along_axis(ordered, k + (rank <= k), axis=0)

    if others % 2:
        return kth(others // 2)
    return (kth(others // 2 - 1) + kth(others // 2)) / 2.0
