"""A verdict from the ranks' step timing alone, when no step has a device profile. Pure.

Under MultiWorkerMirroredStrategy the profiler window is off by default, so no step carries
device activity and the breakdown is empty; yet the callback's step timing of each rank
already says how long each one waits in the collectives for the last to arrive
(analyze/arrival.py). When the ranks wait on average at least the share that makes a
profiled run sync-bound (``SYNC_HIGH``, through ``decide``), the run is sync-bound whatever
the device did: that share is measured, not inferred.

    got = timing_verdict(ranks)   # ranks: RankSummary rows with step_ms and wait_ms filled
    if got: verdict, confidence, reason, shares = got
"""

from __future__ import annotations

from gpudiag.analyze.breakdown import empty_shares, normalised
from gpudiag.analyze.diagnosis import RankSummary
from gpudiag.analyze.verdict import decide

# Step timing sees the wait but not what the rest of the step did (compute, input, host):
# the verdict is certain of the wait, less of the rest.
TIMING_ONLY = 0.8


def timing_verdict(
    ranks: list[RankSummary],
) -> tuple[str, float, str, dict[str, float]] | None:
    """(verdict, confidence, reason, shares) from per-rank step and wait times, or None when
    fewer than two ranks were timed or the ranks wait too little to call the run sync-bound.
    The shares put the wait in ``sync`` and the rest of the step, unmeasured, in ``other``."""
    timed = [r for r in ranks if r.wait_ms is not None and r.step_ms > 0]
    if len(timed) < 2:
        return None
    waits = {r.label: min(1.0, (r.wait_ms or 0.0) / r.step_ms) for r in timed}
    sync = sum(waits.values()) / len(waits)
    shares = normalised({**empty_shares(), "sync": sync, "other": 1.0 - sync})
    verdict, confidence, _ = decide(shares)
    if verdict != "sync-bound":
        return None
    worst = max(timed, key=lambda r: waits[r.label])
    last = min(timed, key=lambda r: waits[r.label])
    reason = (
        f"{worst.label} waits {round(100 * waits[worst.label])}% of its step "
        f"({worst.wait_ms:.1f} ms of {worst.step_ms:.1f} ms) in the collectives for "
        f"{last.label}; the ranks lose {round(100 * sync)}% of their step on average "
        "(callback step timing: no step was profiled, so compute and input are not split "
        "out of the rest)"
    )
    return verdict, confidence * TIMING_ONLY, reason, shares
