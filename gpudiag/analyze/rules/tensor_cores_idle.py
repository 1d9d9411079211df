"""``tensor-cores-idle``: a mixed-precision run whose Tensor Cores stay idle (GPM).

What it reads: NVML's GPU Performance Monitoring over the steady steps (analyze/gpm.py):
tensor-pipe activity while the SMs are busy. Under a ``mixed_float16`` / ``mixed_bfloat16``
policy (or a float16/bfloat16 one) the matmuls and convolutions should run on the Tensor
Cores; tensor pipes under ``TENSOR_IDLE`` while the SMs are at least ``SM_BUSY`` active mean
they do not.
Why it matters: the policy's speed-up (up to 2x the float32 rate on the matmuls) never
arrives: dimensions that are not multiples of 8 (cuBLAS and cuDNN fall back to other
kernels), layers kept in float32, or ops without a Tensor Core kernel (depthwise and grouped
convolutions, custom ops).

Example: "mixed_bfloat16, but the Tensor Cores are idle: tensor pipes 0.1% active while the
SMs are 86% active (GPM)" (the H100 recordings: 0.1% in a float32 "highest"-precision conv
step, 10-16% in the same model under mixed_bfloat16). Fix: shapes in multiples of 8, layers
in the policy's dtype.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.gain import at_most
from gpudiag.analyze.gpm import gpm_facts
from gpudiag.analyze.needs import Needs

ID = "tensor-cores-idle"
NEEDS = {"tensor-core-shapes": Needs()}
TENSOR_IDLE = 1.0  # % (p90): the H100's float32 "highest" conv run peaked at 0.2%, bf16 at 16%
SM_BUSY = 20.0  # % (median): the SMs compute enough for matmuls to matter; idle SMs say nothing
REDUCED = ("mixed_float16", "mixed_bfloat16", "float16", "bfloat16")


def detect(ev: RankEvidence) -> Finding | None:
    precision = ev.config.precision or ""
    if precision not in REDUCED or ev.cpu_device:
        return None
    facts = gpm_facts(ev.timeline)
    if facts is None or "tensor_active" not in facts.p90:
        return None
    tensor, sm = facts.p90["tensor_active"], facts.median.get("sm_active", 0.0)
    if tensor >= TENSOR_IDLE or sm < SM_BUSY:
        return None
    return Finding(
        ID,
        "moderate",
        f"{precision}, but the Tensor Cores are idle: tensor pipes {tensor:.1f}% active while "
        f"the SMs are {sm:.0f}% active (GPM)",
        {"precision": precision, **facts.evidence()},
        "counters",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    c = s.shares["compute"]
    g = at_most(
        c / 2,
        f"not estimated: matmuls on the Tensor Cores run at up to 2× the rate; compute is "
        f"{c:.0%} of the step",
    )
    return [
        g.suggestion(
            "Get the matmuls onto the Tensor Cores",
            "Make the batch, units, filters, channels and embedding/vocabulary sizes multiples "
            "of 8; keep Dense and Conv layers in the policy's dtype (no dtype='float32' on "
            "them); depthwise and grouped convolutions and custom ops have no Tensor Core "
            "kernel. Check with the profiler's kernel names (h884/h1688/s16816/hmma/wgmma "
            "kernels run on Tensor Cores).",
            ID,
            "tensor-core-shapes",
        )
    ]
