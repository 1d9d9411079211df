"""What compilation cost a run: how many times the step compiled, how long that took against
the whole fit, how much of it came after warm-up, and which input shapes changed. Pure.

    facts = compile_facts(tl)          # None when the timeline holds no compilation
    facts.recompiles, facts.recompile_share, facts.varying

A **recompilation** is a compilation of a function already compiled once, begun after the
first training step ended: the first step compiles what the steady state needs, and an
evaluation's first call compiles its own function once; everything after that compiles
again because something the compiled program depends on changed (docs/method.md,
"Compilation"). Where a backend counts only traces (TensorFlow without XLA), its traces are
its compilations.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from gpudiag.analyze.thresholds import GIL_BURST_S
from gpudiag.trace.model.compiles import CompileEvent, Shapes
from gpudiag.trace.model.intervals import Intervals, union_of
from gpudiag.trace.model.timeline import Timeline


@dataclass
class Dim:
    """One input dimension that took several values across the compilations."""

    leaf: int  # which input array (0: the features)
    axis: int  # 0: the batch
    values: list[int]  # the sizes compiled for, sorted ([]: left open, None in the trace)

    @property
    def describe(self) -> str:
        what = "batch size" if self.axis == 0 else f"dimension {self.axis}"
        where = f"input {self.leaf}" if self.leaf else "the input"
        if not self.values:
            return f"{what} of {where} left open (traced as None)"
        if len(self.values) > 3:
            lo, hi = self.values[0], self.values[-1]
            return f"{what} of {where}: {len(self.values)} sizes from {lo} to {hi}"
        return f"{what} of {where}: " + ", ".join(str(v) for v in self.values)


@dataclass
class CompileFacts:
    compilations: int  # compile events (or traces where only traces are counted)
    recompiles: int  # of those, recompilations past warm-up
    seconds: float  # tracing, lowering and compiling, union of the spans
    recompile_s: float  # the part after warm-up
    fit_s: float  # from the first step (or compilation) to the last
    steady_step_s: float | None  # median step that compiled nothing
    steps: int  # batches trained
    steady_busy_s: float  # the fit's steps at the steady step time (what padding scales)
    first_compile_s: float  # the first compilation of the step function
    distinct_shapes: int  # input shapes the step function was compiled for
    varying: list[Dim] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    functions: dict[str, int] = field(default_factory=dict)  # compiled, by function

    @property
    def share(self) -> float:
        return self.seconds / self.fit_s if self.fit_s > 0 else 0.0

    @property
    def recompile_share(self) -> float:
        return self.recompile_s / self.fit_s if self.fit_s > 0 else 0.0

    @property
    def batch_only(self) -> bool:
        """Only the batch size changed (a short last batch), nothing else."""
        return bool(self.varying) and all(d.axis == 0 for d in self.varying)

    @property
    def length_dims(self) -> list[Dim]:
        return [d for d in self.varying if d.axis > 0]


def _counted(tl: Timeline) -> list[CompileEvent]:
    evs = tl.compiles.events
    compiles = [ev for ev in evs if ev.kind == "compile"]
    return sorted(compiles or [ev for ev in evs if ev.kind == "trace"], key=lambda e: e.start)


def _step_span(tl: Timeline) -> tuple[float, float, float] | None:
    """(first start, last end, end of the first step) over steps and step groups."""
    st, b = tl.steps, tl.step_buckets
    starts = np.concatenate([st.start, b.start])
    ends = np.concatenate([st.end, b.end])
    if not starts.size:
        return None
    first_end = float(st.end[np.argmin(st.start)]) if len(st) else float(b.end.min())
    return float(starts.min()), float(ends.max()), first_end


def varying_dims(shapes: list[Shapes]) -> list[Dim]:
    """Dimensions (input, axis) that differ between the shapes compiled for, or that the
    framework left open (None)."""
    known = [s for s in shapes if s]
    if not known:
        return []
    out: list[Dim] = []
    leaves = min(len(s) for s in known)
    for leaf in range(leaves):
        rank = min(len(s[leaf]) for s in known)
        for axis in range(rank):
            vals = [s[leaf][axis] for s in known]
            sizes = sorted({v for v in vals if v is not None})
            if None in vals:  # left open; the batch is always open in a traced signature
                if axis > 0 or len(sizes) > 1:
                    out.append(Dim(leaf, axis, sizes if len(sizes) > 1 else []))
            elif len(sizes) > 1:
                out.append(Dim(leaf, axis, sizes))
    # a dimension varying in the features and the labels alike (the batch) is said once
    seen: set[tuple[int, tuple[int, ...]]] = set()
    kept = []
    for d in out:
        key = (d.axis, tuple(d.values))
        if d.axis == 0 and key in seen:
            continue
        seen.add(key)
        kept.append(d)
    return kept


def _covered(iv: Intervals, s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Which of the steps [s, e) overlap any interval of ``iv``."""
    if not len(iv) or not s.size:
        return np.zeros(s.size, dtype=bool)
    return np.asarray(iv.covered_in(np.asarray(s), np.asarray(e)) > 0)


def during(iv: Intervals, ts: np.ndarray, before_us: float = GIL_BURST_S * 1e6) -> np.ndarray:
    """Which samples stamped at ``ts`` (each standing for the ``before_us`` before it)
    overlap an interval of the merged set ``iv``. A GIL sample stands for the burst of
    probing that ended at its time stamp (a burst a window extends is longer, and ends
    inside it)."""
    return _covered(iv, ts - before_us, ts + 1e-3)


def compile_spans(tl: Timeline) -> Intervals:
    s, e = tl.compiles.spans()
    return union_of(s, e)


def compiling_steps(tl: Timeline) -> np.ndarray:
    """Mask over ``tl.steps``: the steps during which something compiled."""
    return _covered(compile_spans(tl), tl.steps.start, tl.steps.end)


def compile_facts(tl: Timeline) -> CompileFacts | None:
    events = _counted(tl)
    span = _step_span(tl)
    if not events or span is None:
        return None
    first_start, last_end, first_step_end = span
    t0 = min(first_start, min(ev.start for ev in events))
    t1 = max(last_end, max(ev.end for ev in events))
    seen: set[str] = set()
    late: list[CompileEvent] = []
    for ev in events:
        if ev.what in seen and ev.start >= first_step_end:
            late.append(ev)
        seen.add(ev.what)
    functions = Counter(ev.what for ev in events)
    main = max(functions, key=lambda k: functions[k])
    main_evs = [ev for ev in events if ev.what == main]
    shapes = [ev.shapes for ev in main_evs if ev.shapes]
    distinct = {str(s) for s in shapes}
    all_spans = compile_spans(tl)
    late_iv = union_of(np.array([ev.start for ev in late]), np.array([ev.end for ev in late]))
    st = tl.steps
    quiet = ~_covered(all_spans, st.start, st.end)
    durs = ((st.end - st.start) / np.maximum(st.batches, 1))[quiet]
    steps = int(st.batches.sum() + tl.step_buckets.batches.sum())
    # the median, not the sum: a loaded host or a profiler stopping stretches single steps
    steady = float(np.median(durs)) / 1e6 if durs.size else None
    return CompileFacts(
        compilations=len(events),
        recompiles=len(late),
        seconds=tl.compiles.seconds(),
        recompile_s=late_iv.total() / 1e6,
        fit_s=max(0.0, (t1 - t0) / 1e6),
        steady_step_s=steady,
        steps=steps,
        steady_busy_s=(steady or 0.0) * steps,
        first_compile_s=(main_evs[0].end - main_evs[0].start) / 1e6,
        distinct_shapes=max(len(distinct), 1) if shapes else 0,
        varying=varying_dims(shapes),
        sources=sorted({ev.source for ev in events if ev.source}),
        functions=dict(functions.most_common(5)),
    )
