"""The whole fit's wall time, accounted for: training steps, validation, epoch-end callbacks,
the wait at each epoch's start, start-up and compilation, gpudiag's own time, and the rest.
Pure (Timeline in, FitAccount out).

A fit is more than its steps: validation runs between epochs, callbacks write checkpoints and
summaries at each epoch's end, and each epoch's input pipeline starts again (a shuffle buffer
refilled, a worker pool started). The callback records the fit (``on_train_begin`` to
``on_train_end``), its epochs, its evaluations, gpudiag's own time in its hooks and the other
callbacks' epoch hooks (record/fit_clock.py, docs/trace-format.md); this module splits the
fit's wall time between them::

    acc = fit_account(tl)
    acc.measured        # False for a profile that holds steps only: acc.reason says why
    acc.shares          # {"steps": 0.10, "validation": 0.46, "callbacks": 0.39, ...}
    acc.epoch_start_s   # the wait at each epoch's start (epoch 1's told apart from compilation)

How each part is found (docs/method.md, "The whole fit"): an epoch's *first-batch wait* is
the time from its start to its first step plus what its first step takes beyond the epoch's
steady step; its *teardown* what the last step takes beyond it plus Keras's own work after it
(outside validation, callbacks and gpudiag) where that recurs (up to its median over the
epochs). A later epoch's wait is capped at twice the least later one's (a one-off stall is
left in "other"); the first epoch's at the later epochs' median: the rest of its start is
compilation and warm-up, counted with the start-up.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.step_times import StepRecords, step_records
from gpudiag.trace.model.intervals import Intervals, subtract, union_many
from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.native.events import SPAN_CALLBACK, SPAN_OWN

# the parts, in the order the report draws them, and their labels
PARTS = (
    "steps",
    "validation",
    "callbacks",
    "batch_callbacks",
    "epoch_start",
    "startup",
    "between_fits",
    "gpudiag",
    "other",
)
PART_LABELS = {
    "steps": "training steps",
    "validation": "validation",
    "callbacks": "epoch-end callbacks",
    "batch_callbacks": "per-batch callbacks",
    "epoch_start": "epoch starts (first-batch wait)",
    "startup": "start-up and compilation",
    "between_fits": "between fits",
    "gpudiag": "gpudiag",
    "other": "other",
}
# A boundary step (an epoch's first or last) counts its time beyond the steady step only
# when it takes at least twice a steady step: below that it is within the steady steps' own
# spread (p90 / p50 of steady CPU steps ~1.5).
EXCESS_FACTOR = 2.0
# A later epoch's wait more than twice the least later epoch's is not the recurring refill
# but a one-off stall (a neighbour's load, a collection): its excess is left in "other".
SPIKE = 2.0
NOT_MEASURED = (
    "not measured (the trace holds steps only: no epochs, validation or callbacks); record "
    "the fit with DiagnoseCallback to see where its whole wall time goes"
)


@dataclass
class FitAccount:
    """Where the fit's wall time went, in seconds per part (``PARTS``)."""

    measured: bool
    reason: str = ""  # why not measured
    wall_s: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)
    epochs: int = 0
    steps_per_epoch: float = 0.0  # median batches per epoch
    steady_epoch_s: float = 0.0  # median seconds of steady steps per epoch
    epoch_start_s: list[float] = field(default_factory=list)  # per epoch (epoch 1 estimated)
    # the first epoch's first-batch wait beyond the later epochs' (tracing, compilation): in
    # "startup", as are the warm-up steps after it
    compile_s: float = 0.0
    validation_runs: int = 0
    validation_batches: int | None = None
    callbacks: dict[str, float] = field(default_factory=dict)  # seconds by class, timed
    callbacks_timed: bool = False
    callback_facts: list[dict[str, Any]] = field(default_factory=list)
    # the other callbacks' per-batch hooks by class: seconds, calls, predict/evaluate inside
    batch_callbacks: dict[str, dict[str, float]] = field(default_factory=dict)
    fits: int = 1  # fit calls in the account (a series of fits in a loop: several)
    # the shortest time between two fits of a series: at least Keras's set-up of one call
    # (the same every call), the loop's own code where it has any
    least_gap_s: float = 0.0

    @property
    def shares(self) -> dict[str, float]:
        if not self.measured or self.wall_s <= 0:
            return {}
        return {k: v / self.wall_s for k, v in self.parts.items()}

    def share(self, part: str) -> float:
        return self.shares.get(part, 0.0)

    def to_dict(self) -> dict[str, Any]:
        if not self.measured:
            return {"measured": False, "reason": self.reason}
        return {
            "measured": True,
            "wall_s": round(self.wall_s, 3),
            "seconds": {k: round(v, 3) for k, v in self.parts.items()},
            "shares": {k: round(v, 4) for k, v in self.shares.items()},
            "epochs": self.epochs,
            "steps_per_epoch": round(self.steps_per_epoch, 1),
            "epoch_start_s": [round(x, 3) for x in self.epoch_start_s],
            "compile_s": round(self.compile_s, 3),
            "validation_runs": self.validation_runs,
            "validation_batches": self.validation_batches,
            "callbacks_s": {k: round(v, 3) for k, v in self.callbacks.items()},
            "callbacks_timed": self.callbacks_timed,
            "batch_callbacks_s": {
                k: round(float(v.get("s", 0.0)), 3) for k, v in self.batch_callbacks.items()
            },
            "fits": self.fits,
        }


def fit_account(tl: Timeline) -> FitAccount:
    """The fit account of one timeline; ``measured=False`` where the trace holds no fit."""
    epochs = sorted(tl.spans.get("epoch", []))
    fits = sorted(tl.spans.get("fit", []))
    r = step_records(tl)
    if not (epochs or fits) or not len(r):
        return FitAccount(False, NOT_MEASURED)
    evals = Intervals(*_cols(tl.spans.get("evaluation", [])))
    f0 = fits[0][0] if fits else min(float(r.start[0]), epochs[0][0])
    tails = [float(r.end[-1]), epochs[-1][1] if epochs else 0.0, (evals.span() or (0, 0))[1]]
    f1 = fits[-1][1] if fits else max(tails)
    own = Intervals(*_cols(tl.spans.get(SPAN_OWN, []))).clip(f0, f1)
    by_class = {
        k[len(SPAN_CALLBACK) :]: Intervals(*_cols(v)).clip(f0, f1)
        for k, v in tl.spans.items()
        if k.startswith(SPAN_CALLBACK)
    }
    facts = list(tl.meta.extra.get("callbacks") or [])
    timed = any(isinstance(f, dict) and f.get("timed") for f in facts)
    calls = union_many(list(by_class.values())) if by_class else Intervals()
    calls = subtract(calls, own)
    busy = union_many([evals, own, calls]).merged()  # explained time between the steps
    # a callback listed before gpudiag runs its on_epoch_end inside the epoch's last step
    # (closed by gpudiag's own hook), and gpudiag's step hook may open a profiler window:
    # neither is the step's
    theirs = union_many([own, calls]).merged()
    net = np.maximum(r.busy - theirs.covered_in(r.start, r.end), 0.0)
    r = StepRecords(r.start, r.end, r.batches, net)

    starts = [s for s, _ in epochs] or [float(r.start[0])]
    of = np.maximum(np.searchsorted(np.array(starts), r.start, side="right") - 1, 0)
    n_ep = len(starts)
    run_median = float(np.median(r.per_batch))
    pre, fx, lx, rem, steady, batches = (np.zeros(n_ep) for _ in range(6))
    warm = 0.0
    for i in range(n_ep):
        idx = np.nonzero(of == i)[0]
        if not idx.size:
            continue
        first, last = int(idx[0]), int(idx[-1])
        inner = idx[1:-1] if idx.size >= 3 else idx
        m = float(np.median(r.per_batch[inner])) if idx.size >= 3 else run_median
        pre[i] = _free(starts[i], float(r.start[first]), busy)
        fx[i] = _excess(r, first, m)
        lx[i] = _excess(r, last, m) if last != first else 0.0
        nxt = min(starts[i + 1] if i + 1 < n_ep else f1, _fit_end(fits, starts[i], f1))
        rem[i] = _free(float(r.end[last]), nxt, busy) if timed else 0.0
        if i == 0:
            warm = _warmup(r, idx, m)
        batches[i] = float(r.batches[idx].sum())
        steady[i] = float(r.busy[idx].sum()) - fx[i] - lx[i] - (warm if i == 0 else 0.0)

    # Keras's own work after an epoch's last step (outside validation, callbacks, gpudiag)
    # counts where it recurs: each epoch's up to their median; a one-off stall is left over
    start_part, end_part = pre + fx, lx + np.minimum(rem, float(np.median(rem)))
    one_off = 0.0  # the first epoch's excess over the later ones: compilation, first iterators
    if n_ep >= 2:
        # a later epoch's wait beyond SPIKE times the least of them is a one-off stall (left
        # in "other"), not the refill every epoch makes
        for part in (start_part, end_part):
            part[1:] = np.minimum(part[1:], SPIKE * float(part[1:].min()))
        # the first epoch's capped at the later epochs' median: compilation goes to the
        # start-up, a first evaluation's iterator built once to what is left
        one_off = max(0.0, start_part[0] - float(np.median(start_part[1:])))
        start_part[0] -= one_off
        end_part[0] = min(end_part[0], float(np.median(end_part[1:])))
    else:
        one_off = float(start_part[0])
        start_part[0] = 0.0
        end_part[0] = 0.0
    head = _heads(fits, starts, theirs) if fits else _free(f0, starts[0], theirs)
    batch = _batch_callbacks(tl)
    steps_s = max(0.0, float(steady.sum()))
    in_batch = min(steps_s, 1e6 * sum(float(v.get("s", 0.0)) for v in batch.values()))
    parts = {
        "steps": steps_s - in_batch,  # the other callbacks' batch hooks run inside the steps
        "validation": subtract(evals.clip(f0, f1), own).total(),
        "callbacks": calls.total() if timed else _untimed(r, of, starts, f1, busy, fits),
        "batch_callbacks": in_batch,
        "epoch_start": float(start_part.sum() + end_part.sum()),
        "startup": head + one_off + warm,
        "between_fits": _between(fits, own),
        "gpudiag": own.total(),
    }
    wall = max(f1 - f0, 1.0)
    parts["other"] = max(0.0, wall - sum(parts.values()))
    return FitAccount(
        True,
        wall_s=wall / 1e6,
        parts={k: float(parts[k]) / 1e6 for k in PARTS},
        epochs=n_ep,
        steps_per_epoch=float(np.median(batches)),
        steady_epoch_s=float(np.median(steady)) / 1e6,
        epoch_start_s=[float(x) / 1e6 for x in start_part + end_part] if n_ep >= 2 else [],
        compile_s=one_off / 1e6,
        validation_runs=len(tl.spans.get("evaluation", [])),
        validation_batches=_int(tl.meta.extra.get("validation_batches")),
        callbacks={k: v.total() / 1e6 for k, v in by_class.items() if v.total() > 0},
        callbacks_timed=timed,
        callback_facts=[f for f in facts if isinstance(f, dict)],
        batch_callbacks=batch,
        fits=max(1, len(fits)),
        least_gap_s=_least_gap(fits, own) / 1e6,
    )


def _fit_end(fits: list[tuple[float, float]], t: float, default: float) -> float:
    """The end of the fit that holds time ``t`` (the whole account's end where none)."""
    for s, e in fits:
        if s <= t <= e:
            return e
    return default


def _heads(fits: list[tuple[float, float]], starts: list[float], theirs: Intervals) -> float:
    """Each fit's time from its begin to its first epoch's, gpudiag's own taken out."""
    out = 0.0
    arr = np.array(starts)
    for s, e in fits:
        first = arr[(arr >= s) & (arr <= e)]
        if first.size:
            out += _free(s, float(first.min()), theirs)
    return out


def _between(fits: list[tuple[float, float]], own: Intervals) -> float:
    """Time outside every fit of a series (the loop's own code and Keras's set-up of each
    ``fit`` before its callbacks hear of it), gpudiag's own time taken out."""
    out = 0.0
    for (_, e0), (s1, _) in itertools.pairwise(fits):
        if s1 > e0:
            out += _free(e0, s1, own)
    return out


def _least_gap(fits: list[tuple[float, float]], own: Intervals) -> float:
    """The shortest time between two fits of a series, gpudiag's own taken out (0: none)."""
    gaps = [_free(e0, s1, own) for (_, e0), (s1, _) in itertools.pairwise(fits) if s1 > e0]
    return min(gaps) if gaps else 0.0


def _batch_callbacks(tl: Timeline) -> dict[str, dict[str, float]]:
    """The other callbacks' per-batch totals the recorder wrote (record/fit_clock.py)."""
    raw = tl.meta.extra.get("batch_callbacks")
    if not isinstance(raw, dict):
        return {}
    out: dict[str, dict[str, float]] = {}
    for name, row in raw.items():
        if isinstance(row, dict):
            vals = {
                str(k): float(v)
                for k, v in row.items()
                if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
            }
            if vals.get("s", 0.0) > 0:
                out[str(name)] = vals
    return out


def _cols(spans: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    return [s for s, _ in spans], [e for _, e in spans]


def _free(lo: float, hi: float, busy: Intervals) -> float:
    """Time in [lo, hi) that ``busy`` does not explain."""
    return max(0.0, (hi - lo) - busy.overlap_with(lo, hi)) if hi > lo else 0.0


def _excess(r: StepRecords, i: int, steady: float) -> float:
    """What record ``i`` takes beyond its batches at the steady per-batch time."""
    usual = steady * float(r.batches[i])
    return float(r.busy[i]) - usual if r.busy[i] >= EXCESS_FACTOR * usual else 0.0


def _warmup(r: StepRecords, idx: np.ndarray, steady: float) -> float:
    """The first epoch's leading steps after its first that are warm-up: their excess."""
    out = 0.0
    for k in idx[1 : max(1, idx.size // 2)]:
        if r.per_batch[k] < T.WARMUP_FACTOR * steady:
            break
        out += float(r.busy[k]) - steady * float(r.batches[k])
    return out


def _untimed(
    r: StepRecords,
    of: np.ndarray,
    starts: list[float],
    f1: float,
    busy: Intervals,
    fits: list[tuple[float, float]],
) -> float:
    """Without timed callbacks, the time between an epoch's last step and the next epoch
    (or its fit's end) that validation and gpudiag do not explain is the epoch-end
    callbacks' (and Keras's)."""
    out = 0.0
    for i in range(len(starts)):
        idx = np.nonzero(of == i)[0]
        if idx.size:
            nxt = min(starts[i + 1] if i + 1 < len(starts) else f1, _fit_end(fits, starts[i], f1))
            out += _free(float(r.end[idx[-1]]), nxt, busy)
    return out


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
