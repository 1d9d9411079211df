"""Time the host spends blocked in allocator or synchronising API calls, and the device idle
it causes. Shared by ``allocator-stalls`` and ``host-sync-stalls``. Pure.

    b = blocked_in(ev, "allocator")              # calls, windows, span, blocked time
    stalled = exposed(b.blocked, device_busy(ev.timeline))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpudiag.analyze.evidence import RankEvidence
from gpudiag.trace.model.timeline import Intervals, Timeline, subtract, union_many
from gpudiag.trace.names.facts import host_call_kind


def windows(ev: RankEvidence) -> Intervals:
    """The time the rule judges (one interval per window): the analysed steps, else first
    to last device event."""
    tl, b = ev.timeline, ev.breakdown
    if b is not None and b.steps_analyzed and len(tl.steps):
        from gpudiag.analyze.breakdown import profiled_steps

        idx = profiled_steps(tl)
        return Intervals(tl.steps.start[idx], tl.steps.end[idx])
    found = [iv.span() for iv in [*tl.activity.values(), *tl.host_calls.values()] if len(iv)]
    spans = [s for s in found if s is not None]
    if not spans:
        return Intervals()
    return Intervals([min(s[0] for s in spans)], [max(s[1] for s in spans)])


def calls_of(tl: Timeline, kind: str) -> dict[str, Intervals]:
    return {n: iv for n, iv in tl.host_calls.items() if host_call_kind(n) == kind}


def device_busy(tl: Timeline) -> Intervals:
    return union_many(list(tl.activity.values()))


@dataclass
class Blocked:
    """Blocking calls of one kind (allocator, sync) inside the time a rule judges."""

    calls: dict[str, Intervals]  # by API name
    windows: Intervals
    span: float  # µs judged
    blocked: Intervals  # union of the calls, inside the windows


def blocked_in(ev: RankEvidence, kind: str) -> Blocked | None:
    """The calls of ``kind`` and where they block; None without calls or judged time."""
    calls = calls_of(ev.timeline, kind)
    win = windows(ev)
    span = length(win)
    if not calls or span <= 0:
        return None
    return Blocked(calls, win, span, within(union_many(list(calls.values())), win))


def within(iv: Intervals, win: Intervals) -> Intervals:
    """The parts of ``iv`` inside the windows."""
    return subtract(iv, subtract(iv, win))


def length(win: Intervals) -> float:
    return float(np.sum(win.ends - win.starts))


def total(iv: Intervals) -> float:
    m = iv.merged()
    return float(np.sum(m.ends - m.starts)) if len(m) else 0.0


def exposed(calls: Intervals, busy: Intervals) -> Intervals:
    """Parts of the calls during which no device did anything."""
    return subtract(calls, busy)


def idle_after(calls: Intervals, busy: Intervals, win: Intervals) -> Intervals:
    """From each call's return to the device's next work: a host that waited for the device
    has nothing queued, so the device idles until the host launches again."""
    m, b = calls.merged(), busy.merged()
    if not len(m):
        return Intervals()
    hi = float(win.ends.max()) if len(win) else float(m.ends.max())
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


def overlapping(iv: Intervals, win: Intervals) -> int:
    """Calls overlapping each window, summed over the windows: per window, the calls
    started before its end less those ended by its start."""
    started = np.searchsorted(np.sort(iv.starts), win.ends, side="left")
    ended = np.searchsorted(np.sort(iv.ends), win.starts, side="right")
    return int(np.sum(np.maximum(started - ended, 0)))


def per_call(
    calls: dict[str, Intervals], win: Intervals
) -> tuple[dict[str, int], dict[str, float]]:
    """Number of calls and time in them (ms) per API name inside the windows, largest
    first."""
    counts: dict[str, int] = {}
    ms: dict[str, float] = {}
    for name, iv in sorted(calls.items(), key=lambda kv: -total(within(kv[1], win))):
        n = overlapping(iv, win)
        if n:
            counts[name] = n
            ms[name] = round(total(within(iv, win)) / 1000.0, 2)
    return counts, ms


def blocked_idle(ev: RankEvidence, kind: str = "sync") -> tuple[Intervals, Blocked] | None:
    """Device idle the host's blocking calls of ``kind`` cause: while a call blocks and the
    device does nothing (a copy waiting, a pageable transfer), and after it returns until
    the device's next work (nothing queued). None without such calls."""
    tl = ev.timeline
    b = blocked_in(ev, kind) if tl.activity else None
    if b is None:
        return None
    busy = device_busy(tl)
    during = exposed(b.blocked, busy)
    return union_many([during, idle_after(b.blocked, busy, b.windows)]), b


def longest_call(calls: dict[str, Intervals], win: Intervals) -> tuple[str, float]:
    """The longest single call inside the windows: (API name, µs)."""
    best = ("", 0.0)
    for name, iv in calls.items():
        inside = within(iv, win)
        if len(inside):
            longest = float(np.max(inside.ends - inside.starts))
            if longest > best[1]:
                best = (name, longest)
    return best
