"""Stragglers: one rank (or device) consistently slower than the others. Pure.

In synchronous training every rank waits for the slowest at the all-reduce, so step times
equalise; what differs is the *work* before the wait. We compare per-step work time
(step time minus exposed sync) across ranks, step by step.

    f = find_straggler({"rank 0": [10.1, 10.0, 9.9], "rank 1": [13.0, 12.8, 13.1]})
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding


def find_straggler(work_us: dict[str, list[float]]) -> Finding | None:
    """``work_us``: entity -> per-step work time, aligned by step position."""
    if len(work_us) < 2:
        return None
    n = min(len(v) for v in work_us.values())
    if n < T.STRAGGLER_MIN_STEPS:
        return None
    names = list(work_us)
    m = np.array([work_us[k][:n] for k in names])  # entities x steps
    best: Finding | None = None
    for i, name in enumerate(names):
        others = np.delete(m, i, axis=0)
        ref = np.median(others, axis=0)
        ratio = m[i] / np.maximum(ref, 1e-9)
        late = ratio >= 1.0 + T.STRAGGLER_MARGIN
        consistency = float(np.mean(late))
        if consistency >= T.STRAGGLER_CONSISTENCY:
            slow = float(np.median(ratio) - 1.0)
            cand = Finding(
                id="straggler",
                severity="high" if slow >= 0.25 else "moderate",
                title=f"{name} is consistently slower than the others ({100 * slow:.0f}%)",
                evidence={
                    "straggler": name,
                    "median_slowdown_pct": round(100 * slow, 1),
                    "late_in_steps_pct": round(100 * consistency, 1),
                    "steps_compared": n,
                    "entities": len(names),
                },
            )
            if best is None or slow > best.evidence["median_slowdown_pct"] / 100:
                best = cand
    return best
