"""``slow-source`` (lint): records read from files one after another, uncached.

Why it costs time: each read waits on the storage in turn; interleaving several files hides
the latency and a cache skips it after the first epoch.

Example: "TFRecordDataset read sequentially, not cached". Fix: ``ds.interleave(...,
num_parallel_calls=AUTOTUNE)`` and ``ds.cache()``; not raised when either is on. The gain is a
range (it depends on the storage), advised only above 2% input wait.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import at_most, removed
from gpudiag.analyze.needs import Needs
from gpudiag.trace.model.runconfig import RunConfig

ID = "slow-source"
NEEDS = {"parallel-reads": Needs()}
KIND = "lint"  # reads only the RunConfig: judged once, before the first step


def check(cfg: RunConfig) -> Finding | None:
    if not cfg.file_source or cfg.cache or cfg.interleave:
        return None
    return Finding(
        ID,
        "info",
        f"{cfg.file_source} read sequentially, not cached",
        {"source": cfg.file_source},
        "lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    inp = s.shares["input"]
    if inp <= 0.02:
        return []
    g = at_most(
        inp,
        "not estimated: depends on the storage; removing "
        f"the whole input wait ({inp:.0%}) would be worth {removed(inp):.2f}×",
    )
    return [
        g.suggestion(
            "Read the source in parallel",
            "ds.interleave(..., num_parallel_calls=tf.data.AUTOTUNE) over several files, and "
            "ds.cache() when the data fits in memory or on local disk.",
            ID,
            "parallel-reads",
        )
    ]
