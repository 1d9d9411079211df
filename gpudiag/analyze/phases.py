"""The whole run, not one window: phases of a fit, and profiler windows weighted by the time
they stand for. Pure (Timeline in, RunView out).

A fit is not one steady state: the first steps trace and compile, a ``.cache()`` pipeline
fills its cache during epoch 1 and is fast afterwards, evaluation interleaves, and a run can
slow down late. DiagnoseCallback records several short profiler windows spread over the fit;
each gives its own input/compute/sync split. This module finds the phases from the step
times of the whole run and weighs each window's split by the steady-state run time it stands
for (the steps nearest to it), so one early window cannot decide the verdict::

    run = whole_run(tl)
    run.phases    # [Phase("warm-up", ...), Phase("cache-fill", ...), ...]
    run.windows   # one WindowView per profiler window: phase, weight, shares, verdict
    run.breakdown # step_breakdown of all windows, shares replaced by the weighted shares
    run.note      # "windows disagree: ..." when they do, else ""

Thresholds (reasons in docs/thresholds.md): a step at least ``thresholds.WARMUP_FACTOR``
times the run's steady median at the start of the run is warm-up; a first epoch at least
``FIRST_EPOCH_FACTOR`` times slower per batch than the later ones is a cache fill (or cold
first read); a last epoch (or last third of a one-epoch run) at least ``SLOWDOWN_FACTOR``
times slower than the steady median before it is a late slowdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.breakdown import (
    CATEGORIES,
    Breakdown,
    normalised,
    profiled_steps,
    python_fed,
    step_breakdown,
)
from gpudiag.analyze.step_times import StepRecords, step_records
from gpudiag.analyze.throughput import steady_throughput
from gpudiag.analyze.verdict import decide
from gpudiag.analyze.window_phase import unrepresentative
from gpudiag.trace.model.timeline import Timeline

FIRST_EPOCH_FACTOR = 1.5
SLOWDOWN_FACTOR = 1.3
MIN_STEPS_FOR_PHASES = 6  # fewer steps: no phase detection
# the callback takes at most 8 profiler windows; a trace cut into more runs of profiled
# steps (steps numbered out of order) is weighed as one window, not window by window
MAX_WINDOWS = 64

SPAN_EPOCH = "epoch"
SPAN_EVALUATION = "evaluation"


@dataclass
class Phase:
    kind: str  # warm-up | cache-fill | evaluation | slowdown
    start_us: float
    end_us: float
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, t0: float) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "start_s": round((self.start_us - t0) / 1e6, 3),
            "duration_s": round((self.end_us - self.start_us) / 1e6, 3),
            "detail": self.detail,
            "evidence": self.evidence,
        }


@dataclass
class WindowView:
    start_us: float
    end_us: float
    steps: int
    epoch: int | None
    phase: str  # steady | warm-up | cache-fill | slowdown
    shares: dict[str, float]
    verdict: str
    weight: float = 0.0  # share of the steady-state run time this window stands for

    def to_dict(self, t0: float) -> dict[str, Any]:
        return {
            "start_s": round((self.start_us - t0) / 1e6, 3),
            "steps": self.steps,
            "epoch": None if self.epoch is None else self.epoch + 1,
            "phase": self.phase,
            "verdict": self.verdict,
            "weight": round(self.weight, 4),
            "shares": {k: round(v, 4) for k, v in self.shares.items()},
        }


@dataclass
class RunView:
    breakdown: Breakdown
    windows: list[WindowView] = field(default_factory=list)
    phases: list[Phase] = field(default_factory=list)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""
    disagree: bool = False
    t0: float = 0.0
    throughput: dict[str, Any] | None = None  # the steady part's speed (throughput.py)
    window_phase: dict[str, Any] | None = None  # every window outside it (window_phase.py)

    def to_dict(self) -> dict[str, Any]:
        return {
            "windows": [w.to_dict(self.t0) for w in self.windows],
            "phases": [p.to_dict(self.t0) for p in self.phases],
            "epochs": self.epochs,
            "note": self.note,
            "throughput": self.throughput,
            "window_phase": self.window_phase,
        }


def _epoch_of(t: np.ndarray, spans: list[tuple[float, float]]) -> np.ndarray:
    if not spans:
        return np.zeros(t.size, dtype=np.int64)
    starts = np.array(sorted(s for s, _ in spans))
    return np.maximum(np.searchsorted(starts, t, side="right") - 1, 0)


def _windows(tl: Timeline) -> list[tuple[int, int]]:
    """Runs of consecutive profiled steps (in time order) as [i, j) into sorted steps."""
    order = np.argsort(tl.steps.start, kind="stable")
    prof = tl.steps.profiled[order]
    index = tl.steps.index[order]
    if not prof.size:
        return []
    # a run continues while the step is profiled and numbered right after the one before
    joined = np.zeros(prof.size, dtype=bool)
    joined[1:] = prof[1:] & prof[:-1] & (index[1:] == index[:-1] + 1)
    heads = np.nonzero(prof & ~joined)[0]
    # a run ends where the next step does not join it
    lasts = np.nonzero(prof & ~np.append(joined[1:], False))[0]
    return list(zip(heads.tolist(), (lasts + 1).tolist(), strict=True))


def whole_run(tl: Timeline, fed_from_python: bool = False) -> RunView:
    """Phases, windows and the weighted breakdown of one timeline (one rank);
    ``fed_from_python``: Keras pulls the batches from Python (``breakdown.python_fed``)."""
    whole = step_breakdown(tl)
    if fed_from_python:
        whole = python_fed(whole)
    r = step_records(tl)
    t0 = float(r.start[0]) if len(r) else 0.0
    view = RunView(breakdown=whole, t0=t0)
    if not len(r):
        return view
    epochs = _epoch_of(r.start, tl.spans.get(SPAN_EPOCH, []))
    per = r.per_batch
    phase = np.array(["steady"] * len(r), dtype=object)
    view.phases = _phases(tl, r, epochs, per, phase)
    view.epochs = _epoch_rows(r, epochs, per, phase)
    spans = tl.spans
    view.throughput = steady_throughput(
        r, phase, spans.get(SPAN_EPOCH, []), spans.get(SPAN_EVALUATION, [])
    )

    windows = _windows(tl)
    if not windows or not whole.steps_analyzed:
        return view
    if len(windows) > MAX_WINDOWS:
        windows = [(windows[0][0], windows[-1][1])]
    # the whole breakdown's rows are its analyzed steps in time order: a window's shares
    # are its steps' rows weighted by their durations (what step_breakdown of the window
    # alone gives, without computing it again)
    order = np.argsort(tl.steps.start, kind="stable")
    analyzed = profiled_steps(tl)
    row_of = np.full(len(tl.steps), -1, dtype=np.int64)  # step -> its breakdown row
    row_of[analyzed] = np.arange(analyzed.size)
    rows = whole.per_step
    durs = whole.step_durations_us
    views: list[WindowView] = []
    st = tl.steps
    for i, j in windows:
        idx = order[i:j]
        sel = row_of[idx]
        sel = sel[sel >= 0]
        if not sel.size:
            continue
        wts = durs[sel] / durs[sel].sum()
        shares = normalised(
            dict(zip(CATEGORIES, (rows[sel] * wts[:, None]).sum(axis=0).tolist(), strict=True))
        )
        s, e = float(st.start[idx].min()), float(st.end[idx].max())
        k = min(int(np.searchsorted(r.start, s, side="left")), len(r) - 1)
        views.append(
            WindowView(
                s,
                e,
                int(j - i),
                int(epochs[k]) if tl.spans.get(SPAN_EPOCH) else None,
                str(phase[k]),
                shares,
                decide(shares)[0],
            )
        )
    view.window_phase = unrepresentative([w.phase for w in views], phase, per, r.busy)
    if view.window_phase:
        view.note = view.window_phase["note"]
    if len(views) <= 1:
        view.windows = views
        if view.windows:
            view.windows[0].weight = 1.0
        return view
    steady = [w for w in views if w.phase in ("steady", "slowdown")] or views
    keep = (
        np.isin(phase, ["steady", "slowdown"])
        if any(w.phase in ("steady", "slowdown") for w in views)
        else np.ones(len(r), dtype=bool)
    )
    weights = _stand_for(steady, (r.start[keep] + r.end[keep]) / 2, epochs[keep], r.busy[keep])
    total = float(weights.sum()) or 1.0
    for w, wt in zip(steady, weights.tolist(), strict=True):
        w.weight = wt / total
    shares = {c: sum(w.weight * w.shares[c] for w in steady) for c in whole.shares}
    view.breakdown = replace(whole, shares=normalised(shares))
    view.windows = views
    verdict = decide(view.breakdown.shares)[0]
    disagreeing = sorted({w.verdict for w in steady} - {verdict})
    others = [w for w in views if w not in steady and w.verdict != verdict]
    notes = [view.note] if view.note else []
    if disagreeing:
        view.disagree = True
        notes.append(
            "windows disagree: "
            + "; ".join(
                f"{w.verdict} at {(w.start_us - t0) / 1e6:.1f} s ({100 * w.weight:.0f}% of the "
                "steady run)"
                for w in steady
                if w.verdict != verdict
            )
        )
    if others:
        notes.append(
            "; ".join(
                f"the {w.phase} window at {(w.start_us - t0) / 1e6:.1f} s was "
                f"{w.verdict}, not counted in the steady state"
                for w in others
            )
        )
    view.note = "; ".join(notes)
    return view


def _stand_for(
    windows: list[WindowView], centres: np.ndarray, epochs: np.ndarray, busy: np.ndarray
) -> np.ndarray:
    """Run time each window stands for: every step goes to the nearest window of its own
    epoch, or, in an epoch without one, to the nearest window overall."""
    mid = np.array([(w.start_us + w.end_us) / 2 for w in windows])
    w_epoch = np.array([-1 if w.epoch is None else w.epoch for w in windows])
    out = np.zeros(len(windows))
    if not centres.size:
        return np.ones(len(windows))
    dist = np.abs(centres[:, None] - mid[None, :])
    same = epochs[:, None] == w_epoch[None, :]
    has_own = same.any(axis=1)
    dist = np.where(same | ~has_own[:, None], dist, np.inf)
    np.add.at(out, np.argmin(dist, axis=1), busy)
    return out


def _phases(
    tl: Timeline, r: StepRecords, epochs: np.ndarray, per: np.ndarray, phase: np.ndarray
) -> list[Phase]:
    """Mark ``phase`` per record and return the phases found."""
    out: list[Phase] = []
    n = len(r)
    evals = tl.spans.get(SPAN_EVALUATION, [])
    if evals:
        total = sum(e - s for s, e in evals)
        wall = float(r.end.max() - r.start.min()) + total
        out.append(
            Phase(
                "evaluation",
                evals[0][0],
                evals[-1][1],
                f"evaluation took {total / 1e6:.1f} s ({100 * total / wall:.0f}% of the "
                f"fit) in {len(evals)} runs",
                {"seconds": round(total / 1e6, 3), "runs": len(evals)},
            )
        )
    if int(r.batches.sum()) < MIN_STEPS_FOR_PHASES:
        return out
    # warm-up: leading steps far slower than the first epoch's own typical step (a slow
    # first epoch as a whole is a cache fill, judged below), at most half of that epoch
    first = np.nonzero(epochs == epochs[0])[0]
    steady_median = float(np.median(per[first]))
    k = 0
    while k < first.size // 2 and per[k] >= T.WARMUP_FACTOR * steady_median:
        k += 1
    if k:
        phase[:k] = "warm-up"
        n_warm = int(r.batches[:k].sum())
        out.append(
            Phase(
                "warm-up",
                float(r.start[0]),
                float(r.end[k - 1]),
                ("the first step took " if n_warm == 1 else f"the first {n_warm} steps took ")
                + f"{(r.end[k - 1] - r.start[0]) / 1e6:.2f} s (tracing, compilation, "
                f"first batches); steady steps take {steady_median / 1000:.1f} ms",
                {
                    "steps": n_warm,
                    "seconds": round(float(r.end[k - 1] - r.start[0]) / 1e6, 3),
                },
            )
        )
    n_epochs = int(epochs.max()) + 1 if n else 0
    med = [
        float(np.median(per[(epochs == e) & (phase == "steady")]))
        if np.any((epochs == e) & (phase == "steady"))
        else float("nan")
        for e in range(n_epochs)
    ]
    if n_epochs >= 2 and np.isfinite(med[0]):
        measured = [m for m in med[1:] if np.isfinite(m)]  # epochs with steady steps
        later = float(np.median(measured)) if measured else float("nan")
        if measured and med[0] >= FIRST_EPOCH_FACTOR * later:
            sel = (epochs == 0) & (phase == "steady")
            phase[sel] = "cache-fill"
            idx = np.nonzero(epochs == 0)[0]
            out.append(
                Phase(
                    "cache-fill",
                    float(r.start[idx[0]]),
                    float(r.end[idx[-1]]),
                    f"epoch 1 ran at {med[0] / 1000:.1f} ms per step, later epochs at "
                    f"{later / 1000:.1f} ms: a .cache() being filled or a cold first "
                    "read; the verdict describes the later epochs",
                    {"epoch1_ms": round(med[0] / 1000, 3), "later_ms": round(later / 1000, 3)},
                )
            )
    steady_idx = np.nonzero(phase == "steady")[0]
    if steady_idx.size >= MIN_STEPS_FOR_PHASES:
        if n_epochs >= 3 and np.isfinite(med[-1]):
            skip = 1 if any(p.kind == "cache-fill" for p in out) else 0
            before = [m for m in med[skip:-1] if np.isfinite(m)]
            late = epochs == n_epochs - 1
            label = f"epoch {n_epochs}"
        else:
            before = []
            cut = steady_idx[(2 * steady_idx.size) // 3]
            late = (np.arange(n) >= cut) & (phase == "steady")
            head = per[steady_idx[: (2 * steady_idx.size) // 3]]
            before = [float(np.median(head))] if head.size else []
            label = "the last third of the run"
        late_sel = late & (phase == "steady")
        if before and np.any(late_sel):
            base = float(np.median(before))
            late_med = float(np.median(per[late_sel]))
            if late_med >= SLOWDOWN_FACTOR * base:
                phase[late_sel] = "slowdown"
                idx = np.nonzero(late_sel)[0]
                out.append(
                    Phase(
                        "slowdown",
                        float(r.start[idx[0]]),
                        float(r.end[idx[-1]]),
                        f"{label} ran at {late_med / 1000:.1f} ms per step against "
                        f"{base / 1000:.1f} ms before",
                        {"late_ms": round(late_med / 1000, 3), "before_ms": round(base / 1000, 3)},
                    )
                )
    return sorted(out, key=lambda p: p.start_us)


def _epoch_rows(
    r: StepRecords, epochs: np.ndarray, per: np.ndarray, phase: np.ndarray
) -> list[dict[str, Any]]:
    rows = []
    for e in range(int(epochs.max()) + 1 if len(r) else 0):
        sel = epochs == e
        if not np.any(sel):
            continue
        rows.append(
            {
                "epoch": e + 1,
                "steps": int(r.batches[sel].sum()),
                "median_ms": round(float(np.median(per[sel])) / 1000, 3),
                "seconds": round(float(r.end[sel].max() - r.start[sel].min()) / 1e6, 3),
            }
        )
    return rows
