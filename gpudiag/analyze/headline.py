"""The run's headline when the steps are not what held the fit up. Pure.

The verdict (data-starved, sync-bound, compute-bound, inconclusive) describes the steps that
ran compiled programs. When recompiling took a large share of the fit, that is the run's
first answer: the reason then opens with it and the step verdict follows, secondary; the
verdict itself keeps its public meaning (docs/method.md, "Compilation"). A model run eagerly
is said the same way: its step verdict is about op-by-op dispatch.

    v = lead(verdict, findings)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.rules import recompilation, run_eagerly
from gpudiag.analyze.verdict import Verdict

NO_STEP_CONFIDENCE = 0.5  # the fit's own figure (compile share), with no analysed step


def lead(verdict: Verdict, findings: Sequence[Finding]) -> Verdict:
    """``verdict`` with a high ``recompilation`` finding said first; a model run eagerly
    said before the step verdict it explains."""
    eager = next((x for x in findings if x.id == run_eagerly.ID and x.severity == "high"), None)
    if eager is not None and "dispatch_share_pct" in eager.evidence:
        verdict = replace(
            verdict,
            reason=f"the model runs eagerly (run_eagerly=True): op-by-op dispatch takes "
            f"{eager.evidence['dispatch_share_pct']:.0f}% of the step; {verdict.reason}",
        )
    f = next((x for x in findings if x.id == recompilation.ID and x.severity == "high"), None)
    if f is None:
        return verdict
    steps = verdict.reason
    if verdict.confidence == 0.0:  # no step of steady state to judge: the compiles are all
        return replace(
            verdict,
            confidence=NO_STEP_CONFIDENCE,
            reason=f"{recompilation.summary(f)}; no profiled step ran without compiling",
        )
    return replace(verdict, reason=f"{recompilation.summary(f)}; between compilations, {steps}")
