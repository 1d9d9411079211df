"""``slow-mixed-precision``: a mixed-precision policy on a device that has no fast half
precision, where it slows training instead of speeding it.

Why it costs time: ``mixed_float16`` pays on matrix units that run float16 faster than
float32 (NVIDIA Tensor Cores from compute capability 7.0; bfloat16 from 8.0). On a CPU the
float16 matmuls run in emulation, and on older GPUs the casts and loss scaling are added to
an unchanged matmul rate (TensorFlow warns: "may run slowly ... compute capability of at
least 7.0"; tensorflow/tensorflow#40397, #39556, keras-team/keras#18448). Measured here on
a 2-core CPU: 2.0-5.7x slower steps (docs/remedies.md).

Example: "mixed_float16 on a CPU: half precision runs in emulation there (compute 93% of the
step)". Fix: ``keras.mixed_precision.set_global_policy("float32")`` before building the
model; gain bounded by the compute share (all of it at most), its point by the slowdown
measured on a CPU (``CPU_SLOWDOWN``); on a GPU below the capability not measured (point 1.0).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs, OneOf

ID = "slow-mixed-precision"
FLOAT16 = ("mixed_float16", "float16")
BFLOAT16 = ("mixed_bfloat16", "bfloat16")
NEEDS = {"float32-policy": Needs(requires={"precision": OneOf(*FLOAT16, *BFLOAT16)})}
FP16_FROM = 7.0  # Tensor Cores for float16 (CUDA C++ Programming Guide, compute capabilities)
BF16_FROM = 8.0  # ... and for bfloat16
# The compute that float32 gives back on a CPU: the smallest slowdown measured here with
# mixed_float16 on a 2-core CPU (an MLP 2.0x, the runs 4.8-5.7x: docs/remedies.md);
# the low end keeps half of it
CPU_SLOWDOWN = 2.0
HIGH_COMPUTE = 0.5  # most of the step in the slowed compute: high severity


def detect(ev: RankEvidence) -> Finding | None:
    cfg, b = ev.config, ev.breakdown
    why = _why(cfg.precision, ev.cpu_device, cfg.compute_capability)
    if why is None or b is None:
        return None
    c = b.shares["compute"]
    evidence: dict[str, object] = {
        "precision": cfg.precision,
        "device": "CPU" if ev.cpu_device else (cfg.gpu_model or "GPU"),
        "compute_share_pct": pct(c),
    }
    if cfg.compute_capability:
        evidence["compute_capability"] = cfg.compute_capability
    return Finding(
        ID,
        "high" if c >= HIGH_COMPUTE else "moderate",
        f"{cfg.precision} on {why} (compute {pct(c):.0f}% of the step)",
        evidence,
    )


def _why(precision: str | None, cpu: bool, cc: float | None) -> str | None:
    """Where half precision is slow, in words; None where it is not (or not known)."""
    if precision in FLOAT16:
        if cpu:
            return "a CPU: float16 matmuls run in emulation there"
        if cc and cc < FP16_FROM:
            return f"a GPU of compute capability {cc:.1f}: no float16 Tensor Cores below 7.0"
    if precision in BFLOAT16 and not cpu and cc and cc < BF16_FROM:
        return f"a GPU of compute capability {cc:.1f}: no bfloat16 Tensor Cores below 8.0"
    return None


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    c = s.shares["compute"]
    bound = removed(c)
    if s.cpu_device:
        point = 1.0 / ((1.0 - c) + c / CPU_SLOWDOWN)
        low = 1.0 / ((1.0 - c) + c / (1.0 + (CPU_SLOWDOWN - 1.0) / 2))
        basis = (
            f"compute ({c:.0%} of the step) {CPU_SLOWDOWN:.1f}x faster in float32, the least "
            f"slowdown measured on a CPU; all of it at most"
        )
    else:
        point, low = 1.0, 1.0
        basis = f"not measured: bounded by the compute ({c:.0%} of the step) it slows"
    g = Gain.of(point, low, bound, basis)
    return [
        g.suggestion(
            "Train in float32 on this device",
            "keras.mixed_precision.set_global_policy('float32') before building the model "
            f"(now {s.config.precision}): this device computes half precision no faster than "
            "float32, so the casts and loss scaling only add time. Mixed precision pays on "
            "GPUs of compute capability 7.0 or more (bfloat16: 8.0) and on TPUs.",
            ID,
            "float32-policy",
        )
    ]
