"""The lints: findings the run's configuration alone shows, judged before the first step.

TensorFlow can fail on step one (a global batch that does not divide by the replicas), so
the callback must be able to say why before training starts. The rules that need only the
``RunConfig`` are judged here once per configuration, each with the fix its remedy names;
the callback prints them, records them in the trace, and hands them to ``diagnose`` so the
report carries the very findings that were printed. Pure: no I/O.

    >>> from gpudiag.trace.model.runconfig import RunConfig
    >>> lints = judge(RunConfig(global_batch=98, replicas=4))
    >>> [(f.id, f.source) for f in lints.findings]
    [('batch-not-multiple-of-replicas', 'lint')]
    >>> lints.recorded()[0].fix[:40]      # recorded with its fix, for the trace
    'Use a global batch of 96 or 100 (per-rep'

``diagnose([summary], lints=lints.findings)`` then reports the very findings printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpudiag.analyze import rules
from gpudiag.analyze.breakdown import empty_shares
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.evidence import HostFacts, Situation
from gpudiag.analyze.ranking import advise
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import RecordedLint


@dataclass
class Lints:
    """The findings of one configuration and the fix each one's remedy names."""

    config: RunConfig
    findings: list[Finding] = field(default_factory=list)
    fixes: dict[str, str] = field(default_factory=dict)

    def recorded(self) -> list[RecordedLint]:
        """The findings as the trace records them (with their fixes)."""
        return [
            RecordedLint(
                f.id,
                f.severity,
                f.title,
                f.evidence,
                self.fixes.get(f.id) or str(f.evidence.get("fix", "")),
            )
            for f in self.findings
        ]


def judge(config: RunConfig) -> Lints:
    """Judge the configuration-only rules. The fixes come from the rules' own remedies,
    chosen with no measurement yet (every share zero, verdict inconclusive)."""
    found = rules.lint(config)
    situation = Situation(empty_shares(), "inconclusive", config, HostFacts())
    fixes = {s.finding: s.detail for s in advise(found, situation)}
    return Lints(config, found, fixes)
