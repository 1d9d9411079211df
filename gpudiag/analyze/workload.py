"""What the run shows about its workload: the facts every remedy is checked against. Pure.

A remedy is a claim about the user's code, so it may only be offered where the run's facts
allow it (``analyze/needs.py``). This module turns the run's ``RunConfig`` (what the recorder
wrote and the readers found in the trace) into one flat record of those facts, each ``None``
where the run cannot tell; ``--json`` shows them as ``workload`` with "unknown" in its place.

    facts = workload_facts(config)
    facts["keras"]        # True: Keras drives the loop (fit), False: plain JAX/PyTorch, None
    facts["vendor"]       # "nvidia" | "amd" | "intel" | "google" | "cpu" | None
"""

from __future__ import annotations

import re
from typing import Any

from gpudiag.trace.model.runconfig import RunConfig

# What a device name says of its maker (profile device planes, Kineto deviceProperties,
# NVML names). AMD's Instinct and Radeon parts come as "AMD Instinct MI300X", "gfx942".
_VENDORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("amd", re.compile(r"\bAMD\b|Instinct|Radeon|\bMI\d{2,3}|gfx\d{3}|ROCm", re.IGNORECASE)),
    (
        "nvidia",
        re.compile(
            r"NVIDIA|Tesla|Quadro|GeForce|RTX|\b[HABLTV]\d{2,3}\b|GH200|GB200|\bP100\b|GP100",
            re.IGNORECASE,
        ),
    ),
    ("intel", re.compile(r"Intel.*(?:Max|Arc|Gaudi|Data Center GPU)|\bXPU\b", re.IGNORECASE)),
)

FACTS = (
    "framework",
    "keras",
    "keras_major",
    "training",
    "decode_loop",
    "vendor",
    "gpu_model",
    "compute_capability",
    "precision",
    "strategy",
    "replicas",
    "input_kind",
    "workers",
    "use_multiprocessing",
    "parallel_maps",
    "prefetch",
    "cache",
    "device_measured",
    "stopped_early",
)


def vendor_of(cfg: RunConfig) -> str | None:
    """Who made the device the run computed on; None when the run does not say."""
    if cfg.vendor:
        return cfg.vendor
    kind = (cfg.device_type or "").upper()
    if kind == "CPU":
        return "cpu"
    if kind == "TPU":
        return "google"
    for text in (cfg.gpu_model, cfg.device_type):
        for vendor, pattern in _VENDORS:
            if text and pattern.search(text):
                return vendor
    if cfg.compute_capability:
        return "nvidia"  # compute capabilities are NVIDIA's
    return None


def keras_drives(cfg: RunConfig) -> bool | None:
    """Whether Keras runs the training loop (``fit``): Keras options (steps_per_execution,
    jit_compile, validation_freq) exist only there. A recorder inside ``fit`` or Keras frames
    in the profile say yes; a PyTorch trace, or a JAX profile without them, say no; a
    TensorFlow profile without them may be Keras or a custom loop."""
    if cfg.api == "keras":
        return True
    if cfg.framework in ("pytorch", "jax"):
        return False
    return None


def keras_major(cfg: RunConfig) -> int | None:
    v = cfg.keras_version or ""
    head = v.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def workload_facts(cfg: RunConfig, device_measured: bool | None = None) -> dict[str, Any]:
    """Every fact remedies are checked against, None where the run cannot tell."""
    return {
        "framework": cfg.framework,
        "keras": keras_drives(cfg),
        "keras_major": keras_major(cfg),
        "training": cfg.training,
        "decode_loop": cfg.decode_loop,
        "vendor": vendor_of(cfg),
        "gpu_model": cfg.gpu_model,
        "compute_capability": cfg.compute_capability,
        "precision": cfg.precision,
        "strategy": cfg.strategy,
        "replicas": cfg.replicas,
        "input_kind": None if cfg.input_kind == "unknown" else cfg.input_kind,
        "workers": cfg.workers,
        "use_multiprocessing": cfg.use_multiprocessing,
        "parallel_maps": cfg.parallel_maps,
        "prefetch": cfg.prefetch if cfg.prefetch else cfg.root_prefetch,
        "cache": cfg.cache,
        "device_measured": device_measured,
        "stopped_early": cfg.stopped_early,
    }


def shown(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts as ``--json`` prints them: "unknown" where the run cannot tell."""
    return {k: ("unknown" if facts.get(k) is None else facts[k]) for k in FACTS}
