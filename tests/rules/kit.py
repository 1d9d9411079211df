"""What one rule sees, built small: a rank's evidence from a tests/synth.py timeline (or the
empty timeline a lint sees) and the situation its remedies are chosen against."""

from __future__ import annotations

from typing import Any

from gpudiag.analyze.breakdown import CATEGORIES, step_breakdown
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import HostFacts, RankEvidence, Situation
from gpudiag.analyze.gaps import idle_gaps
from gpudiag.trace.runconfig import RunConfig
from gpudiag.trace.timeline import Timeline
from tests.synth import periodic


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
    """What a lint sees before the first step: the configuration only (``rules.lint``)."""
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
