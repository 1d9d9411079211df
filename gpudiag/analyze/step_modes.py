"""Whether a run's step times fall in two groups, and what that means for its median. Pure.

A worker pool (``PyDataset(workers=N)``, a DataLoader) fills a queue in bursts: most steps
find their batch waiting and take a few milliseconds, some wait for the next burst and take
many times that. The median step then describes the fast group only and says nothing about
throughput (measured: median 12.2 -> 3.4 ms while samples per second fell to 0.80x).

The split is Otsu's on the logarithm of the step times (the threshold that best separates two
groups); the steps are bimodal when both groups are large, far apart and each tight.

    m = bimodal([1.7] * 70 + [16.0] * 30)
    m["fast_ms"], m["slow_ms"], m["slow_share"]    # 1.7, 16.0, 0.3
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Each group holds at least this share of the steps: fewer slow steps are a tail (an epoch's
# first step, a profiler window's stop), fewer fast ones a backend's artefact (steps a JAX
# run closes at once after a synchronising one: 10-16% of the steps on the H100 recordings).
MIN_MODE_SHARE = 0.2
# The slow group's median is at least this many times the fast group's (a 2x spread is what a
# steady run on a noisy host shows).
MODE_RATIO = 3.0
# Ashman's D between the groups (log scale): above 2 the two are cleanly separated.
SEPARATION = 2.0
MIN_STEPS = 20  # fewer steps: no claim about their distribution


def bimodal(step_ms: list[float] | np.ndarray) -> dict[str, Any] | None:
    """The two groups (median ms of each, share of steps in the slow one), or None."""
    x = np.sort(np.log(np.asarray([v for v in step_ms if v and v > 0], dtype=np.float64)))
    n = x.size
    if n < MIN_STEPS:
        return None
    cuts = np.arange(1, n)  # the fast group is x[:k]
    csum = np.cumsum(x)
    k = cuts
    m1, m2 = csum[k - 1] / k, (csum[-1] - csum[k - 1]) / (n - k)
    best = int(cuts[np.argmax(k * (n - k) * (m1 - m2) ** 2)])
    fast, slow = x[:best], x[best:]
    if min(fast.size, slow.size) < MIN_MODE_SHARE * n:
        return None
    spread = np.sqrt(fast.var() + slow.var())
    d = np.sqrt(2.0) * (slow.mean() - fast.mean()) / max(float(spread), 1e-9)
    fast_ms, slow_ms = float(np.exp(np.median(fast))), float(np.exp(np.median(slow)))
    if slow_ms < MODE_RATIO * fast_ms or d < SEPARATION:
        return None
    return {
        "fast_ms": round(fast_ms, 3),
        "slow_ms": round(slow_ms, 3),
        "slow_share": round(slow.size / n, 3),
    }


# A fast group below this (ms) is no training step's work: the host closed steps whose device
# work had already been queued (asynchronous dispatch, JAX and TF on GPU).
INSTANT_MS = 0.5


def meaning(config: dict[str, Any], modes: dict[str, Any]) -> str:
    """What two groups of steps usually mean for this run."""
    workers = config.get("workers") or 0
    if config.get("input_kind") in ("pydataset", "dataloader") and workers > 1:
        return "a worker pool delivering batches in bursts"
    if modes["fast_ms"] < INSTANT_MS:
        return "steps closed at once while the device worked through queued ones"
    return "batches arriving in bursts, or periodic work between steps"
