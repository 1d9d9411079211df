"""``exposed-collectives``: gradient all-reduce (or any collective) not hidden under compute.

Why it costs time: each replica waits in the collective while its device computes nothing;
the cost is per step, so more work per step amortises it.

Example: "Gradient synchronisation stalls the device 20.0% of step time". Fix (worded per
framework, analyze/wording.py): a bigger per-replica batch or gradient accumulation; expert
all-to-all (DeepEP, MoRI) is overlapped with compute instead, and inference gets no gradient
advice.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, batch_scaled, removed
from gpudiag.analyze.needs import Needs
from gpudiag.analyze.wording import sync_remedy

ID = "exposed-collectives"
NEEDS = {"more-work-per-allreduce": Needs()}
BATCH_FACTOR = 4  # the per-replica batch growth the advice proposes
ALL_TO_ALL = ("DeepEP", "MoRI")  # expert-parallel all-to-all libraries


def detect(ev: RankEvidence) -> Finding | None:
    b = ev.breakdown
    if b is None:
        return None
    exposed = b.shares["sync"]
    total = float(np.mean([d.collective_total for d in b.devices])) if b.devices else 0.0
    if exposed < T.SYNC_NOTE:
        return None
    overlapped = 1.0 - exposed / total if total > 0 else 0.0
    libs = ev.timeline.meta.extra.get("communication_us") or {}
    evidence: dict[str, object] = {
        "exposed_sync_pct": pct(exposed),
        "collective_pct": pct(total),
        "overlapped_pct": pct(max(0.0, overlapped)),
    }
    if libs:
        evidence["libraries"] = list(libs)[:4]
    what = "Gradient synchronisation" if ev.config.training is not False else "Communication"
    if libs and next(iter(libs)) in ALL_TO_ALL:
        what = "Expert all-to-all"
    return Finding(
        id=ID,
        severity="high" if exposed >= T.SYNC_HIGH else "moderate",
        title=f"{what} stalls the device {pct(exposed)}% of step time",
        evidence=evidence,
    )


def more_work_per_allreduce(
    s: Situation, finding: str, extra: str = "", all_to_all: bool = False
) -> list[Suggestion]:
    sync = s.shares["sync"]
    k = BATCH_FACTOR
    per = s.config.per_replica_batch
    now = f" (now {per:g} per replica)" if per else ""
    title, detail = sync_remedy(s.config, k, now, all_to_all)
    if all_to_all:
        # overlap hides communication rather than amortising it: half at the point
        g = Gain.of(
            removed(sync / 2),
            1.0,
            removed(sync),
            f"exposed all-to-all {sync:.0%} of step time, half hidden under compute "
            "at the point (not measured on this run)",
        )
    else:
        # the sync cost is fixed per step; a bigger batch may also lengthen it a little (low end)
        g = Gain.of(
            batch_scaled(sync, k),
            batch_scaled(sync * 0.5, k),
            batch_scaled(sync, k),
            f"exposed sync {sync:.0%} amortised over a {k}× batch",
        )
    return [
        g.suggestion(
            title,
            detail + extra + ".",
            finding,
            "more-work-per-allreduce",
        )
    ]


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    libs = f.evidence.get("libraries") or []
    return more_work_per_allreduce(s, ID, all_to_all=bool(libs) and libs[0] in ALL_TO_ALL)
