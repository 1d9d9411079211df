"""``untraced-time``: a large part of the step holds no traced host or device activity.

Why it matters: a step cut from the device's own step line can span seconds in which the
profiler recorded nothing, neither on the host threads nor on the GPU: Python running between
steps, callbacks (TensorBoard's writer, checkpoints, a custom ``on_batch_end``), or the
profiler itself starting or stopping inside the step (TensorBoard's ``profile_batch`` does).
The shares of such a step are mostly "other"; this finding says how much is untraced and what
it may be, so that nothing is concluded from the traced sliver alone (the verdict is taken on
the whole step, where the untraced time counts as unexplained idle: inconclusive when it
dominates). Rules that would explain idle time by what was traced (``kernel-launch-bound``)
stand down when this one holds.

Example: "5.86 s per step (98.2%) holds no traced host or device activity: Python between
steps, callbacks (...), or the profiler itself starting or stopping in this step". Fix: none
estimated (the profile does not show what runs there): the title says where to look, profile
steady-state steps and time the callbacks.

    share = untraced_share(timeline)   # of the profiled steps' time, or None
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze.breakdown import profiled_steps
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.trace.model.timeline import HOST_ACTIVITY, Intervals, Timeline, union_many

ID = "untraced-time"
# A fifth of the step untraced changes what its shares mean (the bound, and xprof's
# "All others" HIGH line is 15%); half of it untraced means the traced part is the minority.
UNTRACED_SHARE = 0.20
UNTRACED_HIGH = 0.50
MAY_BE = (
    "Python between steps, callbacks (TensorBoard writer, checkpoints, on_batch_end), or "
    "the profiler itself starting or stopping in this step"
)


def untraced(tl: Timeline) -> tuple[float, float, int] | None:
    """(untraced µs, step µs, steps) over the profiled steps; None when the trace holds no
    record of its host activity (then nothing can be said)."""
    host = tl.meta.extra.get(HOST_ACTIVITY)
    idx = profiled_steps(tl)
    if not isinstance(host, Intervals) or not len(host) or not idx.size:
        return None
    lo, hi = tl.steps.start[idx], tl.steps.end[idx]
    until = tl.meta.extra.get("host_activity_until_us")
    if isinstance(until, int | float):  # host activity known only before there
        keep = hi <= until
        lo, hi = lo[keep], hi[keep]
        if not lo.size:
            return None
    traced = union_many([host, *tl.activity.values()])
    step_us = float(np.sum(hi - lo))
    covered = float(np.sum(traced.covered_in(lo, hi)))
    return max(0.0, step_us - covered), step_us, int(lo.size)


def untraced_share(tl: Timeline) -> float | None:
    found = untraced(tl)
    return found[0] / found[1] if found and found[1] > 0 else None


def detect(ev: RankEvidence) -> Finding | None:
    found = untraced(ev.timeline)
    if found is None or found[1] <= 0:
        return None
    gap_us, step_us, steps = found
    share = gap_us / step_us
    if share < UNTRACED_SHARE:
        return None
    per_step_s = gap_us / steps / 1e6
    return Finding(
        ID,
        "high" if share >= UNTRACED_HIGH else "moderate",
        f"{per_step_s:.2f} s per step ({pct(share)}%) holds no traced host or device "
        f"activity: {MAY_BE}; profile steady-state steps (profile_batch=(10, 15)) and time "
        "the callbacks",
        {
            "untraced_share_pct": pct(share),
            "untraced_per_step_s": round(per_step_s, 3),
            "step_s": round(step_us / steps / 1e6, 3),
            "steps": steps,
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    """No remedy: the profile does not show what runs there, so no change and no gain can
    be named (the finding says where to look)."""
    return []
