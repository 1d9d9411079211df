"""Two diagnoses in, what moved out: did the change help, and was it the remedy suggested? Pure.

    c = compare(diagnose(base_timelines), diagnose(new_timelines))
    c.work                 # time per sample (or per step) NEW/BASE over each steady part, 95%
    c.step_time_ratio      # NEW median step / BASE median step: a distribution fact, not speed
    c.share_deltas         # {"input": -0.33, "compute": +0.15, ...} (NEW - BASE, fractions)
    c.changes              # what the recorded configurations say changed
    c.remedies             # each of BASE's suggestions: applied, not applied or unknown
    c.judged               # False: a run stopped early or the runs differ; no gate may fire

Runs are compared on work per second, as a wall clock measures it: samples (or steps) over the
elapsed time of each run's steady part (``throughput.py``), with the interval a bootstrap over
epochs and blocks of steps gives (``work_ratio.py``). The median step is shown beside it, and
said to be bimodal when it is (``step_modes.py``): a worker pool's median says nothing of its
speed. A run that stopped early is named and measured only over enough steady steps; runs of
different programs are said to be such (``run_match.py``). A remedy counts as applied when the
configuration changed the way it prescribes (``attribution.py``), never because a finding went
away. The sentences are made in ``compare_text.py``, the shape is ``comparison.py``.
"""

from __future__ import annotations

from typing import Any

from gpudiag.analyze.attribution import config_changes, remedy_status
from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.compare_text import predicted, summary
from gpudiag.analyze.comparison import FEW_STEPS, Comparison, RemedyCheck, RunFigures
from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.analyze.run_match import differences
from gpudiag.analyze.work_ratio import WorkRatio, work_ratio

__all__ = ["FEW_STEPS", "Comparison", "RemedyCheck", "RunFigures", "compare"]


def _ratio(base: float | None, new: float | None) -> float | None:
    if not base or new is None or base <= 0:
        return None
    if new == base:
        return 1.0  # the same run compared with itself: exactly 1
    return round(new / base, 4)


def _unmeasured(b: RunFigures, n: RunFigures) -> str:
    """Why a side's speed cannot be measured: it stopped early with too few steady steps, or
    has no steady steps at all; empty when both can be."""
    for name, r in (("BASE", b), ("NEW", n)):
        if r.stopped and r.steady_steps < FEW_STEPS:
            return (
                f"{name} {r.stopped} after {r.steps} steps, {r.steady_steps} of them steady: "
                f"too few to measure its speed (at least {FEW_STEPS})"
            )
    for name, r in (("BASE", b), ("NEW", n)):
        if r.steady_steps < 2:  # one step has no spread to put an interval on
            why = (
                "no training steps"
                if not r.steps
                else "a single steady step"
                if r.steady_steps
                else "no steady steps after its warm-up"
            )
            return f"{name} has {why}, so its speed cannot be measured"
    return ""


def _work(base: Diagnosis, new: Diagnosis, b: RunFigures, n: RunFigures) -> dict[str, Any] | None:
    """Time per unit of work NEW/BASE over each steady part, its interval, its noise."""
    r = work_ratio((base.run or {}).get("throughput"), (new.run or {}).get("throughput"))
    if r is None:
        return None
    unit = "step"
    if b.global_batch and n.global_batch:
        r, unit = r.scaled(b.global_batch / n.global_batch), "sample"
    out = _interval_dict(r, unit)
    out["base_per_s"], out["new_per_s"] = b.per_second, n.per_second
    out["over"] = {"BASE": b.steady, "NEW": n.steady}
    out["contended"] = {
        name: pct
        for name, d in (("BASE", base), ("NEW", new))
        if (pct := _others_pct(d)) is not None
    }
    return out


def _others_pct(d: Diagnosis) -> float | None:
    """Share (%) of the host CPU other processes took during a run, when it was enough for
    the ``cpu-contention`` finding; None otherwise."""
    f = d.finding("cpu-contention")
    pct = f.evidence.get("cpu_other_processes_p50_pct") if f is not None else None
    return float(pct) if isinstance(pct, int | float) else None


def _interval_dict(r: WorkRatio, unit: str) -> dict[str, Any]:
    return {
        "unit": unit,
        "ratio": round(r.ratio, 4),
        "interval": [round(r.low, 4), round(r.high, 4)],
        "speedup": round(1.0 / r.ratio, 4),
        "speedup_interval": [round(1.0 / r.high, 4), round(1.0 / r.low, 4)],
        "measurable": r.measurable,
        "basis": r.basis,
    }


def _remedies(base: Diagnosis, new: Diagnosis, c: Comparison) -> list[RemedyCheck]:
    """Each distinct suggestion of BASE, checked against NEW's configuration; none is
    attributed between different programs or from a run too short to measure."""
    w = c.work
    speedup = w["speedup"] if w else None
    out: list[RemedyCheck] = []
    seen: set[tuple[str, str]] = set()
    for s in base.suggestions:
        if (s.title, s.finding) in seen:
            continue
        seen.add((s.title, s.finding))
        rng = list(s.expected_gain_range)
        if c.differences:
            status, why = "unknown", "the runs are different programs: nothing is attributed"
        elif c.unmeasured:
            status, why = "unknown", c.unmeasured
        else:
            status, why = remedy_status(s.title, base.config, new.config)
        if status == "applied":
            measured = (
                "speed not comparable"
                if speedup is None
                else f"measured {speedup:.2f}× the work per second"
                + ("" if w and w["measurable"] else " (point estimate, within the noise)")
            )
            why += f"; {measured}, {predicted(s.expected_gain, rng, speedup)}"
        out.append(RemedyCheck(s.title, s.finding, s.expected_gain, rng, status, why))
    return out


def compare(base: Diagnosis, new: Diagnosis) -> Comparison:
    """Compare two diagnoses (BASE before a change, NEW after it)."""
    b, n = RunFigures.of(base), RunFigures.of(new)
    deltas = {
        c: round(new.breakdown.get(c, 0.0) - base.breakdown.get(c, 0.0), 4) for c in CATEGORIES
    }
    base_ids, new_ids = set(b.findings), set(n.findings)
    c = Comparison(
        base=b,
        new=n,
        step_time_ratio=_ratio(b.median_step_ms, n.median_step_ms),
        share_deltas=deltas,
        appeared=[f for f in n.findings if f not in base_ids],
        gone=[f for f in b.findings if f not in new_ids],
        changes=[str(ch) for ch in config_changes(base.config, new.config)],
        differences=differences(base, new),
        unmeasured=_unmeasured(b, n),
    )
    if not c.unmeasured:
        c.work = _work(base, new, b, n)
        if c.work is not None:
            c.work["judged"] = c.judged
    c.remedies = _remedies(base, new, c)
    if c.unmeasured and (b.stopped or n.stopped):
        c.step_time_ratio = None  # nor a median or a speed from a run too short to measure
        for r in (b, n):
            if r.stopped and r.steady_steps < FEW_STEPS:
                r.per_second = None
    c.summary = summary(c, FEW_STEPS)
    return c
