"""Pre-fit findings: what the run's configuration alone shows, judged before the first step.

TensorFlow can fail on step one (a global batch that does not divide by the replicas), so
the callback must be able to say why before training starts. The rules that need only the
``RunConfig`` are judged here once per configuration, each with the fix its remedy names;
the callback prints them, records them in the trace, and hands them to ``diagnose`` so the
report carries the very findings that were printed. Pure: no I/O.

    pre = judge(config)
    pre.findings          # [Finding], source "lint"
    pre.recorded()        # [RecordedFinding] with their fixes, for the trace
    diagnose([summary], prefit=pre.findings)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpudiag.analyze import rules
from gpudiag.analyze.breakdown import empty_shares
from gpudiag.analyze.diagnosis import Finding
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import RecordedFinding


@dataclass
class PreFit:
    """The findings of one configuration and the fix each one's remedy names."""

    config: RunConfig
    findings: list[Finding] = field(default_factory=list)
    fixes: dict[str, str] = field(default_factory=dict)

    def recorded(self) -> list[RecordedFinding]:
        """The findings as the trace records them (with their fixes)."""
        return [
            RecordedFinding(
                f.id,
                f.severity,
                f.title,
                f.evidence,
                self.fixes.get(f.id) or str(f.evidence.get("fix", "")),
            )
            for f in self.findings
        ]


def judge(config: RunConfig) -> PreFit:
    """Judge the configuration-only rules. The fixes come from the rules' own remedies,
    chosen with no measurement yet (every share zero, verdict inconclusive)."""
    found = rules.lint(config)
    situation = rules.Situation(empty_shares(), "inconclusive", config, rules.HostFacts())
    fixes = {s.finding: s.detail for s in rules.advise(found, situation)}
    return PreFit(config, found, fixes)
