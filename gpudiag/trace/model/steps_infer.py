"""Training iterations from a trace that has no step markers. Pure: Timeline in, steps out.

Legacy ``torch.autograd.profiler`` traces, Kineto traces recorded without ``schedule=`` and
many TF/JAX profiles carry no ``ProfilerStep#N`` or step line, yet the training loop leaves a
host event that repeats once per iteration: the DataLoader fetch, ``Optimizer.zero_grad``,
``Optimizer.step``, a top-level forward/backward annotation, the jitted train step. Readers
keep every host event matching ``MARKER_TABLE`` in ``Timeline.markers``; ``ensure_steps``
picks the coarsest marker that repeats (the one seen fewest times, at least
``MIN_OCCURRENCES``: finer ones repeat several times per iteration), cuts the run at its
starts (start to start = one full iteration), drops leading warm-up iterations and says how
steps were found in a limitation line. The iteration is the outermost repeating unit: when a
coarser marker holds most occurrences of the chosen one (the decoder layers of one eager
decode step, 35 x 1.9 ms inside one 84 ms step), the coarser one cuts the steps, each of its
occurrences one iteration even when it occurs fewer than ``MIN_OCCURRENCES`` times. With
no repeating marker, the profiled window (first to last device event) is analysed as one
step, and that too is said.

    tl = read_something(...)          # tl.steps empty, tl.markers filled
    ensure_steps(tl)                  # tl.steps filled, tl.meta.limitations explains how
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gpudiag.trace.model.timeline import Timeline


@dataclass(frozen=True)
class MarkerRow:
    pattern: re.Pattern[str]
    what: str  # plain words for the limitation line


def _m(pattern: str, what: str) -> MarkerRow:
    return MarkerRow(re.compile(pattern), what)


# Earlier rows win ties (same number of occurrences). Names as PyTorch's profiler records
# them (torch/utils/data/dataloader.py, torch/optim/optimizer.py record_function labels),
# TensorFlow's tf.function names, JAX's jitted-call TraceMe and XLA module names.
MARKER_TABLE: tuple[MarkerRow, ...] = (
    _m(r"^enumerate\(DataLoader\)#.*__next__$", "DataLoader batch fetch"),
    _m(r"^Optimizer\.zero_grad#", "optimizer zero_grad"),
    _m(r"^Optimizer\.step#", "optimizer step"),
    _m(
        r"^(?:forward|backward|Forward|Backward|train_step|training_step|train_batch)$",
        "top-level forward/backward annotation",
    ),
    _m(
        r"^__inference_(?:train_function|multi_step_on_iterator|one_step_on_iterator|"
        r"one_step_on_data|train_step)_\d+$",
        "TensorFlow train function",
    ),
    _m(r"^SessionRun$", "TensorFlow session run"),
    _m(r"^PjitFunction\(.+\)$", "JAX jitted call"),
    _m(r"^xla-module:", "XLA module execution"),
    _m(r"^nn\.Module: \w+", "top-level nn.Module forward"),
)
_ANY_MARKER = re.compile("|".join(f"(?:{r.pattern.pattern})" for r in MARKER_TABLE))

MIN_OCCURRENCES = 3  # two full iterations at least: one may be warm-up
# the marker's first to last occurrence must cover half the device activity: iterations
# repeat over the whole profile (a 3-iteration profile spans 2/3 of it with start-to-start)
MIN_COVERAGE = 0.5
# A leading iteration more than twice the steady median is warm-up (CUDA context, cuDNN
# autotuning, DataLoader worker start, XLA compilation: typically 10-30x a steady step).
WARMUP_FACTOR = 2.0
MAX_NAME = 80
# a coarser marker encloses a finer one when it holds this share of the finer one's starts
# (the rest: a layer run once outside, in a warm-up or a sampling pass)
NEST_SHARE = 0.8
# The window fallback needs a profile of real work: one training iteration launches tens of
# kernels at least, and a window under 1 ms is a sample too small to attribute.
WINDOW_MIN_EVENTS = 10
WINDOW_MIN_US = 1000.0


def is_marker(name: str) -> bool:
    """Whether a host event name may mark iterations (readers keep only these)."""
    return _ANY_MARKER.match(name) is not None


def _row_of(name: str) -> int:
    return next(i for i, r in enumerate(MARKER_TABLE) if r.pattern.match(name))


def _shown(name: str) -> str:
    return name if len(name) <= MAX_NAME else name[: MAX_NAME - 1] + "…"


@dataclass
class Inferred:
    starts: np.ndarray
    ends: np.ndarray
    method: str  # "marker" | "window"
    marker: str = ""
    warmup_dropped: int = 0
    warmup_ratio: float = 0.0
    note: str = ""


def _occurrences(tl: Timeline, name: str) -> np.ndarray:
    """Starts of the outermost occurrences (a nested repeat of the same name is one)."""
    return tl.markers[name].merged().starts


def _device_span(tl: Timeline) -> float:
    spans = [s for iv in tl.activity.values() if len(iv) and (s := iv.span()) is not None]
    return max(e for _, e in spans) - min(s for s, _ in spans) if spans else 0.0


def choose_marker(tl: Timeline) -> str | None:
    """The coarsest marker that repeats and spans most of the profile (a marker repeated
    only inside one corner of it, such as an evaluation loop, does not cut training steps)."""
    occurrences = {n: _occurrences(tl, n) for n in tl.markers if is_marker(n)}
    span = _device_span(tl)
    counts = {
        n: o.size
        for n, o in occurrences.items()
        if o.size >= MIN_OCCURRENCES and (span <= 0 or o[-1] - o[0] >= MIN_COVERAGE * span)
    }
    usable = list(counts)
    if not usable:
        return None
    return min(usable, key=lambda n: (counts[n], _row_of(n), n))


def _held(points: np.ndarray, outer: np.ndarray, outer_end: np.ndarray) -> float:
    """Share of ``points`` lying inside one of the sorted, disjoint [outer, outer_end)."""
    k = np.searchsorted(outer, points, side="right") - 1
    inside = (k >= 0) & (points < outer_end[np.maximum(k, 0)])
    return float(np.mean(inside)) if points.size else 0.0


def enclosing_marker(tl: Timeline, name: str) -> str | None:
    """The coarsest marker whose occurrences hold most of ``name``'s and span most of the
    profile: the unit that repeats ``name`` inside it, or None."""
    inner = _occurrences(tl, name)
    span = _device_span(tl)
    best: tuple[int, int, str] | None = None
    for other in tl.markers:
        if other == name or not is_marker(other):
            continue
        m = tl.markers[other].merged()
        if not len(m) or len(m) >= inner.size:
            continue
        extent = float(m.ends[-1] - m.starts[0])
        if span > 0 and extent < MIN_COVERAGE * span:
            continue
        if _held(inner, m.starts, m.ends) < NEST_SHARE:
            continue
        key = (len(m), _row_of(other), other)
        if best is None or key < best:
            best = key
    return best[2] if best else None


def drop_warmup(periods: np.ndarray) -> tuple[int, float]:
    """Leading periods longer than WARMUP_FACTOR x the median of the rest (keep >= 2)."""
    k = 0
    ratio = 0.0
    while k < periods.size - 2:
        rest = float(np.median(periods[k + 1 :]))
        if rest <= 0 or periods[k] <= WARMUP_FACTOR * rest:
            break
        ratio = max(ratio, float(periods[k]) / rest)
        k += 1
    return k, ratio


def infer_steps(tl: Timeline) -> Inferred | None:
    """Iterations from the best repeating marker, else the profiled window; None if neither."""
    name = choose_marker(tl)
    outer = enclosing_marker(tl, name) if name is not None else None
    if name is not None and outer is not None and len(tl.markers[outer].merged()) < MIN_OCCURRENCES:
        m = tl.markers[outer].merged()
        what = MARKER_TABLE[_row_of(outer)].what
        note = (
            f"no step markers: {len(m)} iteration(s) taken as the occurrences of the "
            f"{what} '{_shown(outer)}', which holds the repeating '{_shown(name)}' "
            f"({_occurrences(tl, name).size} times: a part of the iteration, not one)"
        )
        return Inferred(m.starts.copy(), m.ends.copy(), "marker", outer, note=note)
    if outer is not None:
        name = outer
    if name is not None:
        starts = _occurrences(tl, name)
        periods = np.diff(starts)
        k, ratio = drop_warmup(periods)
        what = MARKER_TABLE[_row_of(name)].what
        note = (
            f"no step markers: {periods.size} iterations inferred from the repeating "
            f"{what} '{_shown(name)}' (start to start)"
        )
        if k:
            note += f"; {k} warm-up iteration(s) dropped ({ratio:.0f}x the steady median)"
        return Inferred(starts[k:-1], starts[k + 1 :], "marker", name, k, ratio, note)
    spans = [iv.span() for iv in tl.activity.values() if len(iv)]
    if not spans or sum(len(iv) for iv in tl.activity.values()) < WINDOW_MIN_EVENTS:
        return None
    lo = min(s[0] for s in spans if s)
    hi = max(s[1] for s in spans if s)
    if hi - lo < WINDOW_MIN_US:
        return None
    note = (
        f"no step markers and no repeating iteration marker: the profiled window "
        f"({(hi - lo) / 1000.0:.1f} ms, first to last device event) is analysed as one "
        "step"
    )
    return Inferred(np.array([lo]), np.array([hi]), "window", note=note)


def ensure_steps(tl: Timeline, advice: str = "") -> Timeline:
    """Give a Timeline without steps inferred ones, and say how in its limitations."""
    if len(tl.steps):
        tl.meta.extra.setdefault("steps_method", "markers")
        return tl
    inferred = infer_steps(tl)
    if inferred is None:
        return tl
    tl.add_steps(range(inferred.starts.size), inferred.starts, inferred.ends)
    tl.meta.extra["steps_method"] = inferred.method
    if inferred.marker:
        tl.meta.extra["steps_marker"] = inferred.marker
        tl.meta.extra["warmup_dropped"] = inferred.warmup_dropped
    tl.meta.limitations.append(inferred.note + (f" ({advice})" if advice else ""))
    return tl.freeze()
