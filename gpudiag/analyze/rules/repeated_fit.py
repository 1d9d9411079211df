"""``repeated-fit``: ``fit`` called again and again in a loop (online or reinforcement
learning, ``fit(epochs=1)`` per batch of new data), each call paying fit's own start and end.

Why it costs time: every ``fit`` call builds a data adapter and an iterator, a callback list
and a progress bar, starts and ends an epoch, and returns a History; with a few steps per
call that fixed cost is a large part of the loop (tensorflow/tensorflow#35124,
keras-team/keras#13710; 40 fits of 8 steps 1.22-10x slower than one fit of 320, by the
model's step time and the host's load).
gpudiag records the fits of such a loop as one series (record/fit_series.py), so the loop
gets one account: the steps, each fit's own start-up and epoch start, and the time between
the calls.

Example: "fit called 40 times in a loop: each call's start and end take 18% of the loop
(11 ms a call); 9% between the calls". Fix: one ``fit`` over the data gathered (``epochs=N``,
or a generator / PyDataset that yields the new data), or ``model.train_on_batch`` for one
update at a time. Gain at least the in-fit fixed cost the calls after the first pay, at
most that and the time between the calls (which also holds the loop's own code); the point
adds Keras's set-up of each call, taken as the shortest gap between two calls (measured:
40 fits of 8 steps 5-10x slower than one fit of 320 on a loaded 2-core host, where the
time between the calls was half the loop: docs/remedies.md).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.fit_account import FitAccount
from gpudiag.analyze.fit_gain import PART_NOTE, fit_gain, part_severity
from gpudiag.analyze.needs import Needs, OneOf

ID = "repeated-fit"
NEEDS = {"one-fit": Needs(requires={"keras": OneOf(True)})}
MIN_FITS = 3  # a loop, not a fit resumed once


def fixed_s(acc: FitAccount) -> float:
    """What the fits' own start and end cost, the one-off compilation left out."""
    return max(0.0, acc.parts["startup"] + acc.parts["epoch_start"] - acc.compile_s)


def detect(ev: RankEvidence) -> Finding | None:
    acc = ev.fit
    if not acc.measured or acc.fits < MIN_FITS:
        return None
    fixed, between = fixed_s(acc), acc.parts["between_fits"]
    share = fixed / acc.wall_s
    if share < PART_NOTE:
        return None
    gap = between / acc.wall_s
    evidence = {
        "fits": acc.fits,
        "fit_overhead_pct": pct(share),
        "fit_overhead_s": round(fixed, 3),
        "per_fit_ms": round(1e3 * fixed / acc.fits, 1),
        "between_fits_pct": pct(gap),
        "steps_pct": pct(acc.share("steps")),
        "series_s": round(acc.wall_s, 3),
    }
    return Finding(
        ID,
        part_severity(share),
        f"fit called {acc.fits} times in a loop: each call's start and end take {pct(share)}% "
        f"of the loop ({1e3 * fixed / acc.fits:.0f} ms a call); {pct(gap)}% between the calls",
        evidence,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    acc = s.fit
    if acc is None or not acc.measured or acc.fits < 2:
        return []
    keep = 1.0 / acc.fits  # one call's start and end remain
    fixed = fixed_s(acc) * (1 - keep)
    between = acc.parts["between_fits"] * (1 - keep)
    # Keras's set-up of a call, the same every call, is at most the shortest gap: the point
    # takes that much of each gap as removed (all of it in a loop with no code of its own)
    setup = min(between, acc.least_gap_s * (acc.fits - 1))
    g = fit_gain(
        acc,
        fixed,
        fixed + setup,
        fixed + between,
        f"{acc.fits} fits' own start and end took {fixed_s(acc):.2f} s, one call's kept, and "
        f"Keras's set-up of each call up to the shortest gap between calls "
        f"({1e3 * acc.least_gap_s:.0f} ms); at most also the rest of the "
        f"{acc.parts['between_fits']:.2f} s between the calls (the loop's own code)",
    )
    return [
        g.suggestion(
            "Train in one fit call",
            f"Gather the data and call fit once (epochs=N, or a generator / PyDataset that "
            f"yields the new data) instead of {acc.fits} calls; for one update at a time "
            "(online, RL), model.train_on_batch(x, y) runs the compiled step without fit's "
            "data adapter, iterator, callbacks and progress bar (record such a loop with "
            "`gpudiag live`: train_on_batch calls no callbacks).",
            ID,
            "one-fit",
        )
    ]
