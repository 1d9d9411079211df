"""Where readers put intervals while they stream a file: compact, and bounded in number.

A reader gathers millions of [start, end) pairs (kernels, input waits, steps) before it can
build a Timeline, because trace files are not in time order. Python lists of floats cost
64 bytes per pair; an ``IntervalSink`` keeps them in two ``array('d')``, 16 bytes per pair.

All the sinks of one reader share an ``IntervalBudget``, so the memory a file can take is
bounded whatever its size:

1. When the sinks hold more than ``limit`` pairs, each *mergeable* sink (device activity,
   input waits, markers: the analysis only ever uses their union) is replaced by its union.
   Lossless: overlapping kernels on several streams become one busy stretch.
2. If that leaves more than half the limit, the budget keeps a *prefix in time*: it picks a
   cutoff so that half the limit remains, drops every pair that starts later, in every sink,
   and refuses later pairs as they arrive. Events are cut by time, not by arrival, so what is
   kept is complete for every kind of event (file order does not matter), and steps that
   end after the cutoff are dropped with them. The Timeline says what was analyzed
   (``finish``): the first part of the trace, and how to raise the limit.

    budget = IntervalBudget()                 # limit: GPUDIAG_MAX_INTERVALS or the default
    kernels = budget.sink()                   # mergeable
    steps = budget.sink(mergeable=False, columns="q")   # + the step number
    kernels.add(ts, ts + dur)
    steps.add(ts, ts + dur, 12)
    ...
    tl.add_activity("GPU 0", Kind.COMPUTE, *kernels.take_pairs())   # no copy
    budget.finish(tl)                         # drops cut steps, says what was analyzed
"""

from __future__ import annotations

import contextlib
import math
import os
import weakref
from array import array
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

import numpy as np

from gpudiag.trace.model.timeline import Timeline, union_of

# 16 B per held pair, and the analysis needs several times the held data at its peak
# (sorting, unions, exposed parts per device): docs/formats.md ("Bounds on any input") has
# the measured figure behind this default. A trace needs more only when it holds that
# many intervals that do not overlap (thousands of steps of a kernel-heavy model).
DEFAULT_MAX_INTERVALS = 2_000_000
MIN_INTERVALS = 1000  # the smallest bound a file is given, alone or as one of many ranks
LIMIT_ENV = "GPUDIAG_MAX_INTERVALS"
# distinct keys a reader keeps per table (devices, counter series, marker names, ...): real
# traces have tens; a hostile file with millions of distinct names must not grow memory
MAX_KEYS = 4096
K = TypeVar("K")
_share: ContextVar[int | None] = ContextVar("gpudiag_interval_share", default=None)


def interval_limit() -> int:
    """The limit for the file being read: its share (``limit_intervals``) when several are
    read for one analysis, else ``GPUDIAG_MAX_INTERVALS`` (``gpudiag analyze
    --max-intervals`` sets it, so worker processes see it too), else the default."""
    share = _share.get()
    if share is not None:
        return share
    try:
        return max(MIN_INTERVALS, int(float(os.environ.get(LIMIT_ENV, DEFAULT_MAX_INTERVALS))))
    except (ValueError, OverflowError):
        return DEFAULT_MAX_INTERVALS


def share_of_limit(files: int) -> int:
    """Each of ``files`` rank files analyzed together holds an equal share of the bound,
    so a run of hundreds of ranks is bounded as one file is."""
    return max(MIN_INTERVALS, interval_limit() // max(1, files))


@contextlib.contextmanager
def limit_intervals(limit: int | None) -> Iterator[None]:
    """Readers inside hold at most ``limit`` intervals per file (None: the usual limit)."""
    token = _share.set(None if limit is None else max(MIN_INTERVALS, limit))
    try:
        yield
    finally:
        _share.reset(token)


# What one held step counts for in the bound: a step carries up to five columns (56 bytes
# while reading, against 16 for an interval) and the analysis makes its per-step shares,
# about 180 bytes per step at the peak against 60-80 per interval: a gpudiag stream of
# 990,000 profiled steps (each with one device interval) peaked at 340 MB with steps
# counted as one (benchmarks/stream_memory.py).
STEP_WEIGHT = 3


class IntervalSink:
    """[start, end) pairs appended one at a time, 16 bytes each, with optional extra
    columns per pair (a step's index, flags, call times) in ``array`` typecodes."""

    __slots__ = ("__weakref__", "_budget", "columns", "ends", "mergeable", "starts", "weight")

    def __init__(
        self, budget: IntervalBudget, mergeable: bool, columns: str = "", weight: int = 1
    ) -> None:
        self._budget = budget
        self.weight = weight  # intervals of the budget one pair counts for (STEP_WEIGHT)
        self.mergeable = mergeable and not columns
        self.starts = array("d")
        self.ends = array("d")
        self.columns: list[array[Any]] = [array(code) for code in columns]

    def add(self, start: float, end: float, *extra: float) -> bool:
        """Keep the pair unless it starts after the budget's cutoff; False if refused."""
        b = self._budget
        if start >= b.cutoff:
            b.refused += 1
            if start > b.latest:
                b.latest = start
            return False
        self.starts.append(start)
        self.ends.append(end)
        if self.columns:
            for col, value in zip(self.columns, extra, strict=True):
                col.append(value)
        b.held += self.weight
        if b.held > b.limit:
            b.shrink()
        return True

    def __len__(self) -> int:
        return len(self.starts)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Starts and ends as float64 arrays (copies: the sink may grow afterwards)."""
        return _view(self.starts).copy(), _view(self.ends).copy()

    def column(self, i: int) -> np.ndarray:
        return _view(self.columns[i]).copy()

    def take_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``take`` for a sink without extra columns: starts and ends."""
        starts, ends, *_ = self.take()
        return starts, ends

    def take(self) -> tuple[np.ndarray, ...]:
        """Starts, ends and the extra columns, handed over without a copy (the arrays
        become numpy's); the sink is left empty. For a reader done with its file."""
        out = (_view(self.starts), _view(self.ends), *(_view(c) for c in self.columns))
        self.starts, self.ends = array("d"), array("d")
        self.columns = [array(c.typecode) for c in self.columns]
        self._budget.held -= len(out[0]) * self.weight
        return out

    def _keep(self, mask: np.ndarray) -> None:
        self.starts = _array("d", _view(self.starts)[mask])
        self.ends = _array("d", _view(self.ends)[mask])
        self.columns = [_array(c.typecode, _view(c)[mask]) for c in self.columns]

    def _merge(self) -> None:
        if len(self) > 1:
            u = union_of(_view(self.starts), _view(self.ends))
            self.starts = _array("d", u.starts)
            self.ends = _array("d", u.ends)


def _view(a: array) -> np.ndarray:  # type: ignore[type-arg]
    """The array's memory seen by numpy, not copied: drop the view before appending."""
    return np.frombuffer(a, dtype=np.dtype(a.typecode)) if len(a) else np.zeros(0)


def _array(code: str, values: np.ndarray) -> array:  # type: ignore[type-arg]
    out = array(code)
    out.frombytes(values.astype(np.dtype(code), copy=False).tobytes())
    return out


class IntervalBudget:
    """The bound shared by one reader's sinks (see the module docstring)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = interval_limit() if limit is None else limit
        self.cutoff = math.inf
        self.held = 0
        self.refused = 0  # pairs dropped by the cutoff, at shrink time or on arrival
        self.first = math.inf  # earliest start held when the cutoff was set
        self.latest = -math.inf  # latest start seen, refused ones included
        # weak: the sinks belong to the reader; with them gone, their memory is freed at
        # once (a cycle between sinks and budget would wait for the garbage collector)
        self._sinks: weakref.WeakSet[IntervalSink] = weakref.WeakSet()

    def sink(self, mergeable: bool = True, columns: str = "", weight: int = 1) -> IntervalSink:
        """A sink of this budget; ``weight``: what one of its pairs counts for (steps:
        ``STEP_WEIGHT``)."""
        s = IntervalSink(self, mergeable, columns, weight)
        self._sinks.add(s)
        return s

    def shrink(self) -> None:
        """Merge what may be merged; if still above half the limit, cut at a time."""
        for s in self._sinks:
            if s.mergeable:
                s._merge()
        self.held = sum(len(s) * s.weight for s in self._sinks)
        if self.held <= self.limit // 2:
            return
        starts = np.concatenate(
            [np.repeat(_view(s.starts), s.weight) for s in self._sinks if len(s)]
        )
        self.first = min(self.first, float(starts.min()))
        self.latest = max(self.latest, float(starts.max()))
        keep = self.limit // 2
        starts.partition(keep)  # in place: the smallest ``keep`` starts come first
        self.cutoff = min(self.cutoff, float(starts[keep]))
        del starts
        before = sum(len(s) for s in self._sinks)
        for s in self._sinks:
            mask = _view(s.starts) < self.cutoff
            if not mask.all():
                s._keep(mask)
        self.held = sum(len(s) * s.weight for s in self._sinks)
        self.refused += before - sum(len(s) for s in self._sinks)

    @property
    def cut(self) -> bool:
        """True once the cutoff was used: only a prefix of the trace is held."""
        return math.isfinite(self.cutoff)

    def finish(self, tl: Timeline) -> None:
        """Drop the steps that end after the cutoff (their work is partly missing) and say
        in the Timeline what was analyzed."""
        if not self.cut:
            return
        keep = tl.steps.end <= self.cutoff
        if not keep.all():
            tl.steps = tl.steps.select(keep)
        kept_s = (self.cutoff - self.first) / 1e6
        whole_s = (self.latest - self.first) / 1e6
        tl.meta.limitations.append(
            f"the trace holds more intervals than the memory bound ({self.limit:,}): "
            f"analyzed its first {_seconds(kept_s)} of {_seconds(whole_s)} ({self.refused:,} "
            f"intervals after that dropped); raise the bound with --max-intervals or "
            f"{LIMIT_ENV} (about 100 bytes of memory per interval at the peak)"
        )
        tl.meta.extra["interval_cutoff_us"] = self.cutoff


def _seconds(s: float) -> str:
    return f"{s:,.0f} s" if s >= 100 else f"{s:.3g} s"


class SinkTable(Generic[K]):
    """Sinks by key (device and kind, marker name, ...), at most ``MAX_KEYS`` of them:
    events under further keys are dropped and counted in ``overflow``."""

    def __init__(self, budget: IntervalBudget, mergeable: bool = True, columns: str = ""):
        self._budget = budget
        self._mergeable = mergeable
        self._columns = columns
        self.sinks: dict[K, IntervalSink] = {}
        self.overflow = 0

    def get(self, key: K) -> IntervalSink | None:
        s = self.sinks.get(key)
        if s is None:
            if len(self.sinks) >= MAX_KEYS:
                self.overflow += 1
                return None
            s = self.sinks[key] = self._budget.sink(self._mergeable, self._columns)
        return s

    def add(self, key: K, start: float, end: float) -> None:
        s = self.sinks.get(key)
        if s is None:
            s = self.get(key)
            if s is None:
                return
        s.add(start, end)

    def __bool__(self) -> bool:
        return bool(self.sinks)


class Totals(dict[str, float]):
    """Summed durations by name (input-wait culprits), at most ``MAX_KEYS`` names; the
    rest are summed under ``other``."""

    def add(self, name: str, value: float) -> None:
        if name in self or len(self) < MAX_KEYS:
            self[name] = self.get(name, 0.0) + value
        else:
            self["other"] = self.get("other", 0.0) + value
