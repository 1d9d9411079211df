"""``communication-hidden``: communication takes a large share of the step but runs under
compute, so it costs (almost) nothing now.

Why it matters: it is not a cost today, but any change that shortens compute will expose it.
Reported so the communication is not invisible (an expert-parallel run can spend most of its
window in all-to-all), and so that nobody "fixes" it.

Example: "DeepEP communication runs 88.0% of step time, hidden under compute (0.3% exposed)".
Fix: none; advises nothing.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct

ID = "communication-hidden"
# communication on a fifth of the step is worth knowing even when hidden: shorten compute
# by that much and it starts to show
TOTAL_NOTE = 0.20


def detect(ev: RankEvidence) -> Finding | None:
    b = ev.breakdown
    if b is None or not b.devices:
        return None
    total = float(np.mean([d.collective_total for d in b.devices]))
    exposed = b.shares["sync"]
    if total < TOTAL_NOTE or exposed >= T.SYNC_NOTE:
        return None  # small, or exposed: then exposed-collectives reports it
    libs = ev.timeline.meta.extra.get("communication_us") or {}
    lib = next(iter(libs), "collective")
    return Finding(
        ID,
        "info",
        f"{lib} communication runs {pct(total)}% of step time, hidden under compute "
        f"({pct(exposed)}% exposed)",
        {
            "collective_pct": pct(total),
            "exposed_sync_pct": pct(exposed),
            "overlapped_pct": pct(1.0 - exposed / total),
            "libraries_ms": {k: round(float(v) / 1000.0, 2) for k, v in list(libs.items())[:4]},
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return []
