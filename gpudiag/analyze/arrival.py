"""Who do the ranks wait for? Arrival order at the collectives, per step. Pure.

In synchronous data-parallel training every rank leaves each all-reduce at about the same
moment, so step times equalise and the slow rank hides: it is the one that *arrives last*
and therefore waits least, while every other rank waits for it. Per rank and step we take

- ``end``: when the rank left the step's collectives (profiled: end of its last collective;
  callback timing: end of the train-function call, which returns right after them);
- ``busy``: how long it was inside them (profiled: exposed collective time; callback
  timing: the train-function call, compute included, the same on every rank);
- ``cycle``: its whole step, batch begin to next batch begin, so time in other callbacks
  counts whatever their order.

Clock offsets between hosts come from the ``end`` times (they coincide in truth), never from
wall clocks. Arrival = ``end - offset - busy``; the last to arrive is the one waited for, and
each other rank's loss is its arrival gap to the last one. A straggler is named when the same
rank arrives last in most steps and the others lose a material share of their step
(thresholds.py, docs/thresholds.md), which works from a single profiled step too; or, at
"info" severity, when the others lose a smaller share but the rank is last in more steps
than chance allows (a binomial test over the steps). Whether it *works longer* or only
*arrives late* (starts its step late: host, data or launch delay) is said, and the confidence
grows with the number of steps that show it.

    timings = [RankTiming.of(tl, label) for tl, label in zip(timelines, labels)]
    finding, table = find_waited_for(timings)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.breakdown import profiled_steps
from gpudiag.analyze.diagnosis import Finding
from gpudiag.trace.model.timeline import Kind, Timeline, subtract, union_many

PROFILED = "collective arrival (profiled steps)"
CALLBACK = "train-function arrival (callback step timing)"


@dataclass
class Signal:
    """Per-step arrays for one rank, aligned on ``index`` (µs)."""

    index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    busy: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cycle: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return int(self.index.size)


@dataclass
class RankTiming:
    """What the arrival analysis needs from one rank: a few numbers per step, no events."""

    label: str
    profiled: Signal
    callback: Signal

    @staticmethod
    def of(tl: Timeline, label: str) -> RankTiming:
        return RankTiming(label, _profiled_signal(tl), _callback_signal(tl))


def _cycles(tl: Timeline) -> np.ndarray:
    """Batch begin to next batch begin where the next step follows directly; the step
    itself at epoch ends and for the last step."""
    st = tl.steps
    cyc = st.end - st.start
    if len(st) > 1:
        nxt = st.start[1:] - st.start[:-1]
        follows = (st.index[1:] == st.index[:-1] + 1) & (nxt >= cyc[:-1])
        cyc[:-1] = np.where(follows, nxt, cyc[:-1])
    return cyc


def _callback_signal(tl: Timeline) -> Signal:
    st = tl.steps
    if not len(st):
        return Signal()
    has_call = np.isfinite(st.call_start) & np.isfinite(st.call_end)
    end = np.where(has_call, st.call_end, st.end)
    busy = np.where(has_call, st.call_end - st.call_start, st.end - st.start)
    return Signal(st.index.copy(), end, busy, _cycles(tl))


def _profiled_signal(tl: Timeline) -> Signal:
    idx = profiled_steps(tl)
    devices = tl.devices
    coll_sets = [tl.device_activity(d, Kind.COLLECTIVE) for d in devices]
    if not idx.size or not any(len(c) for c in coll_sets):
        return Signal()
    coll = union_many([c for c in coll_sets if len(c)])
    compute = union_many([tl.device_activity(d, Kind.COMPUTE) for d in devices])
    starts, ends = tl.steps.start[idx], tl.steps.end[idx]
    # the last collective stretch starting before each step's end: the step has one if it
    # ends after the step's start; its end (within the step) is the step's last arrival
    last = np.searchsorted(coll.starts, ends, side="left") - 1
    last_end = coll.ends[np.maximum(last, 0)]
    has = (last >= 0) & (last_end > starts)
    exposed = subtract(coll, compute).covered_in(starts, ends)
    return Signal(
        tl.steps.index[idx][has].astype(np.int64),
        np.minimum(last_end, ends)[has],
        exposed[has],
        _cycles(tl)[idx][has],
    )


@dataclass
class RankWaits:
    """One row of the per-rank table (medians over the compared steps, ms)."""

    label: str
    step_ms: float
    work_ms: float
    wait_ms: float  # waiting in collectives for the last rank to arrive
    clock_offset_ms: float


def _aligned(signals: list[Signal]) -> tuple[np.ndarray, list[np.ndarray]] | None:
    common = signals[0].index
    for s in signals[1:]:
        common = np.intersect1d(common, s.index)
    if not common.size:
        return None
    pos = [np.searchsorted(s.index, common) for s in signals]
    return common, pos


def arrival_table(
    signals: list[Signal], labels: list[str]
) -> tuple[list[RankWaits], np.ndarray, np.ndarray] | None:
    """Per-rank waits from one kind of signal: the table, the rank that arrived last per
    step, and each rank's wait share of its step (ranks x steps)."""
    if len(signals) < 2 or any(not len(s) for s in signals):
        return None
    signals = [_sorted(s) for s in signals]
    al = _aligned(signals)
    if al is None:
        return None
    common, pos = al
    end = np.array([s.end[p] for s, p in zip(signals, pos, strict=True)])
    busy = np.array([s.busy[p] for s, p in zip(signals, pos, strict=True)])
    cycle = np.array([s.cycle[p] for s, p in zip(signals, pos, strict=True)])
    offset = np.median(end - end[0], axis=1)  # rank clock minus rank 0's, from the ends
    arrive = end - offset[:, None] - busy
    last = np.argmax(arrive, axis=0)
    wait = np.clip(arrive[last, np.arange(common.size)] - arrive, 0.0, None)
    share = wait / np.maximum(cycle, 1e-9)
    rows = [
        RankWaits(
            label,
            round(float(np.median(cycle[r])) / 1e3, 3),
            round(float(np.median(cycle[r] - wait[r])) / 1e3, 3),
            round(float(np.median(wait[r])) / 1e3, 3),
            round(float(offset[r]) / 1e3, 3),
        )
        for r, label in enumerate(labels)
    ]
    return rows, last, share


def _sorted(s: Signal) -> Signal:
    o = np.argsort(s.index, kind="stable")
    idx, keep = np.unique(s.index[o], return_index=True)
    o = o[keep]
    return Signal(idx, s.end[o], s.busy[o], s.cycle[o])


def find_waited_for(timings: list[RankTiming]) -> tuple[Finding | None, list[RankWaits], str]:
    """The straggler (or None), the per-rank table and which signal it came from.

    Profiled collectives are tried first (exact, even from one step), then the callback's
    step timing (needs a few steps: one step of host timing is noise)."""
    labels = [t.label for t in timings]
    table: list[RankWaits] = []
    used = ""
    for kind, min_steps in ((PROFILED, 1), (CALLBACK, T.STRAGGLER_MIN_STEPS)):
        sigs = [t.profiled if kind == PROFILED else t.callback for t in timings]
        got = arrival_table(sigs, labels)
        if got is None:
            continue
        rows, last, share = got
        if not table:
            table, used = rows, kind
        if last.size < min_steps:
            continue
        finding = _judge(rows, last, share, kind)
        if finding is not None:
            return finding, rows, kind
    return None, table, used


def _judge(rows: list[RankWaits], last: np.ndarray, share: np.ndarray, kind: str) -> Finding | None:
    n_ranks, n_steps = share.shape
    counts = np.bincount(last, minlength=n_ranks)
    c = int(np.argmax(counts))
    consistency = float(counts[c]) / n_steps
    others = np.delete(np.arange(n_ranks), c)
    # per step: the median share of their step the other ranks lose waiting for c
    lost = np.where(last == c, np.median(share[others], axis=0), 0.0)
    loss = float(np.median(lost))
    work_c = rows[c].work_ms
    work_others = float(np.median([rows[r].work_ms for r in others]))
    longer = work_c >= work_others * (1.0 + T.STRAGGLER_MARGIN)
    chance = chance_last(int(counts[c]), n_steps, n_ranks)
    if consistency < T.STRAGGLER_CONSISTENCY or loss < T.STRAGGLER_WAIT_NOTE:
        return None
    if loss < T.STRAGGLER_WAIT_SHARE and chance > T.STRAGGLER_CHANCE:
        return None  # a small wait from a rank last by chance: noise
    name = rows[c].label
    wait_ms = float(np.median([rows[r].wait_ms for r in others]))
    cause = "works longer" if longer else "arrives late"
    if loss >= T.STRAGGLER_WAIT_SHARE_HIGH:
        severity = "high"
    elif loss >= T.STRAGGLER_WAIT_SHARE:
        severity = "moderate"
    else:
        severity = "info"
    why = (
        f"its time outside the wait is {100 * (work_c / max(work_others, 1e-9) - 1):.0f}% longer"
        if longer
        else "it starts late: its own work is not longer"
    )
    return Finding(
        id="straggler",
        severity=severity,
        title=(
            f"The other ranks wait for {name}: {100 * loss:.0f}% of their step "
            f"({wait_ms:.1f} ms) in the collectives; {name} {cause} ({why})"
        ),
        evidence={
            "cause": cause,
            "confidence": round(wilson_low(int(counts[c]), n_steps), 2),
            "chance_pct": round(100 * chance, 2),
            "straggler": name,
            "others_wait_ms": round(wait_ms, 3),
            "others_wait_share_pct": round(100 * loss, 1),
            "arrives_last_in_steps_pct": round(100 * consistency, 1),
            "work_ms": work_c,
            "others_work_ms": round(work_others, 3),
            "median_slowdown_pct": round(100 * (work_c / max(work_others, 1e-9) - 1), 1),
            "steps_compared": int(n_steps),
            "entities": int(n_ranks),
            "signal": kind,
            "max_clock_offset_ms": round(max(abs(r.clock_offset_ms) for r in rows), 3),
        },
        measured=loss,
    )


def chance_last(k: int, n: int, ranks: int) -> float:
    """Probability that some rank of ``ranks`` arrives last in ``k`` or more of ``n`` steps
    by chance alone (each rank last with probability 1/ranks; union bound over ranks)."""
    p = 1.0 / max(ranks, 1)
    tail = sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))
    return min(1.0, ranks * tail)


def wilson_low(k: int, n: int, z: float = 1.28) -> float:
    """Lower end of the 80% Wilson interval of the share of steps the rank is last in: one
    step of one says 0.38, 6 of 6 say 0.78, 20 of 20 say 0.92."""
    if n <= 0:
        return 0.0
    p = k / n
    den = 1 + z * z / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - half) / den)
