"""The Keras 3 workloads benchmarks/gpu_truth.py trains on a GPU, one per process (JAX).

Each returns the model and fit arguments for a workload and a variant (a remedy applied:
``precision``, ``workers``, ``batch_mult``, ``spe``, ``fixed_len``, ``run_eagerly``); ``child``
trains it once and measures samples per second over the epochs after the first.

    python benchmarks/gpu_workloads.py conv '{"precision": "mixed_bfloat16"}' OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

# per workload: (steps per epoch, epochs, batch) at full size; --small divides the steps
SIZES = {
    "starved": (40, 3, 64),
    "starved_long": (150, 3, 64),
    "conv": (30, 3, 128),
    "conv_long": (120, 3, 128),  # ~0.85 s epochs: GPM and memory read in steady steps
    "tiny": (200, 3, 32),
    "varlen": (30, 3, 64),
    "eager": (50, 3, 64),
}
PY_WORK_ITERS = 60_000  # pure-Python loop per batch: ~5 ms on the GPU host, holds the GIL
VARLEN = (20, 200)  # token lengths a variable-length batch is padded to (its own longest)
FIXED_LEN = 200  # the remedy: every batch padded to one length


def _py_work() -> int:
    acc = 0
    for i in range(PY_WORK_ITERS):
        acc += i * i
    return acc


def _starved(keras: Any, np: Any, steps: int, batch: int, v: dict[str, Any]) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    x = rng.random((batch, 256), dtype=np.float32)
    y = rng.integers(0, 10, batch)
    workers = int(v.get("workers", 1))

    class SlowBatches(keras.utils.PyDataset):
        def __init__(self) -> None:
            super().__init__(workers=workers, use_multiprocessing=workers > 1)

        def __len__(self) -> int:
            return steps

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            _py_work()
            return x, y

    model = keras.Sequential(
        [
            keras.Input((256,)),
            keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    return model, {"x": SlowBatches()}


def _conv(keras: Any, np: Any, steps: int, batch: int, v: dict[str, Any], small: bool) -> Any:
    rng = np.random.default_rng(0)
    size = 32 if small else 64
    n = steps * batch
    x = rng.random((n, size, size, 3), dtype=np.float32)
    y = rng.integers(0, 10, n)
    filters = 16 if small else 128
    model = keras.Sequential(
        [
            keras.Input((size, size, 3)),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(2 * filters, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(2 * filters, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10, dtype="float32"),
        ]
    )
    return model, {"x": x, "y": y, "batch_size": batch}


def _tiny(keras: Any, np: Any, steps: int, batch: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    n = steps * batch
    x = rng.random((n, 32), dtype=np.float32)
    y = rng.random((n, 1), dtype=np.float32)
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    return model, {"x": x, "y": y, "batch_size": batch}


def _varlen(keras: Any, np: Any, steps: int, batch: int, v: dict[str, Any]) -> tuple[Any, Any]:
    """A text classifier fed batches padded to their own length: a new shape most steps,
    so the jitted step compiles again (issue: recompilation). ``fixed_len`` pads to one."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(VARLEN[0], VARLEN[1] + 1, steps)
    fixed = int(v.get("fixed_len", 0))

    class Texts(keras.utils.PyDataset):
        def __len__(self) -> int:
            return steps

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            n = fixed or int(lengths[i])
            x = np.random.default_rng(i).integers(1, 10_000, (batch, n))
            return x, np.random.default_rng(i).integers(0, 2, batch)

    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(10_000, 64),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    return model, {"x": Texts()}


def build(
    workload: str, variant: dict[str, Any], small: bool
) -> tuple[Any, dict[str, Any], int, int]:
    """The compiled model, the fit arguments, the batch and the steps per epoch of one run."""
    import keras
    import numpy as np

    steps, epochs, batch = SIZES[workload]
    if small:
        steps = max(6, steps // 5)
    batch *= int(variant.get("batch_mult", 1))
    if variant.get("precision"):
        keras.mixed_precision.set_global_policy(variant["precision"])
    if workload.startswith("starved"):
        model, fit = _starved(keras, np, steps, batch, variant)
    elif workload.startswith("conv"):
        model, fit = _conv(keras, np, steps, batch, variant, small)
    elif workload == "varlen":
        model, fit = _varlen(keras, np, steps, batch, variant)
    else:  # tiny and eager: the same small MLP on arrays
        model, fit = _tiny(keras, np, steps, batch)
    loss: Any = "mse" if workload in ("tiny", "eager") else "binary_crossentropy"
    if workload.startswith(("conv", "starved")):
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(
        "adam",
        loss,
        steps_per_execution=int(variant.get("spe", 1)),
        run_eagerly=bool(variant.get("run_eagerly", workload == "eager")),
    )
    fit["epochs"] = epochs
    return model, fit, batch, steps


def child(workload: str, variant: dict[str, Any], out_dir: str, small: bool) -> dict[str, Any]:
    import jax

    if variant.get("matmul_precision"):
        jax.config.update("jax_default_matmul_precision", variant["matmul_precision"])
    import keras

    model, fit, batch, steps = build(workload, variant, small)
    epoch_t: list[tuple[float, float]] = []
    begin: list[float] = []

    class EpochClock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            begin.append(time.perf_counter())

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            epoch_t.append((begin[-1], time.perf_counter()))

    callbacks: list[Any] = [EpochClock()]
    cb = None
    if variant.get("diagnose"):
        from gpudiag import DiagnoseCallback

        cb = DiagnoseCallback(
            trace_path=os.path.join(out_dir, "trace.json"),
            dataset=fit["x"] if isinstance(fit["x"], keras.utils.PyDataset) else None,
            profile_dir=os.path.join(out_dir, "profile"),
            quiet=True,
        )
        callbacks.append(cb)
    t0 = time.perf_counter()
    model.fit(verbose=0, callbacks=callbacks, **fit)
    wall = time.perf_counter() - t0
    steady = epoch_t[1:]
    steady_s = sum(b - a for a, b in steady)
    samples = len(steady) * steps * batch
    out: dict[str, Any] = {
        "workload": workload,
        "variant": {k: v for k, v in variant.items() if k != "diagnose"},
        "batch": batch,
        "epoch_s": [round(b - a, 4) for a, b in epoch_t],
        "fit_s": round(wall, 3),
        "samples_per_s": samples / steady_s if steady_s > 0 else None,
        "params": int(model.count_params()),
        "device": str(jax.devices()[0].device_kind),
        "platform": jax.devices()[0].platform,
        "jax": jax.__version__,
        "keras": keras.__version__,
    }
    try:
        stats = jax.devices()[0].memory_stats() or {}
        out["memory"] = {
            k: int(v)
            for k, v in stats.items()
            if k in ("peak_bytes_in_use", "bytes_in_use", "bytes_limit", "largest_alloc_size")
        }
    except Exception as exc:  # CPU devices have no memory_stats
        out["memory"] = {"error": f"{type(exc).__name__}: {exc}"}
    if cb is not None:
        d = cb.diagnosis
        out["diagnosis"] = d.to_dict() if d is not None else None
        out["overhead"] = dict(cb.overhead)
        out["windows_taken"] = list(cb.windows_taken)
    return out


if __name__ == "__main__":
    os.environ.setdefault("KERAS_BACKEND", "jax")
    name, variant, out_dir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    result = child(name, variant, out_dir, "--small" in sys.argv)
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)
