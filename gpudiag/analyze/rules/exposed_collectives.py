"""``exposed-collectives``: gradient all-reduce not hidden under compute."""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.rules.base import RankEvidence, Situation, pct
from gpudiag.analyze.rules.gain import Gain, batch_scaled

ID = "exposed-collectives"
SCOPE = "rank"
BATCH_FACTOR = 4  # the per-replica batch growth the advice proposes


def detect(ev: RankEvidence) -> Finding | None:
    b = ev.breakdown
    if b is None:
        return None
    exposed = b.shares["sync"]
    total = float(np.mean([d.collective_total for d in b.devices])) if b.devices else 0.0
    if exposed < T.SYNC_NOTE:
        return None
    overlapped = 1.0 - exposed / total if total > 0 else 0.0
    return Finding(
        id=ID, severity="high" if exposed >= T.SYNC_HIGH else "moderate",
        title=f"Gradient synchronisation stalls the device {pct(exposed)}% of step time",
        evidence={"exposed_sync_pct": pct(exposed), "collective_pct": pct(total),
                  "overlapped_pct": pct(max(0.0, overlapped))})


def more_work_per_allreduce(s: Situation, finding: str, extra: str = "") -> list[Suggestion]:
    sync = s.shares["sync"]
    k = BATCH_FACTOR
    per = s.config.per_replica_batch
    now = f" (now {per:g} per replica)" if per else ""
    # the sync cost is fixed per step; a bigger batch may also lengthen it a little (low end)
    g = Gain.of(batch_scaled(sync, k), batch_scaled(sync * 0.5, k), batch_scaled(sync, k),
                f"exposed sync {sync:.0%} amortised over a {k}× batch")
    return [Suggestion(
        "Give each replica more work per all-reduce",
        f"Grow the per-replica batch {k}×{now} (scale the learning rate with it), or "
        f"accumulate gradients over {k} steps{extra}.",
        g.point, g.basis, finding, [round(g.low, 2), round(g.high, 2)])]


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return more_work_per_allreduce(s, ID)
