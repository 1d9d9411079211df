"""``startup-heavy`` (info): start-up and compilation take most of a short fit.

Why it matters: tracing, compilation and the first batches are paid once; in a fit this
short they outweigh the training itself, so the fit's wall time says little about how a
longer run would go. The step verdict describes the steps, which a longer fit is made of.

Example: "Start-up and compilation take 62.0% of this 3.1 s fit". Fix: none is offered; a
longer fit amortises it (a cost paid once is not a bottleneck of training).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct

ID = "startup-heavy"
STARTUP_SHARE = 0.5  # start-up holds most of the fit: the fit is too short to judge as a whole


def detect(ev: RankEvidence) -> Finding | None:
    acc = ev.fit
    share = acc.share("startup")
    if not acc.measured or share < STARTUP_SHARE:
        return None
    return Finding(
        ID,
        "info",
        f"Start-up and compilation take {pct(share)}% of this {acc.wall_s:.1f} s fit",
        {
            "startup_pct": pct(share),
            "startup_s": round(acc.parts["startup"], 3),
            "steps_pct": pct(acc.share("steps")),
            "fit_s": round(acc.wall_s, 3),
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return []
