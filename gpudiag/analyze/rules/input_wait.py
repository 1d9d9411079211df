"""``input-wait``: the device waits for its next batch. Advice by the kind of input work."""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.input_plan import input_remedies

ID = "input-wait"


def detect(ev: RankEvidence) -> Finding | None:
    share = ev.input_share
    if share is None or share < T.INPUT_MODERATE or ev.breakdown is None:
        return None
    top = sorted(ev.timeline.input_wait_names.items(), key=lambda kv: -kv[1])[:3]
    return Finding(
        id=ID,
        severity="high" if share >= T.INPUT_HIGH else "moderate",
        title=f"Device waits for input {pct(share)}% of step time",
        evidence={
            "input_share_pct": pct(share),
            "waiting_in": {n: round(us / 1000.0, 2) for n, us in top},
            "steps": ev.breakdown.steps_analyzed,
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return input_remedies(s)
