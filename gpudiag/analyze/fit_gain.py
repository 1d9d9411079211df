"""The fit in the verdict and in the gains: when the training steps are a minority of the fit,
the headline says so first, and a step remedy's gain is restated over the whole fit. Pure.

    fit_removed(acc, 3.0)              # speed-up of the fit when 3 s of it go
    headline(acc)                      # "training steps are 10% of this fit; validation 46%, ..."
    over_fit(suggestions, acc)         # step remedies' gains as gains of the whole fit

A step remedy makes the steps faster, not the validation or the callbacks: with the steps a
share *p* of the fit and a step gain *g*, the fit gains ``1 / ((1 - p) + p / g)``. It is said
only where the steps are a minority and the parts that recur with the fit's length
(validation, epoch-end callbacks, epoch starts) hold a finding's share: a long start-up alone
is a fixed cost a longer fit amortises, and the steps' figures stand.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Suggestion
from gpudiag.analyze.fit_account import PART_LABELS, FitAccount
from gpudiag.analyze.gain import Gain

# The steps are a minority of the fit below half its wall time
STEPS_MINORITY = 0.5
# A part of the fit outside the steps, measured as a span (validation, epoch-end callbacks),
# worth a finding: TraceML's lower input anchor; removing it is worth ≥ 1.11×, and an
# ordinary validation (a tenth of the data, forward only: ~3% of the fit) or checkpoint stays
# well under it
PART_SHARE = 0.10
# below PART_SHARE, down to this, validation or callbacks are named at info severity (xprof's
# note level for collectives): a cost worth knowing, not the fit's bottleneck
PART_NOTE = 0.05
# the epochs' first-batch wait is inferred from the steps (a one-off stall can add to it):
# xprof's bottleneck level, removing it is worth ≥ 1.18×
EPOCH_START_SHARE = 0.15
PART_HIGH = 0.35  # a third of the fit: a larger cost than most steps' own stalls
RECURRING = ("validation", "callbacks", "batch_callbacks", "epoch_start", "between_fits")
# the findings whose gains are already of the whole fit
FIT_FINDINGS = frozenset(
    {
        "validation-heavy",
        "epoch-end-callbacks",
        "epoch-start-wait",
        "batch-callbacks",
        "repeated-fit",
    }
)
SHOWN_SHARE = 0.05  # parts named in the headline


def fit_removed(acc: FitAccount, seconds: float) -> float:
    """Speed-up of the fit when ``seconds`` of it go (never more than 20×: a fit is never
    free)."""
    if not acc.measured or acc.wall_s <= 0:
        return 1.0
    left = max(acc.wall_s - max(0.0, seconds), acc.wall_s / 20)
    return acc.wall_s / left


def fit_gain(acc: FitAccount, low_s: float, point_s: float, high_s: float, basis: str) -> Gain:
    """A remedy that removes ``point_s`` seconds of the fit (``low_s``..``high_s``)."""
    return Gain.of(
        fit_removed(acc, point_s), fit_removed(acc, low_s), fit_removed(acc, high_s), basis
    )


def part_severity(share: float) -> str:
    """A measured part of the fit (validation, callbacks): info from PART_NOTE, moderate
    from PART_SHARE, high from PART_HIGH."""
    if share >= PART_HIGH:
        return "high"
    return "moderate" if share >= PART_SHARE else "info"


def dividing(epochs: int) -> list[int]:
    """Every N from 2 that divides the fit's epochs: validation (or a callback) every Nth
    epoch still runs after the last one."""
    return [k for k in range(2, epochs + 1) if epochs % k == 0]


def recurring(acc: FitAccount) -> tuple[str, ...]:
    """The parts that grow with the fit's length; in a series of fits each fit's start-up
    recurs too."""
    return RECURRING + (("startup",) if acc.fits > 1 else ())


def steps_minority(acc: FitAccount | None) -> bool:
    """The steps are a minority of the fit and recurring parts hold the rest."""
    if acc is None or not acc.measured:
        return False
    again = sum(acc.share(p) for p in recurring(acc))
    return acc.share("steps") < STEPS_MINORITY and again >= PART_SHARE


def headline(acc: FitAccount | None) -> str:
    """'training steps are 10% of this fit; validation 46%, epoch-end callbacks 39%', or ''."""
    if acc is None or not steps_minority(acc):
        return ""
    others = sorted(
        (p for p in acc.parts if p not in ("steps", "other") and acc.share(p) >= SHOWN_SHARE),
        key=lambda p: -acc.share(p),
    )
    named = ", ".join(f"{PART_LABELS[p]} {100 * acc.share(p):.0f}%" for p in others)
    whole = f"these {acc.fits} fits" if acc.fits > 1 else "this fit"
    return f"training steps are {100 * acc.share('steps'):.0f}% of {whole}" + (
        f"; {named}" if named else ""
    )


def over_fit(suggestions: list[Suggestion], acc: FitAccount | None) -> list[Suggestion]:
    """Step remedies' gains restated over the whole fit where the steps are a minority."""
    if acc is None or not steps_minority(acc):
        return suggestions
    p = acc.share("steps")
    for s in suggestions:
        if s.finding in FIT_FINDINGS or s.expected_gain <= 1.0:
            continue
        step_gain = s.expected_gain
        s.expected_gain = _scaled(step_gain, p)
        s.expected_gain_range = [round(_scaled(g, p), 2) for g in s.expected_gain_range]
        s.basis += f"; {step_gain:.2f}× on the training steps, which are {100 * p:.0f}% of this fit"
    return suggestions


def _scaled(step_gain: float, p: float) -> float:
    return 1.0 / ((1.0 - p) + p / max(step_gain, 1e-6))
