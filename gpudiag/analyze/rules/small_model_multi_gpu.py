"""``small-model-multi-gpu`` (lint): several replicas for a model or per-replica batch too
small to hide the all-reduce.

Why it costs time: one replica's compute is too short to cover the gradient all-reduce and
launch overheads, so each device idles between all-reduces.

Example: "4 replicas for 200000 parameters at 8 samples per replica". Fix (shared with
``exposed-collectives``): more work per all-reduce, or fewer devices; advised only when the
trace shows exposed sync above 2%.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.rules.exposed_collectives import more_work_per_allreduce

ID = "small-model-multi-gpu"
SMALL_MODEL_PARAMS = 1_000_000  # below this, one replica's compute cannot hide an all-reduce
SMALL_PER_REPLICA_BATCH = 16  # per-replica batches this small starve each device


def detect(ev: RankEvidence) -> Finding | None:
    cfg = ev.config
    replicas, per = cfg.replicas or 1, cfg.per_replica_batch
    if replicas <= 1 or per is None:
        return None
    small_params = cfg.params is not None and cfg.params < SMALL_MODEL_PARAMS
    if not small_params and per >= SMALL_PER_REPLICA_BATCH:
        return None
    return Finding(
        ID,
        "moderate",
        f"{replicas} replicas for {cfg.params or '?'} parameters at {per:g} samples per replica",
        {"replicas": replicas, "params": cfg.params, "per_replica_batch": round(per, 2)},
        "lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    if s.shares["sync"] <= 0.02:
        return []
    return more_work_per_allreduce(s, ID, "; a model this small may train faster on fewer devices")
