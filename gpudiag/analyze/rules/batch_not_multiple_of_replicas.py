"""``batch-not-multiple-of-replicas`` (lint): the global batch does not split evenly over the
replicas.

Why it matters: it is a correctness fault before it is a cost. TensorFlow may fail on the
first step with a shape error, or pad the uneven shards; JAX (``keras.distribution``) cannot
shard the batch over the mesh's batch axis and raises ``IndivisibleError`` on the first
batch. The callback prints this before ``fit`` gets there (under keras.distribution, from
the first batch's layout: ``record/keras_distribution.py``).

Example: "Global batch 98 does not divide by 4 replicas". Fix: a global batch of 96 or 100
(per-replica batch × replicas). A correctness fix: always shown, first.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.needs import Needs
from gpudiag.trace.model.runconfig import RunConfig

ID = "batch-not-multiple-of-replicas"
NEEDS = {"batch-multiple-of-replicas": Needs()}
KIND = "lint"  # reads only the RunConfig: judged once, before the first step
SHOWN_FIRST = "correctness"  # the run fails or pads uneven shards: its fix leads, whatever the gain


def check(cfg: RunConfig) -> Finding | None:
    batch, replicas = cfg.global_batch, cfg.replicas or 1
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
            "fix": f"Use a global batch of {lo} or {hi} (per-replica batch × {replicas}"
            f"{_where(cfg)}); {_consequence(cfg, batch, replicas)}",
        },
        "lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return [
        Suggestion(
            "Make the global batch a multiple of the replica count",
            str(f.evidence.get("fix") or "Use global_batch = per_replica_batch × replicas."),
            1.0,
            "correctness: the framework fails or pads uneven shards",
            ID,
            remedy="batch-multiple-of-replicas",
        )
    ]


def _where(cfg: RunConfig) -> str:
    """Where the batch is set, for the input the run was given."""
    if cfg.input_kind == "array":
        return ": fit(batch_size=...)"
    if cfg.input_kind == "tf.data":
        return ": ds.batch(...)"
    return ""


def _consequence(cfg: RunConfig, batch: int, replicas: int) -> str:
    """What the framework does with the uneven batch."""
    if cfg.framework == "jax":
        return (
            f"JAX cannot shard {batch} rows over {replicas} devices: the first batch fails "
            "with IndivisibleError"
        )
    return "TensorFlow may fail on the first step with a shape error otherwise"
