"""Which reduced precision the run's GPU computes on Tensor Cores, by compute capability.

NVIDIA's Tensor Cores (CUDA C++ Programming Guide, "Compute Capabilities"; the Volta, Turing,
Ampere, Ada and Hopper whitepapers): float16 from 7.0 (Volta, Turing 7.5); bfloat16 and TF32
from 8.0 (Ampere); FP8 from 8.9 (Ada, Hopper 9.0). Below 7.0 there are none, so mixed
precision buys no matmul speed-up worth advising. A bfloat16 remedy on a V100 or T4 would run
bfloat16 in emulation, slower than float32: the remedy follows the GPU the profile names,
and says why in its basis. With no capability in the profile (trace-viewer JSON), the text
names both choices by capability.

    plan = precision_plan(config, inference=False)   # None: nothing to advise on this GPU
    plan.title, plan.detail, plan.why
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudiag.analyze.wording import dialect, inference, remedy
from gpudiag.analyze.workload import vendor_of
from gpudiag.trace.model.runconfig import RunConfig

FP16_FROM = (7, 0)
BF16_FROM = (8, 0)  # TF32 too
FP8_FROM = (8, 9)


@dataclass(frozen=True)
class PrecisionPlan:
    title: str
    detail: str
    why: str  # for the remedy's basis: the GPU and what its Tensor Cores run


def _gpu(cfg: RunConfig) -> str:
    cc = f"compute capability {cfg.compute_capability:.1f}"
    return f"{cfg.gpu_model} ({cc})" if cfg.gpu_model else f"GPU of {cc}"


_FP16 = {
    "keras": (
        "Use mixed precision (float16)",
        "keras.mixed_precision.set_global_policy('mixed_float16'): this GPU runs float16 "
        "matmuls and convolutions on Tensor Cores at up to 2x the float32 rate (Keras "
        "scales the loss for you in fit); it has no bfloat16 Tensor Cores.",
    ),
    "pytorch": (
        "Use mixed precision (torch.autocast, float16)",
        "Run forward and loss under torch.autocast('cuda', dtype=torch.float16) with "
        "torch.amp.GradScaler; this GPU has float16 Tensor Cores, no bfloat16 ones.",
    ),
    "jax": (
        "Compute in float16",
        "Keep float32 master weights, run the model in jnp.float16 with loss scaling "
        "(jmp.DynamicLossScale); this GPU has float16 Tensor Cores, no bfloat16 ones.",
    ),
}
_FP16_INFERENCE = (
    "Run inference in float16",
    "Cast the weights to float16 for serving (Keras: dtype policy 'float16'; PyTorch: "
    "model.half()): half the memory traffic, Tensor Core matmuls; this GPU has no bfloat16 "
    "Tensor Cores.",
)


# AMD Instinct GPUs (CDNA 2 and 3: MI200, MI300) run bfloat16 on their matrix cores (MI300
# also FP8); ROCm's PyTorch keeps the "cuda" device name. AMD, "AMD CDNA 3 architecture".
_AMD = {
    "keras": (
        "Use mixed precision (bfloat16)",
        "keras.mixed_precision.set_global_policy('mixed_bfloat16'): the GPU's matrix cores "
        "run bfloat16 matmuls and convolutions at several times the float32 rate; no loss "
        "scaling needed.",
    ),
    "pytorch": (
        "Use mixed precision (torch.autocast, bfloat16)",
        "Run forward and loss under torch.autocast('cuda', dtype=torch.bfloat16) (ROCm keeps "
        "the 'cuda' device name): bfloat16 matmuls run on the GPU's matrix cores.",
    ),
    "jax": (
        "Compute in bfloat16",
        "Keep float32 master weights and run the model in jnp.bfloat16: the GPU's matrix "
        "cores run bfloat16 matmuls.",
    ),
}


def precision_plan(cfg: RunConfig, inferring: bool | None = None) -> PrecisionPlan | None:
    """The precision remedy for the run's GPU; None when its GPU has no Tensor Cores."""
    inferring = inference(cfg) if inferring is None else inferring
    if vendor_of(cfg) == "amd":
        title, detail = _AMD.get(dialect(cfg), _AMD["keras"])
        if inferring:
            title, detail = (
                "Run inference in bfloat16",
                (
                    "Cast the weights to bfloat16 for serving: half the memory traffic, matmuls "
                    "on the GPU's matrix cores (MI300: FP8 too)."
                ),
            )
        return PrecisionPlan(title, detail, f"{cfg.gpu_model or 'AMD GPU'}: bfloat16 matrix cores")
    cc = cfg.capability
    base = remedy("mixed-precision", cfg) or ("Use mixed precision", "")
    if cc is None:
        return PrecisionPlan(
            base[0],
            base[1] + " Choose by GPU: float16 on compute capability 7.x (V100, T4), bfloat16 "
            "from 8.0 (A100, H100).",
            "GPU compute capability not in the profile",
        )
    gpu = _gpu(cfg)
    if cc < FP16_FROM:
        return None
    if cc < BF16_FROM:
        title, detail = _FP16_INFERENCE if inferring else _FP16.get(dialect(cfg), _FP16["keras"])
        return PrecisionPlan(title, detail, f"{gpu}: float16 Tensor Cores")
    if dialect(cfg) == "keras" and not inferring:
        title, detail = (
            "Use mixed precision (bfloat16)",
            "keras.mixed_precision.set_global_policy('mixed_bfloat16'): bfloat16 Tensor "
            "Cores at up to 2x the float32 rate, no loss scaling needed; float32 matmuls "
            "already use TF32 unless disabled (tf.config.experimental."
            "enable_tensor_float_32_execution).",
        )
    else:
        title, detail = base
    why = f"{gpu}: bfloat16 and TF32 Tensor Cores"
    if cc >= FP8_FROM:
        detail += " FP8 Tensor Cores are there too for large matmuls (Keras: layer.quantize"
        detail += "('float8'); NVIDIA Transformer Engine)."
        why += ", FP8"
    return PrecisionPlan(title, detail, why)
