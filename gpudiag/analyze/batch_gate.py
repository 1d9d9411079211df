"""No default advice: a bigger batch amortises a per-step fixed cost (Keras's dispatch, the
slicing of arrays), so it is offered only where that cost is what holds the step, not
where a cause of its own holds it. Where a run shows a named cause (half precision slowed
on its device, a dense embedding update, a capped thread pool, per-batch callbacks, fit in a
loop, an unused GPU, a recurrent layer off cuDNN, forced determinism), the bigger batch is
withheld and that cause's remedy stands: a batch that grows the slowed work with it hides
the cause instead of removing it (measured on the planted causes: benchmarks/fix_gains.py,
docs/causes.md).

    why = held_by(situation)   # "slow-mixed-precision holds the step: its remedy first" | None
"""

from __future__ import annotations

from gpudiag.analyze.evidence import Situation

# the findings of a cause that holds the step whatever the batch size
STEP_CAUSES = (
    "gpu-unused",
    "slow-mixed-precision",
    "dense-embedding-updates",
    "threads-capped",
    "batch-callbacks",
    "repeated-fit",
    "rnn-without-cudnn",
    "op-determinism",
)
BATCH_REMEDY = "bigger-batch"


def held_by(s: Situation) -> str | None:
    """Why a bigger batch is withheld here (a named cause holds the step), or None."""
    for fid in STEP_CAUSES:
        f = s.findings.get(fid)
        if f is not None and f.severity != "info":
            return (
                f"{fid} names what holds the step: its remedy first (a bigger batch is "
                "offered where the per-step fixed cost is the cause)"
            )
    return None
