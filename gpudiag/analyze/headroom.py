"""Does a bigger batch fit? The memory behind every batch remedy. Pure.

The peak a run reached is split into what does not grow with the batch (the model's weights,
gradients and optimizer slots, or what was held before the first step if that is more) and
what does (activations and their gradients, per sample). A batch ``k`` times bigger then
needs about ``fixed + k * (peak - fixed)``; it fits when that stays under the memory the
allocator may use, less ``MARGIN``. Where the split is uncertain it errs towards needing
more: an unknown optimizer counts no slots, so more of the peak is taken as per-sample.

Readings, best first (``memory_facts``): the framework's allocator (TensorFlow
``get_memory_info``, JAX ``memory_stats``, torch ``max_memory_allocated``, recorded by
``record/memory.py``; Kineto's ``[memory]`` events); NVML's memory held by the process,
which includes allocator pools and is only an upper bound; on a CPU-only run the process's
high-water RSS against what the host could still give it.

    facts = memory_facts(timelines, config)
    check = batch_check(facts, config, factor=4)
    check["text"]   # "a 4× batch needs about 23.3 of 57.4 GB usable (peak 5.8 GB ...)"
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from gpudiag.analyze.diagnosis import Suggestion
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Timeline

MARGIN = 0.10  # of the limit kept free: fragmentation, workspaces and buffers that vary
MIN_GROWTH = 1.25  # a batch remedy is withheld where no batch 25% bigger fits
POOL_SHARE = 0.7  # NVML memory above this share of the device is an allocator's pool
_MIB = float(1 << 20)
_GB = 1e9

# Optimizer state per parameter (Keras / torch / optax names, lower case): the fewest slots
# each may keep (SGD without momentum, RMSprop without it), so that the split errs towards
# per-sample memory: more of the peak counted as growing with the batch, never less.
OPTIMIZER_SLOTS = {
    "sgd": 0,
    "rmsprop": 1,
    "adagrad": 1,
    "adadelta": 2,
    "adam": 2,
    "adamw": 2,
    "adamax": 2,
    "nadam": 2,
    "lamb": 2,
    "lion": 1,
    "ftrl": 2,
    "adafactor": 0,
    "loss_scale_optimizer": 0,  # wraps another; its own slots are not known here
}
HALF = ("float16", "bfloat16")  # variables themselves in 16 bits (not mixed_*)


@dataclass(frozen=True)
class MemoryFacts:
    """Peak memory of the device (or host) the batch lives on, and what bounds it (bytes)."""

    where: str  # "device" | "host"
    source: str  # "GPU 0", "host"
    peak: float
    limit: float | None
    baseline: float | None  # held before the first step (weights, data, runtime)
    reading: str  # what measured the peak
    upper_bound: bool = False  # the peak is memory held (pools included), not used


def _max_of(tl: Timeline, name: str) -> tuple[float, str] | None:
    best: tuple[float, str] | None = None
    for c in tl.counter(name):
        vals = c.values[np.isfinite(c.values)]
        if vals.size and (best is None or float(vals.max()) > best[0]):
            best = (float(vals.max()), c.source)
    return best


def _last(tl: Timeline, name: str, source: str) -> float | None:
    for c in tl.counter(name, source):
        vals = c.values[np.isfinite(c.values)]
        if vals.size:
            return float(vals[-1])
    return None


def _before_steps(tl: Timeline, name: str, source: str) -> float | None:
    """The last reading of ``name`` taken before the first step (None: none)."""
    if not len(tl.steps):
        return None
    first = float(tl.steps.start[0])
    for c in tl.counter(name, source):
        before = c.values[c.ts <= first]
        if before.size:
            return float(before[-1])
    return None


def _device_total(tl: Timeline, source: str) -> float | None:
    """The device's memory in MiB: NVML's total, Kineto's deviceProperties, or the GPU's
    name ("H100 80GB")."""
    total = _last(tl, "gpu_mem_total", source)
    if total is None:
        totals = [_last(tl, "gpu_mem_total", c.source) for c in tl.counter("gpu_mem_total")]
        total = next((t for t in totals if t), None)
    if total is None and isinstance(tl.meta.extra.get("gpu_memory_mib"), int | float):
        total = float(tl.meta.extra["gpu_memory_mib"])
    if total is None:
        m = re.search(r"(\d+)\s*GB", tl.meta.config.gpu_model or "")
        total = float(m.group(1)) * 1e9 / _MIB if m else None
    return total


def _of_one(tl: Timeline, cpu: bool) -> MemoryFacts | None:
    peak = _max_of(tl, "mem_peak") or _max_of(tl, "mem_in_use")
    if peak is not None and not cpu:
        value, src = peak
        limit = _last(tl, "mem_limit", src) or _device_total(tl, src)
        reading = {
            "kineto": "Kineto's [memory] events (tensors the caching allocator held)",
            "xplane": "the profile's memory events (the BFC allocator's peak in use)",
        }.get(tl.meta.producer, "the framework's allocator (peak bytes in use)")
        base = _before_steps(tl, "mem_in_use", src)
        return MemoryFacts(
            "device",
            src,
            value * _MIB,
            limit * _MIB if limit else None,
            base * _MIB if base is not None else None,
            reading,
        )
    held = _max_of(tl, "gpu_mem_process")
    if held is not None and not cpu:
        value, src = held
        limit = _device_total(tl, src)
        return MemoryFacts(
            "device",
            src,
            value * _MIB,
            limit * _MIB if limit else None,
            None,
            "NVML: memory the process holds on the GPU (allocator pools included)",
            upper_bound=True,
        )
    host = _max_of(tl, "mem_host_peak") or _max_of(tl, "mem_host_rss")
    if host is not None and cpu:
        value = host[0]
        rss, avail = _last(tl, "mem_host_rss", "host"), _last(tl, "mem_host_available", "host")
        limit = rss + avail if rss is not None and avail is not None else None
        base = _before_steps(tl, "mem_host_rss", "host")
        return MemoryFacts(
            "host",
            "host",
            value * _MIB,
            limit * _MIB if limit else None,
            base * _MIB if base is not None else None,
            "the process's peak resident memory (RSS) on the host",
        )
    return None


def memory_facts(timelines: list[Timeline], config: RunConfig) -> MemoryFacts | None:
    """The tightest memory of the run: the rank (device) whose peak is highest."""
    cpu = (config.device_type or "").upper() == "CPU"
    got = [f for tl in timelines if (f := _of_one(tl, cpu)) is not None]
    return max(got, key=lambda f: f.peak) if got else None


def _slots(cfg: RunConfig) -> tuple[int, str]:
    name = (cfg.optimizer or "").lower()
    if name in OPTIMIZER_SLOTS:
        return OPTIMIZER_SLOTS[name], f"{cfg.optimizer}: {OPTIMIZER_SLOTS[name]} slots"
    return 0, "optimizer unknown: no slots counted"


def fixed_bytes(facts: MemoryFacts, cfg: RunConfig) -> tuple[float, str]:
    """What does not grow with the batch, and how it was counted."""
    params = cfg.params or 0
    width = 2 if (cfg.precision or "") in HALF else 4
    if cfg.training is False:
        model, how = params * width, f"{params:,} parameters"
    else:
        slots, which = _slots(cfg)
        model = params * width * (2 + slots)
        how = f"{params:,} parameters with gradients and optimizer state ({which})"
    if not params:
        how = "parameters unknown"
    if facts.baseline is not None and facts.baseline > model:
        return facts.baseline, f"held before the first step ({_gb(facts.baseline)})"
    return float(model), how


def _gb(n: float) -> str:
    return f"{n / _GB:.1f} GB" if n >= 0.1 * _GB else f"{n / 1e6:.0f} MB"


def batch_check(facts: MemoryFacts | None, cfg: RunConfig, factor: float) -> dict[str, Any]:
    """Whether a ``factor``× batch fits, the largest multiple that does, and the basis."""
    out: dict[str, Any] = {"factor": factor, "fits": None}
    if facts is None:
        out["text"] = "unchecked for memory: the run recorded no peak memory"
        return out
    if facts.limit is None:
        out["text"] = f"unchecked for memory: peak {_gb(facts.peak)}, but no limit is known"
        return out
    if facts.upper_bound and facts.peak >= POOL_SHARE * facts.limit:
        out["text"] = (
            f"unchecked for memory: the process holds {_gb(facts.peak)} of {_gb(facts.limit)}, "
            "most likely its allocator's pool rather than its use"
        )
        return out
    fixed, how = fixed_bytes(facts, cfg)
    fixed = min(fixed, facts.peak)
    grows = facts.peak - fixed
    usable = facts.limit * (1.0 - MARGIN)
    need = fixed + factor * grows
    most = (usable - fixed) / grows if grows > 0 else float("inf")
    per = cfg.per_replica_batch
    per_sample = f", {grows / per / 1e6:.1f} MB per sample" if per else ""
    basis = (
        f"peak {_gb(facts.peak)} on {facts.source} from {facts.reading}"
        + (f" at batch {per:g}" if per else "")
        + f": {_gb(fixed)} fixed ({how}){per_sample}; {MARGIN:.0%} of {_gb(facts.limit)} "
        "kept free" + ("; an upper bound (memory held, not used)" if facts.upper_bound else "")
    )
    fits = need <= usable
    most_txt = "any" if most == float("inf") else (f"{int(most)}×" if most >= 2 else f"{most:.1f}×")
    if fits:
        text = f"a {factor:g}× batch needs about {_gb(need)} of {_gb(usable)} usable"
    else:
        text = (
            f"does not fit: {most_txt} at most (a {factor:g}× batch needs about {_gb(need)} "
            f"of {_gb(usable)} usable)"
        )
    out.update(
        fits=fits,
        needs_gb=round(need / _GB, 2),
        usable_gb=round(usable / _GB, 2),
        peak_gb=round(facts.peak / _GB, 3),
        fixed_gb=round(fixed / _GB, 3),
        max_factor=None if most == float("inf") else round(most, 2),
        where=facts.where,
        text=text,
        basis=basis,
    )
    return out


def attach(sug: Suggestion, facts: MemoryFacts | None, cfg: RunConfig) -> tuple[Suggestion, str]:
    """The batch remedy with its memory check in ``memory`` and its detail; a reason (not
    "") where no batch ``MIN_GROWTH`` times bigger fits, to withhold it."""
    if sug.batch_factor is None:
        return sug, ""
    check = batch_check(facts, cfg, sug.batch_factor)
    most = check.get("max_factor")
    if check["fits"] is False and isinstance(most, int | float) and most < MIN_GROWTH:
        return sug, f"no bigger batch fits in memory: {check['text']}; {check['basis']}"
    text = check["text"]
    said = text[0].upper() + text[1:] if text.startswith("unchecked") else f"Memory: {text}"
    detail = f"{sug.detail.rstrip()} {said}."
    return replace(sug, detail=detail, memory=check), ""
