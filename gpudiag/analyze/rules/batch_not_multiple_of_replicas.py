"""``batch-not-multiple-of-replicas``: the global batch does not split evenly (lint). TF may
fail on the first step with a shape error; the callback prints this before that happens."""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation

ID = "batch-not-multiple-of-replicas"


def detect(ev: RankEvidence) -> Finding | None:
    batch, replicas = ev.config.global_batch, ev.config.replicas or 1
    if replicas <= 1 or not batch or batch % replicas == 0:
        return None
    lo = max(replicas, batch // replicas * replicas)
    hi = (batch // replicas + 1) * replicas
    return Finding(
        ID,
        "high",
        f"Global batch {batch} does not divide by {replicas} replicas",
        {
            "global_batch": batch,
            "replicas": replicas,
            "remainder": batch % replicas,
            "fix": f"Use a global batch of {lo} or {hi} (per-replica batch × {replicas}); "
            "TensorFlow may fail on the first step with a shape error otherwise",
        },
        "lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return [
        Suggestion(
            "Make the global batch a multiple of the replica count",
            str(f.evidence.get("fix") or "Use global_batch = per_replica_batch × replicas."),
            1.0,
            "correctness: TensorFlow fails or pads uneven shards",
            ID,
        )
    ]
