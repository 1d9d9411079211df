"""Remedies in the framework the trace came from. Pure text, no gain models.

A PyTorch trace must hear about ``torch.autocast`` and ``DataLoader(num_workers=...)``, a JAX
trace about ``jax.jit`` and ``optax.MultiSteps``, a Keras run about ``jit_compile`` and
mixed-precision policies; inference gets no gradient advice. Rules keep their detection and
gain model and ask here for the words: ``remedy(kind, config)`` -> (title, detail) or None when
the framework has nothing to offer (JAX always compiles with XLA).

    title, detail = remedy("mixed-precision", situation.config)
"""

from __future__ import annotations

import re
from dataclasses import replace

from gpudiag.analyze.diagnosis import Suggestion
from gpudiag.trace.model.runconfig import RunConfig

# Keras 2 (tf_keras; tf.keras up to TensorFlow 2.15) has no PyDataset: Python input runs in a
# keras.utils.Sequence whose workers are fit() arguments; the image data format is set in
# keras.backend. The Keras 3 names in the remedies, as a Keras 2 fit spells them (in order).
KERAS2_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"keras\.utils\.PyDataset(?: \(Sequence\)|/Sequence)? with workers=(\w+), "
            r"use_multiprocessing=True"
        ),
        r"keras.utils.Sequence given to fit(..., workers=\1, use_multiprocessing=True)",
    ),
    (
        re.compile(r"PyDataset\(workers(=\w+)?, use_multiprocessing=True\)"),
        r"fit(sequence, workers\1, use_multiprocessing=True)",
    ),
    (re.compile(r"keras\.utils\.PyDataset"), "keras.utils.Sequence"),
    (re.compile(r"keras\.config\.set_image_data_format"), "keras.backend.set_image_data_format"),
)


def dialect(cfg: RunConfig) -> str:
    """The framework dialect the remedies speak: "keras" | "pytorch" | "jax". A callback run
    names its Keras backend and records its compile options; a foreign JAX profile has
    neither. TensorFlow training is written with (tf.)keras, so TF traces get Keras remedies."""
    fw = cfg.framework or ""
    if fw == "pytorch":
        return "pytorch"
    if fw == "jax" and cfg.api != "keras" and cfg.jit_compile is None:
        return "jax"
    return "keras"


def inference(cfg: RunConfig) -> bool:
    return cfg.training is False


# (kind, dialect) -> (title, detail); "*" is the fallback for every dialect
_TEXT: dict[tuple[str, str], tuple[str, str]] = {
    ("mixed-precision", "keras"): (
        "Use mixed precision",
        "keras.mixed_precision.set_global_policy('mixed_float16') (mixed_bfloat16 on TPU, "
        "Ampere and newer): Tensor Cores run matmuls and convolutions at up to 2x the float32 "
        "rate.",
    ),
    ("mixed-precision", "pytorch"): (
        "Use mixed precision (torch.autocast)",
        "Run forward and loss under torch.autocast('cuda', dtype=torch.bfloat16) (float16 "
        "needs torch.amp.GradScaler); Tensor Cores run matmuls at up to 2x the TF32 rate.",
    ),
    ("mixed-precision", "jax"): (
        "Compute in bfloat16",
        "Keep float32 master weights and run the model in jnp.bfloat16 (Flax dtype="
        "jnp.bfloat16, or cast params and inputs in the jitted step).",
    ),
    ("mixed-precision-inference", "pytorch"): (
        "Run inference in bfloat16",
        "model.to(torch.bfloat16) (or torch.autocast for inference); weights and "
        "activations in half the memory, matmuls on Tensor Cores.",
    ),
    ("mixed-precision-inference", "*"): (
        "Run inference in bfloat16",
        "Cast the weights to bfloat16 for serving: half the memory traffic, Tensor Core matmuls.",
    ),
    ("fuse-kernels", "keras"): (
        "Fuse small kernels",
        "model.compile(..., jit_compile=True) compiles the step with XLA into fewer, bigger "
        "kernels; steps_per_execution=8 launches several steps at once.",
    ),
    ("fuse-kernels", "pytorch"): (
        "Compile the step (torch.compile, CUDA graphs)",
        "model = torch.compile(model, mode='reduce-overhead'): fuses element-wise kernels and "
        "replays the step as a CUDA graph, so the host no longer launches each kernel.",
    ),
    ("fuse-kernels", "jax"): (
        "Jit bigger units",
        "Put forward, backward and the optimizer update under one jax.jit, and loop over "
        "layers with jax.lax.scan: one dispatch per step instead of one per op.",
    ),
    ("launch-bound-inference", "pytorch"): (
        "Capture decoding in CUDA graphs",
        "torch.compile(model, mode='reduce-overhead') with a static KV cache (or a serving "
        "engine that captures CUDA graphs: vLLM, SGLang, TensorRT-LLM) replays each decode "
        "step without per-kernel launches; batching more requests per step also fills the "
        "device.",
    ),
    ("launch-bound-inference", "jax"): (
        "Jit the decode loop",
        "Run the whole generation loop inside jax.jit (jax.lax.while_loop / scan over "
        "tokens) so each token is not a Python dispatch; batch more requests per step.",
    ),
    ("launch-bound-forward", "pytorch"): (
        "Capture the forward pass in CUDA graphs",
        "torch.compile(model, mode='reduce-overhead') replays the whole forward as one CUDA "
        "graph instead of launching each small kernel from Python (pad inputs to a few fixed "
        "shapes so each is captured once); batching more inputs per call also fills the "
        "device.",
    ),
    ("launch-bound-forward", "jax"): (
        "Jit the whole forward pass",
        "Put the model's forward (and any pre/post-processing on arrays) under one jax.jit, "
        "with inputs padded to a few fixed shapes: one dispatch per call instead of one per "
        "op; batch more inputs per call.",
    ),
    ("launch-bound-inference", "*"): (
        "Compile the inference step",
        "tf.function(jit_compile=True) around the predict step (Keras: jit_compile=True), and "
        "batch more requests per call: each call now launches many tiny kernels.",
    ),
    ("overlap-copies", "pytorch"): (
        "Pin and overlap host-to-device copies",
        "DataLoader(pin_memory=True) and tensor.to('cuda', non_blocking=True); send compact "
        "dtypes (uint8 images) and convert on the device.",
    ),
    ("overlap-copies", "jax"): (
        "Prefetch batches to the device",
        "Put the next batch on the device while the step runs (jax.device_put ahead of time, "
        "flax.jax_utils.prefetch_to_device); send compact dtypes and convert on the device.",
    ),
    ("overlap-copies", "*"): (
        "Shrink and overlap host-to-device copies",
        "Send compact dtypes (uint8 images, cast on device) and prefetch to the device "
        "(tf.data.experimental.prefetch_to_device, or ds.prefetch(tf.data.AUTOTUNE) last).",
    ),
}


# where the run cannot tell whether it decodes token by token, the forward-pass remedy is
# given (it holds either way) with what a decode loop adds
_DECODE_HINT = (
    " If this is a token-by-token decode loop: keep a static KV cache so the decode step is "
    "captured once (or a serving engine that captures CUDA graphs: vLLM, SGLang, "
    "TensorRT-LLM)."
)


def remedy(kind: str, cfg: RunConfig) -> tuple[str, str] | None:
    """Title and detail of a remedy in the run's own framework; None when it does not apply.
    Decoding advice (KV cache, per-token steps) only where the run decodes token by token;
    steps_per_execution only outside a MirroredStrategy (keras-team/keras#19246)."""
    who = dialect(cfg)
    if kind == "mixed-precision" and inference(cfg):
        kind = "mixed-precision-inference"
    hint = ""
    if kind == "launch-bound-inference" and cfg.decode_loop is not True:
        kind = "launch-bound-forward"
        hint = _DECODE_HINT if cfg.decode_loop is None and who != "keras" else ""
    text = _TEXT.get((kind, who)) or _TEXT.get((kind, "*")) or _TEXT.get((kind, "keras"))
    if text is None:
        return None
    if kind == "fuse-kernels" and who == "keras" and cfg.strategy in MIRRORED:
        text = (text[0], text[1].split("; steps_per_execution")[0] + ".")
    return text[0], text[1] + hint


MIRRORED = ("mirrored", "multi-worker-mirrored")


def sync_remedy(cfg: RunConfig, k: int, now: str, all_to_all: bool) -> tuple[str, str]:
    """Less exposed communication per sample. All-to-all (MoE expert parallelism) is hidden
    by overlapping it, not by bigger batches; inference has no gradients to accumulate."""
    who = dialect(cfg)
    if all_to_all:
        return (
            "Overlap expert all-to-all with compute",
            "Split each batch into two micro-batches and run one's dispatch/combine while "
            "the other computes (DeepEP: async_finish=True with previous_event; DualPipe-"
            "style overlap), and give the communication kernels their own SMs",
        )
    if inference(cfg):
        return (
            "Do more work per collective",
            "Serve bigger batches per step, or shard over fewer devices (less tensor "
            "parallelism) so each collective carries more work",
        )
    if who == "pytorch":
        return (
            "Hide and amortise the gradient all-reduce",
            f"Grow the per-replica batch {k}×{now} (per GPU; scale the learning rate with "
            f"it), or accumulate gradients over {k} micro-batches inside `with "
            "model.no_sync():` and all-reduce once; DDP(model, bucket_cap_mb=100, "
            "gradient_as_bucket_view=True) starts the all-reduce during backward",
        )
    if who == "jax":
        return (
            "Amortise the gradient all-reduce",
            f"Grow the per-replica batch {k}×{now}, or accumulate gradients over {k} "
            f"micro-batches (optax.MultiSteps) so the psum runs once per {k}; let XLA "
            "overlap collectives (--xla_gpu_enable_latency_hiding_scheduler=true)",
        )
    return (
        "Give each replica more work per all-reduce",
        f"Grow the per-replica batch {k}×{now} (scale the learning rate with it), or "
        f"accumulate gradients over {k} steps",
    )


def in_fits_keras(sug: Suggestion, cfg: RunConfig) -> Suggestion:
    """The remedy in the Keras that fit the model: Keras 3's words, or Keras 2's
    (``KERAS2_NAMES``) where the callback recorded a Keras 2 fit."""
    if cfg.keras_generation != 2:
        return sug
    title, detail = sug.title, sug.detail
    for pattern, words in KERAS2_NAMES:
        title, detail = pattern.sub(words, title), pattern.sub(words, detail)
    return replace(sug, title=title, detail=detail)
