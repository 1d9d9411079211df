"""Time the host spends blocked in allocator or synchronising API calls, and the device idle
it causes. Shared by ``allocator-stalls`` and ``host-sync-stalls``. Pure.

    w = windows(ev)                              # analysed steps, else the device window
    share = exposed_share(calls, busy, w)        # blocked while the device idled
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze.rules.base import RankEvidence
from gpudiag.trace.facts import host_call_kind
from gpudiag.trace.timeline import Intervals, Timeline, subtract, union_many


def windows(ev: RankEvidence) -> list[tuple[float, float]]:
    """The time the rule judges: the analysed steps, else first to last device event."""
    tl, b = ev.timeline, ev.breakdown
    if b is not None and b.steps_analyzed and len(tl.steps):
        from gpudiag.analyze.breakdown import profiled_steps

        idx = profiled_steps(tl)
        return list(zip(tl.steps.start[idx].tolist(), tl.steps.end[idx].tolist(), strict=True))
    found = [iv.span() for iv in [*tl.activity.values(), *tl.host_calls.values()] if len(iv)]
    spans = [s for s in found if s is not None]
    if not spans:
        return []
    return [(min(s[0] for s in spans), max(s[1] for s in spans))]


def calls_of(tl: Timeline, kind: str) -> dict[str, Intervals]:
    return {n: iv for n, iv in tl.host_calls.items() if host_call_kind(n) == kind}


def union(sets: list[Intervals]) -> Intervals:
    return union_many(sets)


def device_busy(tl: Timeline) -> Intervals:
    return union_many(list(tl.activity.values()))


def within(iv: Intervals, win: list[tuple[float, float]]) -> Intervals:
    parts = [iv.clip(lo, hi) for lo, hi in win]
    return union_many(parts) if parts else Intervals()


def length(win: list[tuple[float, float]]) -> float:
    return float(sum(hi - lo for lo, hi in win))


def total(iv: Intervals) -> float:
    m = iv.merged()
    return float(np.sum(m.ends - m.starts)) if len(m) else 0.0


def exposed(calls: Intervals, busy: Intervals) -> Intervals:
    """Parts of the calls during which no device did anything."""
    return subtract(calls, busy)


def idle_after(calls: Intervals, busy: Intervals, win: list[tuple[float, float]]) -> Intervals:
    """From each call's return to the device's next work: a host that waited for the device
    has nothing queued, so the device idles until the host launches again."""
    m, b = calls.merged(), busy.merged()
    if not len(m):
        return Intervals()
    hi = max(h for _, h in win) if win else float(m.ends.max())
    e = m.ends
    nxt = np.searchsorted(b.ends, e, side="right")  # first busy interval ending after e
    has = nxt < len(b)
    nxt_start = (
        np.where(has, b.starts[np.minimum(nxt, max(len(b) - 1, 0))], hi)
        if len(b)
        else (np.full(e.size, hi))
    )
    # a device still busy when the call returns (another stream) leaves no gap after it
    gap_end = np.where(nxt_start <= e, e, np.minimum(nxt_start, hi))
    return within(Intervals(e, np.maximum(gap_end, e)), win)


def per_call(
    calls: dict[str, Intervals], win: list[tuple[float, float]]
) -> tuple[dict[str, int], dict[str, float]]:
    """Number of calls and time in them (ms) per API name inside the windows, largest
    first."""
    counts: dict[str, int] = {}
    ms: dict[str, float] = {}
    for name, iv in sorted(calls.items(), key=lambda kv: -total(within(kv[1], win))):
        n = int(sum(np.count_nonzero((iv.starts < hi) & (iv.ends > lo)) for lo, hi in win))
        if n:
            counts[name] = n
            ms[name] = round(total(within(iv, win)) / 1000.0, 2)
    return counts, ms
