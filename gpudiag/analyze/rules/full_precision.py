"""``full-precision``: a compute-bound GPU run in float32.

Why it costs time: tensor cores run float16/bfloat16 matmuls and convolutions at up to 2× the
float32 rate; a float32 run leaves that on the table.

Example: "Compute-bound in float32". Fix (worded per framework, analyze/wording.py): a
mixed-precision policy, ``torch.autocast``, bfloat16 compute; bfloat16 weights for inference,
in the precision the run's GPU has Tensor Cores for (analyze/tensor_cores.py): float16 on
compute capability 7.x, bfloat16 from 8.0, none below 7.0 (then no remedy). Not raised when
the run's precision is already mixed, on TPUs (bfloat16 passes by default) or on CPU-only
runs.
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Below, Breaks, Needs, OneOf
from gpudiag.analyze.tensor_cores import precision_plan

ID = "full-precision"
# Reduced precision pays on matrix units: NVIDIA's Tensor Cores from compute capability 7.0
# (CUDA C++ Programming Guide, "Compute Capabilities"), AMD's matrix cores (CDNA), TPUs.
NEEDS = {
    "mixed-precision": Needs(
        requires={"precision": OneOf("float32")},
        breaks=(
            Breaks(
                {"vendor": OneOf("nvidia"), "compute_capability": Below(7.0)},
                "no Tensor Cores below compute capability 7.0: half precision buys no matmul rate",
                "https://docs.nvidia.com/cuda/cuda-c-programming-guide/#compute-capabilities",
            ),
            Breaks({"vendor": OneOf("cpu")}, "a CPU has no matrix units for it"),
        ),
        check={
            "precision": "that the model computes in float32 (no mixed-precision policy, "
            "autocast or bfloat16 weights already)"
        },
    )
}


def detect(ev: RankEvidence) -> Finding | None:
    cfg, b = ev.config, ev.breakdown
    if b is None or ev.cpu_device or not ev.timeline.devices:
        return None
    if (cfg.device_type or ev.timeline.meta.device_type) == "TPU":
        return None  # TPUs run float32 matmuls in bfloat16 passes by default
    if cfg.precision not in (None, "float32") or b.shares["compute"] < T.COMPUTE_DOMINANT:
        return None
    evidence: dict[str, object] = {
        "compute_share_pct": pct(b.shares["compute"]),
        "precision": cfg.precision or "unknown",
    }
    if cfg.compute_capability:
        evidence["compute_capability"] = cfg.compute_capability
        if cfg.gpu_model:
            evidence["gpu"] = cfg.gpu_model
    return Finding(ID, "info", "Compute-bound in float32", evidence)


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    plan = precision_plan(s.config)
    if plan is None:
        return []  # no Tensor Cores on this GPU: reduced precision buys no matmul rate
    c = s.shares["compute"]
    g = Gain.of(
        removed(c / 2),
        1.0,
        removed(c / 2),
        f"half of compute ({c:.0%}) saved on the matrix units (not measured here); {plan.why}",
    )
    return [g.suggestion(plan.title, plan.detail, ID, "mixed-precision")]
