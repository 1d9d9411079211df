"""``validation-heavy``: validation inside ``fit`` takes a large share of the fit's wall time.

Why it costs time: every evaluation runs the whole validation set between two epochs while
training waits; a large set at a small batch pays Keras's per-step cost thousands of times.

Example: "Validation takes 46.0% of the fit (3.5 s in 3 runs)". Fix, each bounded by the
validation time it removes: validate every N epochs (``fit(validation_freq=N)``), a 4× larger
``validation_batch_size`` (short validation steps: the per-step cost is paid a quarter as
often), ``steps_per_execution`` (evaluation runs that many batches per call too; offered under
host-overhead's title with both gains where that finding holds), or a smaller (or cached)
validation set. Not raised where the trace holds no fit account.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.fit_account import FitAccount
from gpudiag.analyze.fit_gain import PART_NOTE, dividing, fit_gain, part_severity
from gpudiag.analyze.gain import batch_scaled
from gpudiag.analyze.rules import host_overhead

ID = "validation-heavy"
TARGET_SHARE = 0.10  # validation_freq is chosen so validation falls to about this share
SHORT_STEP_MS = 10.0  # validation steps this short are mostly Keras's per-step cost
BATCH_FACTOR = 4  # the larger validation batch proposed (forward only: no gradients held)
STEPS = host_overhead.STEPS  # the steps_per_execution proposed: host-overhead's
SUBSET = 0.25  # the smaller validation set proposed


def detect(ev: RankEvidence) -> Finding | None:
    acc = ev.fit
    share = acc.share("validation")
    if not acc.measured or share < PART_NOTE:
        return None
    seconds = acc.parts["validation"]
    evidence = {
        "validation_pct": pct(share),
        "validation_s": round(seconds, 3),
        "validation_runs": acc.validation_runs,
        "epochs": acc.epochs,
        "fit_s": round(acc.wall_s, 3),
    }
    step_ms = None
    if acc.validation_batches:
        step_ms = 1000 * seconds / acc.validation_batches
        evidence["validation_batches"] = acc.validation_batches
        evidence["validation_step_ms"] = round(step_ms, 3)
    return Finding(
        ID,
        part_severity(share),
        f"Validation takes {pct(share)}% of the fit ({seconds:.1f} s in "
        f"{acc.validation_runs} runs)",
        evidence,
        measured=step_ms,  # a validation batch's time, ms
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    acc = s.fit
    if acc is None or not acc.measured:
        return []
    out = _less_often(acc)
    step_ms = f.measured
    if step_ms is not None and step_ms < SHORT_STEP_MS:
        out += _per_step(acc, s, step_ms)
    seconds = acc.parts["validation"]
    g = fit_gain(
        acc,
        seconds * (1 - SUBSET),
        seconds * (1 - SUBSET),
        seconds * (1 - SUBSET),
        f"validation {seconds:.1f} s of a {acc.wall_s:.1f} s fit, a quarter of it kept",
    )
    out.append(
        g.suggestion(
            "Validate on a smaller set",
            "fit(..., validation_steps=N/4) or a quarter of validation_data: the metric gets "
            "noisier, the fit shorter. If the validation pipeline decodes or augments, "
            "cache it once (ds.cache()).",
            ID,
        )
    )
    return out


def _less_often(acc: FitAccount) -> list[Suggestion]:
    """validation_freq=N where validation ran every epoch of a fit of several."""
    runs, epochs = acc.validation_runs, acc.epochs
    if epochs < 2 or runs < epochs:
        return []
    seconds = acc.parts["validation"]
    per_run = seconds / runs
    rest = acc.wall_s - seconds
    n = epochs
    for k in dividing(epochs):  # the last epoch still validated
        kept = per_run * (epochs // k)
        if kept / (rest + kept) <= TARGET_SHARE:
            n = k
            break
    removed = seconds - per_run * max(1, epochs // n)
    g = fit_gain(
        acc,
        removed,
        removed,
        removed,
        f"{runs} validation runs of {per_run:.2f} s; {max(1, epochs // n)} left",
    )
    return [
        g.suggestion(
            f"Validate every {n} epochs",
            f"fit(..., validation_freq={n}): the validation set runs after every {n}th epoch "
            "instead of each one.",
            ID,
        )
    ]


def _per_step(acc: FitAccount, s: Situation, step_ms: float) -> list[Suggestion]:
    """Short validation steps: Keras's per-step cost, paid once per larger batch or call.
    The per-step cost is taken as the training step's host time (the same Keras loop),
    at most the whole validation step."""
    batches = acc.validation_batches or 0
    host_ms = (s.shares.get("other", 0.0) * s.step_ms) if s.step_ms else step_ms / 2
    fixed_ms = min(step_ms, host_ms)
    out = []
    factor = 1 - 1 / BATCH_FACTOR
    g = fit_gain(
        acc,
        batches * fixed_ms / 1000 * factor / 2,
        batches * fixed_ms / 1000 * factor,
        batches * step_ms / 1000 * factor,
        f"{batches} validation steps of {step_ms:.2f} ms, {fixed_ms:.2f} ms of each per-step "
        f"host time (a training step's), paid once per {BATCH_FACTOR}× larger batch",
    )
    batch = s.config.global_batch
    size = f"{BATCH_FACTOR * batch}" if batch else f"{BATCH_FACTOR}× the batch size"
    out.append(
        g.suggestion(
            f"Validate in {BATCH_FACTOR}× larger batches",
            f"fit(..., validation_batch_size={size}): evaluation holds no gradients, so a "
            "larger batch usually fits in memory, and the per-step cost is paid a quarter "
            "as often.",
            ID,
        )
    )
    if (s.config.steps_per_execution or 1) == 1:
        out.append(_steps_per_execution(acc, s, batches, fixed_ms))
    return out


def _steps_per_execution(
    acc: FitAccount, s: Situation, batches: int, fixed_ms: float
) -> Suggestion:
    """One compile option for both: evaluation runs STEPS batches per call, and so does
    training, where host-overhead finds its steps short (its own gain model, over the
    steps' seconds). Offered under host-overhead's title, so the report holds it once."""
    per_val = batches * fixed_ms / 1000 * (1 - 1 / STEPS)
    val = (per_val / 2, per_val * host_overhead.AMORTISED, per_val)
    steps: tuple[float, ...] = (0.0, 0.0, 0.0)
    basis = f"{batches} validation steps with {fixed_ms:.2f} ms of per-step host time"
    if s.has("host-overhead"):
        other = s.shares.get("other", 0.0)
        gains = (
            batch_scaled(other * 0.5, STEPS),
            batch_scaled(other * host_overhead.AMORTISED, STEPS),
            batch_scaled(other, STEPS),
        )
        steps = tuple(acc.parts["steps"] * (1 - 1 / g) for g in gains)
        basis += f", and training steps with host overhead {other:.0%} of step time,"
    g = fit_gain(
        acc,
        val[0] + steps[0],
        val[1] + steps[1],
        val[2] + steps[2],
        f"{basis} dispatched {STEPS} at a time",
    )
    return g.suggestion(
        f"Run {STEPS} steps per execution",
        f"model.compile(..., steps_per_execution={STEPS}): Keras dispatches {STEPS} steps at "
        "once, in training and in evaluation, and runs per-batch callbacks once per execution.",
        ID,
    )
