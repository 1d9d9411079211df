"""Device work and input waits that outlast their profile many times over: dropped, named.

Each reader drops times beyond its format's bounds (a duration over 30 days in JSON, over a
day in an XSpace). Within them a time can still be impossible for its trace: a kernel of one
day less a picosecond in a 200 ms profile covered every step, and the run read as
compute-bound with confidence 0.95. An interval longer than ``MIN_OVERLONG_S`` and more than
``OVERLONG_FACTOR`` times the span over which the trace's other events start (steps, device
activity, input waits) is dropped, and the limitations say how many and how long.

    n = drop_overlong(timeline)     # after a reader, before the analysis
"""

from __future__ import annotations

import numpy as np

from gpudiag.trace.model.timeline import Intervals, Timeline

# a kernel or a wait of a minute is already exceptional in training; one lasting ten times
# the span of the whole profile did not happen in it
MIN_OVERLONG_S = 60.0
OVERLONG_FACTOR = 10.0


def drop_overlong(tl: Timeline) -> int:
    """Drop the overlong intervals of ``tl``'s device activity and input waits (in place);
    how many were dropped."""
    sets = [*tl.activity.values(), tl.input_wait]
    longest = max((_longest(iv) for iv in sets), default=0.0)
    if longest <= MIN_OVERLONG_S * 1e6:
        return 0  # the common case: one pass over the durations
    span = _span_of_others(tl, sets)
    limit = max(MIN_OVERLONG_S * 1e6, OVERLONG_FACTOR * span)
    dropped = 0
    worst = 0.0
    for key, iv in list(tl.activity.items()):
        kept, n, w = _without_overlong(iv, limit)
        dropped, worst = dropped + n, max(worst, w)
        if n:
            tl.activity[key] = kept
    kept, n, w = _without_overlong(tl.input_wait, limit)
    if n:
        tl.input_wait = kept
        dropped, worst = dropped + n, max(worst, w)
    if dropped:
        tl.activity = {k: v for k, v in tl.activity.items() if len(v)}
        tl.meta.limitations.append(
            f"{dropped:,} device event{'s' if dropped > 1 else ''} or input wait"
            f"{'s' if dropped > 1 else ''} lasting up to {_human(worst)} in a profile whose "
            f"events start within {_human(span)} dropped (an impossible time: a corrupt or "
            "wrapped duration)"
        )
    return dropped


def _longest(iv: Intervals) -> float:
    return float(np.max(iv.ends - iv.starts)) if len(iv) else 0.0


def _span_of_others(tl: Timeline, sets: list[Intervals]) -> float:
    """The span over which the events that are not overlong start (µs)."""
    lo, hi = np.inf, -np.inf
    limit = MIN_OVERLONG_S * 1e6
    starts = [tl.steps.start] + [iv.starts[(iv.ends - iv.starts) <= limit] for iv in sets]
    for s in starts:
        if s.size:
            lo, hi = min(lo, float(s.min())), max(hi, float(s.max()))
    return max(0.0, hi - lo) if hi >= lo else 0.0


def _without_overlong(iv: Intervals, limit: float) -> tuple[Intervals, int, float]:
    long = (iv.ends - iv.starts) > limit
    n = int(long.sum())
    if not n:
        return iv, 0, 0.0
    worst = float((iv.ends - iv.starts)[long].max())
    return Intervals(iv.starts[~long], iv.ends[~long]), n, worst


def _human(us: float) -> str:
    s = us / 1e6
    if s >= 3600:
        return f"{s / 3600:,.1f} h"
    if s >= 1:
        return f"{s:,.1f} s"
    return f"{us / 1e3:,.1f} ms"
