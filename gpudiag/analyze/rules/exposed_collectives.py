"""``exposed-collectives``: gradient all-reduce (or any collective) not hidden under compute.

Why it costs time: each replica waits in the collective while its device computes nothing;
the cost is per step, so more work per step amortises it.

Where the trace records the collectives' sizes (analyze/bandwidth.py) the finding gives
their bus bandwidth against the link's peak and says which of three the run is, because the
remedy differs: near the peak, communicate less per sample (a bigger per-replica batch or
gradient accumulation); far below it with small messages, fuse them (latency-bound); far
below with large messages, check the link and its set-up (analyze/collective_advice.py).
On several ranks the arrival wait is measured apart from the transfer.

Example: "Gradient synchronisation stalls the device 20.0% of step time; large messages
(26 MB) at 2% of the link's peak: the link or its set-up". Fix (worded per framework,
analyze/wording.py): a bigger per-replica batch or gradient accumulation; expert all-to-all
(DeepEP, MoRI) is overlapped with compute instead, and inference gets no gradient advice.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import bandwidth as B
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.collective_advice import check_link, fuse_collectives
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, batch_scaled, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.wording import sync_remedy

ID = "exposed-collectives"
NEEDS = {
    "more-work-per-allreduce": Needs(),
    "fuse-collectives": Needs(requires={"training": OneOf(True)}),
    "check-link": Needs(),
}
BATCH_FACTOR = 4  # the per-replica batch growth the advice proposes
ALL_TO_ALL = ("DeepEP", "MoRI")  # expert-parallel all-to-all libraries
NO_SIZES = (
    "not measured: the trace records no collective sizes (PyTorch's profiler records them "
    "from 2.1 on, on record_param_comms and the NCCL kernels; TensorFlow and JAX profiles "
    "do not)"
)


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
    comm = ev.comm
    if comm is not None:
        evidence.update(comm.evidence())
    else:
        evidence["bandwidth"] = NO_SIZES
    return Finding(
        id=ID,
        severity="high" if exposed >= T.SYNC_HIGH else "moderate",
        title=f"{what} stalls the device {pct(exposed)}% of step time" + _which(comm),
        evidence=evidence,
    )


def _which(comm: B.CommFacts | None) -> str:
    """Which of the three the collectives are, in the title."""
    if comm is None:
        return ""
    size = B.size_words(comm.message_bytes)
    share = comm.peak_share
    if comm.kind == B.NEAR:
        return f"; the link runs near its peak ({share:.0%}): communicate less"
    if comm.kind == B.LATENCY:
        at = f" at {share:.0%} of the link's peak" if share is not None else ""
        return f"; small messages ({size}){at}: latency-bound"
    if comm.kind == B.LINK:
        at = f"{share:.0%}" if share is not None else "a fraction"
        return f"; large messages ({size}) at {at} of the link's peak: the link or its set-up"
    return f"; bus bandwidth {comm.busbw_gbps:.1f} GB/s ({comm.link_note})"


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
            batch_factor=None if all_to_all else k,
        )
    ]


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    libs = f.evidence.get("libraries") or []
    all_to_all = bool(libs) and libs[0] in ALL_TO_ALL
    out = more_work_per_allreduce(s, ID, all_to_all=all_to_all)
    kind = f.evidence.get("bandwidth_class")
    if kind == B.LATENCY and not all_to_all:
        out = fuse_collectives(f, s) + out
    elif kind == B.LINK:
        out = check_link(f, s) + out
    return out
