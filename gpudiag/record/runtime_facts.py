"""What the framework's runtime is set to, read once before the first step: its thread pools,
deterministic kernels, the GPUs it lists and what it was built for, the NCCL settings. For
the ``RunConfig`` the rules judge; each read is cheap and only of a module already imported
(reading never imports TensorFlow, JAX or torch into a run that does not use them).

    fields = runtime_facts("tensorflow")
    fields["intra_op_threads"], fields["framework_gpus"], fields["gpu_build"]
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

# NCCL settings that turn a fast path off (NCCL's environment documentation): peer-to-peer
# over NVLink/PCIe, shared memory, InfiniBand, or P2P limited to fewer links
NCCL_SLOW = {
    "NCCL_P2P_DISABLE": ("1",),
    "NCCL_SHM_DISABLE": ("1",),
    "NCCL_IB_DISABLE": ("1",),
    "NCCL_P2P_LEVEL": ("LOC", "0"),
}
DETERMINISM_ENV = ("TF_DETERMINISTIC_OPS", "TF_CUDNN_DETERMINISTIC")


def runtime_facts(framework: str | None) -> dict[str, Any]:
    """RunConfig fields of the runtime (those it cannot tell are left out)."""
    out: dict[str, Any] = {"os": sys.platform}
    tf = sys.modules.get("tensorflow")
    if tf is not None and framework in (None, "tensorflow"):
        out.update(_tensorflow(tf))
    elif framework == "jax" and "jax" in sys.modules:
        out.update(_jax(sys.modules["jax"]))
    elif framework in ("torch", "pytorch") and "torch" in sys.modules:
        out.update(_torch(sys.modules["torch"]))
    if any(os.environ.get(k, "").strip() in ("1", "true", "True") for k in DETERMINISM_ENV):
        out["op_determinism"] = True
    slow = [f"{k}={os.environ[k]}" for k, bad in NCCL_SLOW.items() if os.environ.get(k) in bad]
    if slow:
        out["nccl_env"] = ", ".join(slow)
    return out


def _tensorflow(tf: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        out["intra_op_threads"] = int(tf.config.threading.get_intra_op_parallelism_threads())
        out["inter_op_threads"] = int(tf.config.threading.get_inter_op_parallelism_threads())
    with contextlib.suppress(Exception):
        # the public API sets it only; the flag is read where TF keeps it
        from tensorflow.python.framework import config as tf_config

        out["op_determinism"] = bool(tf_config.is_op_determinism_enabled())
    with contextlib.suppress(Exception):
        out["framework_gpus"] = len(tf.config.list_physical_devices("GPU"))
    with contextlib.suppress(Exception):
        info = tf.sysconfig.get_build_info()
        if not info.get("is_cuda_build") and not info.get("is_rocm_build"):
            out["gpu_build"] = "cpu-only"
        else:
            parts = [f"cuda {info['cuda_version']}"] if info.get("cuda_version") else []
            if info.get("cudnn_version"):
                parts.append(f"cudnn {info['cudnn_version']}")
            out["gpu_build"] = ", ".join(parts) or ("rocm" if info.get("is_rocm_build") else "")
    return out


def _jax(jax: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        out["framework_gpus"] = sum(d.platform in ("gpu", "cuda", "rocm") for d in jax.devices())
    flags = os.environ.get("XLA_FLAGS", "")
    if "--xla_gpu_deterministic_ops=true" in flags or "--xla_gpu_deterministic_ops" in flags:
        out["op_determinism"] = True
    return out


def _torch(torch: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        out["framework_gpus"] = int(torch.cuda.device_count())
    with contextlib.suppress(Exception):
        out["op_determinism"] = bool(torch.are_deterministic_algorithms_enabled())
    with contextlib.suppress(Exception):
        out["gpu_build"] = f"cuda {torch.version.cuda}" if torch.version.cuda else "cpu-only"
    return out
