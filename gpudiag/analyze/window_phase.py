"""When every profiler window fell in a phase that does not represent the run. Pure.

A window's split (input/compute/sync) describes the steps it profiled. When every window fell
in the warm-up or in a first epoch that fills a ``.cache()`` (the windows planned for later
epochs skipped: the run ended, the profiling budget was spent), the split describes that phase
only, while the run spent most of its time in steadier, often faster, epochs. Then:

* the report says the verdict describes that phase only, and its confidence drops
  (``verdict.UNREPRESENTATIVE``);
* each remedy's gain is what it gives the whole run: the phase's share ``f`` of the run's time
  sped up by ``g``, the rest unchanged -> ``1 / ((1 - f) + f / g)``.

    p = unrepresentative(phases_of_windows, phase, per_batch, busy)
    p["phase"], p["share"], p["note"]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpudiag.analyze.diagnosis import Suggestion

STEADY = ("steady", "slowdown")

PHASE_WORDS = {
    "warm-up": "the warm-up (tracing, compilation, first batches)",
    "cache-fill": "epoch 1, while a .cache() filled or data was first read",
}


def unrepresentative(
    window_phases: list[str], phase: np.ndarray, per_batch: np.ndarray, busy: np.ndarray
) -> dict[str, Any] | None:
    """The phase every window fell in, its share of the run's time and the note to show;
    None when a window stands for the steady run (or the run has no steady steps)."""
    if not window_phases or any(p in STEADY for p in window_phases):
        return None
    steady = np.isin(phase, STEADY)
    if not steady.any():
        return None
    which = max(set(window_phases), key=window_phases.count)
    inside = phase == which
    share = float(busy[inside].sum() / max(1e-9, busy[inside].sum() + busy[steady].sum()))
    there = float(np.median(per_batch[inside])) / 1000 if inside.any() else float("nan")
    rest = float(np.median(per_batch[steady])) / 1000
    windows = "the only profiler window" if len(window_phases) == 1 else "every profiler window"
    note = (
        f"{windows} fell in {PHASE_WORDS.get(which, which)}, at {there:.1f} ms per step; "
        f"the steady run took {rest:.1f} ms per step and {100 * (1 - share):.0f}% of the "
        "time: the verdict describes that phase only, and each gain is scaled to the whole run"
    )
    return {"phase": which, "share": round(share, 4), "note": note}


def whole_run_gain(g: float, share: float) -> float:
    """A speed-up ``g`` of a phase that takes ``share`` of the run, for the whole run."""
    if g <= 1.0:
        return g
    return 1.0 / ((1.0 - share) + share / g)


def scaled_to_run(suggestions: list[Suggestion], window: dict[str, Any] | None) -> None:
    """Each gain (point and range) as the whole run gets it, when the windows measured only
    one phase of it (``unrepresentative``); in place."""
    if not window:
        return
    f = float(window["share"])
    for s in suggestions:
        if s.expected_gain <= 1.0:
            continue
        s.expected_gain = round(whole_run_gain(s.expected_gain, f), 4)
        s.expected_gain_range = [round(whole_run_gain(x, f), 2) for x in s.expected_gain_range]
        s.basis += (
            f"; measured in {window['phase']} only, {100 * f:.0f}% of the run's time: "
            "the gain scaled to the whole run"
        )
