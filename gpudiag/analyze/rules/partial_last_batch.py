"""``partial-last-batch`` (lint): the last batch of an epoch is short and kept, so some
replicas get few or no samples.

Why it matters: with BatchNormalization the statistics of those replicas are computed over a
handful of samples (or none), which corrupts them; high severity then, moderate without it.

Example: "Last batch has 40 samples (10.0 per replica) and the model has BatchNormalization".
Fix: ``ds.batch(global_batch, drop_remainder=True)``; not raised when ``drop_remainder`` is on
or unknown.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.needs import Needs
from gpudiag.trace.runconfig import RunConfig

ID = "partial-last-batch"
NEEDS = {"drop-remainder": Needs()}
KIND = "lint"  # reads only the RunConfig: judged once, before the first step


def check(cfg: RunConfig) -> Finding | None:
    batch, replicas, samples = cfg.global_batch, cfg.replicas or 1, cfg.samples
    if replicas <= 1 or not batch or not samples or samples % batch == 0:
        return None
    if cfg.drop_remainder is not False:
        return None
    last = samples % batch
    bn = bool(cfg.batchnorm)
    return Finding(
        ID,
        "high" if bn else "moderate",
        f"Last batch has {last} samples for {replicas} replicas ({_split(last, replicas)})"
        + (" and the model has BatchNormalization" if bn else ""),
        {
            "samples": samples,
            "global_batch": batch,
            "last_batch": last,
            "replicas": replicas,
            "batchnorm": bn,
        },
        "lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return [
        Suggestion(
            "Drop the ragged last batch",
            "ds.batch(global_batch, drop_remainder=True): a short last batch gives some "
            "replicas few or no samples, corrupting BatchNormalization statistics.",
            1.0,
            "correctness of BatchNormalization statistics",
            ID,
            remedy="drop-remainder",
        )
    ]


def _split(samples: int, replicas: int) -> str:
    """How a batch falls on the replicas, in whole samples: "3 each", "3–4 each"."""
    low, extra = divmod(samples, replicas)
    if low == 0:
        return f"{samples} of them get 1 sample, the others none"
    return f"{low} each" if not extra else f"{low}–{low + 1} each"
