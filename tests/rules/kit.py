"""What one rule sees, built small: a rank's evidence from a tests/helpers/synth.py timeline (or the
empty timeline a lint sees) and the situation its remedies are chosen against."""

from __future__ import annotations

from typing import Any

import numpy as np

from gpudiag.analyze.breakdown import CATEGORIES, step_breakdown
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import HostFacts, RankEvidence, Situation
from gpudiag.analyze.gaps import idle_gaps
from gpudiag.analyze.rules import LintRule, RefinedLint
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Kind, Timeline
from tests.helpers.synth import periodic


def evidence(
    tl: Timeline | None = None,
    config: dict[str, Any] | None = None,
    host: HostFacts | None = None,
    **synth: Any,
) -> RankEvidence:
    """The evidence of one rank, analysed as ``diagnose`` does; ``synth`` goes to
    ``periodic`` when no timeline is given."""
    tl = tl if tl is not None else periodic(**synth)
    b = step_breakdown(tl)
    cfg = RunConfig(**(config or {}))
    return RankEvidence(
        tl, b if b.steps_analyzed else None, idle_gaps(tl), cfg, host or HostFacts()
    )


def lint(**config: Any) -> RankEvidence:
    """A lint's evidence before the first step: the configuration only (``rules.lint``)."""
    return RankEvidence(Timeline(), None, [], RunConfig(**config), HostFacts())


def situation(
    config: dict[str, Any] | None = None,
    host: HostFacts | None = None,
    findings: tuple[str, ...] = (),
    verdict: str = "compute-bound",
    **shares: float,
) -> Situation:
    """Shares not given are 0 except 'other', which takes the rest."""
    s = dict.fromkeys(CATEGORIES, 0.0) | shares
    if "other" not in shares:
        s["other"] = max(0.0, 1.0 - sum(v for k, v in s.items() if k != "other"))
    found = {f: Finding(f, "moderate", f, {}) for f in findings}
    return Situation(s, verdict, RunConfig(**(config or {})), host or HostFacts(), found)


def titles(suggestions: list[Suggestion]) -> list[str]:
    return [s.title for s in suggestions]


def text(suggestions: list[Suggestion]) -> str:
    return " ".join(f"{s.title} {s.detail}" for s in suggestions)


def tiny_kernels(idle: float, kernel_us: float = 10.0, steps: int = 10) -> Timeline:
    """1 ms steps of back-to-back ``kernel_us`` kernels, then the device idles ``idle`` of the
    step (what a launch-bound run looks like)."""
    tl = Timeline()
    step = 1000.0
    n = round((1.0 - idle) * step / kernel_us)
    for i in range(steps):
        starts = i * step + kernel_us * np.arange(n)
        tl.add_activity("GPU 0", Kind.COMPUTE, starts, starts + kernel_us)
    tl.kernel_counts["GPU 0"] = n * steps
    tl.add_steps(
        range(steps), [i * step for i in range(steps)], [(i + 1) * step for i in range(steps)]
    )
    return tl.freeze()


def detect(rule: Any, ev: RankEvidence) -> Finding | None:
    """What ``diagnose`` makes of one rule on one rank: a lint judged on the configuration
    (then refined by the trace where it says how), any other rule detected on the trace."""
    if isinstance(rule, LintRule):
        found = rule.check(ev.config)
        return rule.refine(found, ev) if isinstance(rule, RefinedLint) else found
    return rule.detect(ev)
