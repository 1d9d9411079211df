"""Sets of [start, end) intervals in µs and their arithmetic: union, difference, coverage.

Every share in the analysis is interval arithmetic on whole runs, vectorized with numpy
(sorting, running maxima, binary searches), never a loop per interval or per step.

    busy = union_many([kernels, copies])          # disjoint union
    idle = subtract(Intervals([0.0], [1e6]), busy) # what is not covered
    busy.covered_in(step_starts, step_ends)        # covered time inside each step
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


class Intervals:
    """A set of [start, end) intervals (µs), kept as two float64 arrays.

    ``merged()`` gives the disjoint union, which is what every share computation needs:
    two overlapping kernels on two streams keep a device busy once, not twice.
    """

    __slots__ = ("_merged", "ends", "starts")

    def __init__(self, starts: Iterable[float] = (), ends: Iterable[float] = ()) -> None:
        self.starts = np.asarray(starts, dtype=np.float64).ravel()
        self.ends = np.asarray(ends, dtype=np.float64).ravel()
        if self.starts.shape != self.ends.shape:
            raise ValueError("starts and ends differ in length")
        self._merged: Intervals | None = None

    def __len__(self) -> int:
        return int(self.starts.size)

    def extend(self, starts: Iterable[float], ends: Iterable[float]) -> None:
        self.starts = np.concatenate([self.starts, np.asarray(starts, dtype=np.float64).ravel()])
        self.ends = np.concatenate([self.ends, np.asarray(ends, dtype=np.float64).ravel()])
        self._merged = None

    def merged(self) -> Intervals:
        """Disjoint, sorted union of the intervals (cached)."""
        if self._merged is not None:
            return self._merged
        out = union_of(self.starts, self.ends)
        out._merged = out
        self._merged = out
        return out

    def total(self) -> float:
        m = self.merged()
        return float(np.sum(m.ends - m.starts))

    def span(self) -> tuple[float, float] | None:
        if not len(self):
            return None
        return float(self.starts.min()), float(self.ends.max())

    def clip(self, lo: float, hi: float) -> Intervals:
        """Merged intervals cut to [lo, hi)."""
        m = self.merged()
        i = int(np.searchsorted(m.ends, lo, side="right"))
        j = int(np.searchsorted(m.starts, hi, side="left"))
        s = np.clip(m.starts[i:j], lo, hi)
        e = np.clip(m.ends[i:j], lo, hi)
        keep = e > s
        out = Intervals(s[keep], e[keep])
        out._merged = out
        return out

    def overlap_with(self, lo: float, hi: float) -> float:
        """Time inside [lo, hi) covered by the union."""
        c = self.clip(lo, hi)
        return float(np.sum(c.ends - c.starts))

    def covered_until(self, t: np.ndarray) -> np.ndarray:
        """Time covered by the union before each time in ``t``: one binary search per
        query, so per-step and per-bin overlaps of a million intervals cost no Python loop."""
        t = np.asarray(t, dtype=np.float64)
        m = self.merged()
        if not len(m):
            return np.zeros(t.shape)
        s, e = m.starts, m.ends
        cum = np.concatenate([[0.0], np.cumsum(e - s)])
        k = np.searchsorted(s, t, side="right")  # intervals started at or before t
        last_end = np.where(k > 0, e[np.maximum(k - 1, 0)], t)
        return cum[k] - np.maximum(0.0, last_end - t)

    def covered_in(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Time covered by the union inside each window [lo[i], hi[i])."""
        return np.maximum(self.covered_until(hi) - self.covered_until(lo), 0.0)


def union_of(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """Sorted, disjoint union of possibly overlapping intervals, in O(n log n); the arrays
    themselves (no copy) when they already are sorted and disjoint (most device streams)."""
    if starts.size == 0:
        return Intervals()
    if starts.size == 1 or (np.all(starts[1:] > ends[:-1]) and np.all(ends > starts)):
        return Intervals(starts, ends)
    order = np.argsort(starts, kind="stable")
    s = starts[order]
    e = np.maximum.accumulate(ends[order])
    del order
    # a new run starts where an interval begins after everything before it has ended
    new_run = np.empty(s.size, dtype=bool)
    new_run[0] = True
    np.greater(s[1:], e[:-1], out=new_run[1:])
    # each run ends where the next begins: its end is the running maximum just before
    heads = np.flatnonzero(new_run)
    out_s = s[heads]
    out_e = e[np.append(heads[1:] - 1, s.size - 1)]
    keep = out_e > out_s
    return Intervals(out_s[keep], out_e[keep])


def union_many(sets: Sequence[Intervals]) -> Intervals:
    """Union of several sets; a single non-empty one is its own (cached) union."""
    sets = [x for x in sets if len(x)]
    if not sets:
        return Intervals()
    if len(sets) == 1:
        return sets[0].merged()
    return union_of(
        np.concatenate([x.starts for x in sets]), np.concatenate([x.ends for x in sets])
    )


def _inside(points: np.ndarray, m: Intervals, left_closed: bool, right_closed: bool) -> np.ndarray:
    """Which points lie inside an interval of the merged set ``m``, each end of the
    interval counted as inside or not as asked."""
    k = np.searchsorted(m.starts, points, side="right" if left_closed else "left") - 1
    ends = m.ends[np.maximum(k, 0)]
    inside = points <= ends if right_closed else points < ends
    inside &= k >= 0
    return inside


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """Parts of ``a`` (merged) not covered by ``b`` (merged), vectorized. The result's
    starts are the starts of ``a`` outside ``b`` and the ends of ``b`` strictly inside
    ``a``; its ends are the ends of ``a`` outside ``b`` and the starts of ``b`` strictly
    inside ``a``: both sorted, they pair up in order."""
    am, bm = a.merged(), b.merged()
    if not len(am) or not len(bm):
        return am
    starts = np.concatenate(
        [
            am.starts[~_inside(am.starts, bm, left_closed=True, right_closed=False)],
            bm.ends[_inside(bm.ends, am, left_closed=False, right_closed=False)],
        ]
    )
    ends = np.concatenate(
        [
            am.ends[~_inside(am.ends, bm, left_closed=False, right_closed=True)],
            bm.starts[_inside(bm.starts, am, left_closed=False, right_closed=False)],
        ]
    )
    starts.sort()
    ends.sort()
    keep = ends > starts
    out = Intervals(starts[keep], ends[keep])
    out._merged = out
    return out
