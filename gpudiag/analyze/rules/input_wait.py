"""``input-wait``: the device waits for its next batch.

Why it costs time: every millisecond the device waits for input is a millisecond of the step
it does nothing; the finding names the host ops the wait was spent in.

Example: "Device waits for input 30.0% of step time". Fix: chosen by the kind of input work
in analyze/input_plan.py (prefetch, parallel map, worker processes, less work per sample),
each withheld when the run config shows it in place; a PyTorch DataLoader is left to the
DataLoader rules.
"""

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
