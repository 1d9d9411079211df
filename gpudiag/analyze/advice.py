"""Suggestions: a concrete change per finding, with an expected gain from the measured shares.

Gains are upper bounds derived from the breakdown (docs/method.md, "Expected gain"):
removing a stall of share ``s`` makes steps ``1 / (1 - s)`` faster; spreading it over ``n``
workers leaves ``s / n``; growing the per-replica batch ``k``-fold divides the per-sample
cost of a fixed synchronisation by ``k``.

    suggestions = suggest(findings, shares, verdict, context)
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudiag.analyze.diagnosis import Finding, Suggestion


@dataclass
class Context:
    cpu_count: int = 4
    replicas: int | None = None
    batch_size: int | None = None
    framework: str = ""
    device_type: str = ""  # "CPU" when the run had no accelerator


def removed(share: float) -> float:
    """Speed-up when a stall of ``share`` of step time disappears."""
    return 1.0 / max(1e-6, 1.0 - min(share, 0.95))


def spread(share: float, n: int) -> float:
    """Speed-up when a stall is parallelised over ``n`` workers."""
    n = max(1, n)
    return 1.0 / max(1e-6, 1.0 - min(share, 0.95) * (1.0 - 1.0 / n))


def batch_scaled(sync: float, k: int) -> float:
    """Per-sample speed-up when the per-replica batch grows ``k``-fold and sync stays fixed."""
    return 1.0 / max(1e-6, (1.0 - sync) + sync / k)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _workers(ctx: Context) -> int:
    return max(2, min(8, ctx.cpu_count - 1))


def _for_finding(f: Finding, s: dict[str, float], ctx: Context) -> list[Suggestion]:
    inp, sync, xfer, other = s["input"], s["sync"], s["transfer"], s["other"]
    n = _workers(ctx)
    tf = ctx.framework != "pytorch"
    if f.id == "sequential-map":
        return [Suggestion(
            "Parallelise the tf.data map",
            "ds.map(fn, num_parallel_calls=tf.data.AUTOTUNE) — the map now runs on one core; "
            f"this machine has {ctx.cpu_count}. Keep ds.prefetch(tf.data.AUTOTUNE) last.",
            spread(inp, n), f"input wait {_pct(inp)} spread over {n} cores", f.id)]
    if f.id == "python-generator":
        return [Suggestion(
            "Take Python out of the input path",
            "Express the generator's work as tf.data ops (from_tensor_slices + map), or use a "
            f"keras.utils.PyDataset with workers={n}, use_multiprocessing=True; Python in "
            "tf.data holds the GIL and runs on one core.",
            spread(inp, n), f"input wait {_pct(inp)} spread over {n} worker processes", f.id)]
    if f.id == "no-prefetch":
        return [Suggestion(
            "Prefetch so input overlaps compute",
            "End the pipeline with ds.prefetch(tf.data.AUTOTUNE): batch N+1 is produced while "
            "step N computes.",
            removed(min(inp, 1 - inp)), f"up to the overlap of input ({_pct(inp)}) with compute",
            f.id)]
    if f.id == "dataloader-in-main-process":
        return [Suggestion(
            "Load data in worker processes",
            f"DataLoader(..., num_workers={n}, pin_memory=True, persistent_workers=True): "
            "decoding and augmentation now run in the training process between steps.",
            spread(inp, n), f"DataLoader wait {_pct(inp)} spread over {n} workers", f.id)]
    if f.id == "input-wait":
        if not tf:
            return []
        return [Suggestion(
            "Feed the device faster",
            "Use tf.data with num_parallel_calls=tf.data.AUTOTUNE on map/interleave, "
            "ds.cache() after expensive decoding if the data fits, and ds.prefetch(AUTOTUNE).",
            spread(inp, n), f"input wait {_pct(inp)} spread over {n} cores", f.id)]
    if f.id == "gil-pressure":
        return [Suggestion(
            "Move Python work out of the training process",
            "Python code in the input path (generators, py_function, PyDataset without "
            "multiprocessing) competes with the training loop for the GIL: use tf.data ops or "
            f"PyDataset(workers={n}, use_multiprocessing=True).",
            spread(inp, n), f"input wait {_pct(inp)} spread over {n} processes", f.id)]
    if f.id == "cpu-saturated":
        return [Suggestion(
            "Do less per-sample CPU work",
            "The host CPU is saturated, so more parallelism cannot help: cache decoded samples "
            "(ds.cache()), pre-resize images offline, or move augmentation onto the device "
            "(Keras preprocessing layers inside the model).",
            removed(inp / 2), f"half of the input wait ({_pct(inp)}) saved", f.id)]
    if f.id == "slow-source":
        return [Suggestion(
            "Read the source in parallel",
            "ds.interleave(..., num_parallel_calls=tf.data.AUTOTUNE) over several files, and "
            "ds.cache() when the data fits in memory or on local disk.",
            removed(inp), f"input wait is {_pct(inp)} of step time", f.id)]
    if f.id == "host-to-device-heavy":
        return [Suggestion(
            "Shrink and overlap host-to-device copies",
            "Send compact dtypes (uint8 images, cast on device), prefetch to the device "
            "(tf.data.experimental.prefetch_to_device / pin_memory + non_blocking=True).",
            removed(xfer), f"exposed copies are {_pct(xfer)} of step time", f.id)]
    if f.id in ("exposed-collectives", "small-model-multi-gpu"):
        per = f" (now {ctx.batch_size // ctx.replicas} per replica)" if (
            ctx.batch_size and ctx.replicas) else ""
        return [Suggestion(
            "Give each replica more work per all-reduce",
            f"Grow the per-replica batch 4×{per} (scale the learning rate with it), or "
            "accumulate gradients over 4 steps"
            + ("; a model this small may train faster on fewer GPUs."
               if f.id == "small-model-multi-gpu" else "."),
            batch_scaled(sync, 4), f"exposed sync {_pct(sync)} amortised over a 4× batch", f.id)]
    if f.id == "kernel-launch-bound":
        return [Suggestion(
            "Fuse small kernels",
            "Compile the step (model.compile(..., jit_compile=True) for XLA; torch.compile or "
            "CUDA graphs on PyTorch) and raise the batch size so each kernel does more work.",
            removed(other / 2), f"half of the {_pct(other)} idle time recovered", f.id)]
    if f.id == "gpu-idle-gaps":
        return []  # the gaps are explained (and fixed) by the input or launch findings
    if f.id == "straggler":
        slow = float(f.evidence.get("median_slowdown_pct", 0.0)) / 100
        return [Suggestion(
            f"Investigate {f.evidence.get('straggler')}",
            "Everyone waits for the slowest rank at each all-reduce: check its data shard "
            "size, host load, thermal throttling (NVML clocks) and NIC/NVLink placement.",
            1.0 + slow, f"the straggler is {_pct(slow)} slower than the median rank", f.id)]
    if f.id == "batch-not-multiple-of-replicas":
        return [Suggestion(
            "Make the global batch a multiple of the replica count",
            str(f.evidence.get("fix") or "Use global_batch = per_replica_batch × replicas."),
            1.0, "correctness: TensorFlow fails or pads uneven shards", f.id)]
    if f.id == "partial-last-batch":
        return [Suggestion(
            "Drop the ragged last batch",
            "ds.batch(global_batch, drop_remainder=True): a short last batch gives some "
            "replicas few or no samples, corrupting BatchNormalization statistics.",
            1.0, "correctness of BatchNormalization statistics", f.id)]
    return []


def _compute_bound(s: dict[str, float], ctx: Context) -> list[Suggestion]:
    comp = s["compute"]
    xla = Suggestion(
        "Compile the model with XLA",
        "model.compile(..., jit_compile=True) fuses element-wise ops; typical gains "
        "10–30% on compute-bound models.",
        removed(comp * 0.15), f"15% of compute ({_pct(comp)}) saved by fusion",
        "compute-bound")
    if ctx.device_type == "CPU":  # no tensor cores: reduced precision does not pay on CPUs
        return [xla]
    return [
        Suggestion(
            "Use mixed precision",
            "keras.mixed_precision.set_global_policy('mixed_float16') (bfloat16 on TPU/Hopper): "
            "tensor cores run matmuls and convolutions at up to 2× the float32 rate.",
            removed(comp / 2), f"half of compute ({_pct(comp)}) saved on tensor-core GPUs",
            "compute-bound"),
        xla,
    ]


MIN_GAIN = 1.02  # a performance change worth less than 2% is not worth the reader's time
CORRECTNESS = {"batch-not-multiple-of-replicas", "partial-last-batch"}

# a specific input cause makes the generic advice redundant
SPECIFIC_INPUT = {"sequential-map", "python-generator", "dataloader-in-main-process",
                  "no-prefetch", "slow-source"}
SUPERSEDED = {"input-wait": SPECIFIC_INPUT, "gil-pressure": {"python-generator"}}


def suggest(findings: list[Finding], shares: dict[str, float], verdict: str,
            ctx: Context) -> list[Suggestion]:
    out: list[Suggestion] = []
    seen: set[str] = set()
    ids = {f.id for f in findings}
    for f in findings:
        if ids & SUPERSEDED.get(f.id, set()):
            continue
        for sug in _for_finding(f, shares, ctx):
            if sug.title not in seen:
                seen.add(sug.title)
                out.append(sug)
    if verdict == "compute-bound":
        out.extend(_compute_bound(shares, ctx))
    out = [x for x in out if x.finding in CORRECTNESS or x.expected_gain >= MIN_GAIN]
    out.sort(key=lambda x: -x.expected_gain)
    for sug in out:
        sug.expected_gain = round(sug.expected_gain, 2)
    return out
