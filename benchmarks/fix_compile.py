"""Remedies for compilation as a cause, applied and timed (run by benchmarks/fix_gains.py).

Compilation happens during the fit, not in a steady state after warm-up, so these scenarios
are timed over the whole fit: samples per second of the whole ``fit`` call. Each scenario is
first run with DiagnoseCallback for its remedies and their predicted gains, then before and
after each remedy, applied as a user would, interleaved.

- ``varlen_jax`` / ``varlen_tf_xla``: a text classifier (Embedding, GlobalAveragePooling1D,
  Dense) fed by a PyDataset whose batches are padded to their own length (12 lengths from 20
  to 200), 2 epochs, on JAX / on TensorFlow with ``jit_compile=True``.
- ``eager_tf`` / ``eager_jax``: a small MLP (64 -> 128 -> 1) on arrays, ``run_eagerly=True``.
- ``cache_jax``: the text classifier bucketed to 4 lengths on JAX (few shapes, many runs):
  the persistent compilation cache, timed on a run that finds it filled by an earlier one.

    python benchmarks/fix_gains.py varlen_jax eager_tf --reps 1
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LENGTHS = [20, 200, 36, 52, 68, 84, 100, 116, 132, 148, 164, 180]  # 12 batches, 12 lengths
BUCKETS = [50, 100, 150, 200]

SCENARIOS = {
    "varlen_jax": "PyDataset padded to each batch's own length (12 lengths), JAX",
    "varlen_tf_xla": "the same on TensorFlow with jit_compile=True",
    "eager_tf": "small MLP, run_eagerly=True, TensorFlow",
    "eager_jax": "small MLP, run_eagerly=True, JAX",
    "cache_jax": "4 bucket lengths on JAX: a persistent compilation cache for the next run",
}
BACKEND = {
    "varlen_jax": "jax",
    "varlen_tf_xla": "tensorflow",
    "eager_tf": "tensorflow",
    "eager_jax": "jax",
    "cache_jax": "jax",
}


def child(scenario: str, v: dict[str, Any], diagnose: str | None) -> dict[str, Any]:
    """One fit; samples per second of the whole fit."""
    import keras
    import numpy as np

    if v.get("cache"):
        import jax

        jax.config.update("jax_compilation_cache_dir", v["cache"])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    rng = np.random.default_rng(0)
    cbs: list[Any] = []
    if diagnose:
        from gpudiag import DiagnoseCallback

        cbs.append(DiagnoseCallback(trace_path=diagnose, quiet=True))
    if scenario.startswith("eager"):
        x = rng.random((2048, 64), dtype=np.float32)
        y = rng.random((2048, 1), dtype=np.float32)
        m = keras.Sequential(
            [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(1)]
        )
        m.compile("adam", "mse", run_eagerly=v.get("eager", True))
        t0 = time.perf_counter()
        m.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=cbs)
        samples = 2 * 2048
    else:
        pad = v.get("pad")
        buckets = v.get("buckets") or (BUCKETS if scenario == "cache_jax" else None)

        class Padded(keras.utils.PyDataset):
            def __len__(self) -> int:
                return len(LENGTHS)

            def __getitem__(self, i: int) -> Any:
                n = LENGTHS[i]
                if pad:
                    n = pad
                elif buckets:
                    n = next(b for b in buckets if b >= n)
                return rng.integers(1, 1000, (32, n)), rng.integers(0, 2, (32,))

        m = keras.Sequential(
            [
                keras.Input((None,), dtype="int32"),
                keras.layers.Embedding(1000, 32),
                keras.layers.GlobalAveragePooling1D(),
                keras.layers.Dense(1, activation="sigmoid"),
            ]
        )
        jit = v.get("jit", scenario == "varlen_tf_xla")
        m.compile("adam", "binary_crossentropy", jit_compile=True if jit else "auto")
        t0 = time.perf_counter()
        m.fit(Padded(), epochs=2, verbose=0, callbacks=cbs)
        samples = 2 * 32 * len(LENGTHS)
    out: dict[str, Any] = {"samples_per_s": samples / (time.perf_counter() - t0)}
    if diagnose:
        out["diagnosis"] = cbs[0].diagnosis.to_dict()
    return out


def apply(title: str) -> dict[str, Any] | None:
    t = title.lower()
    if t.startswith("pad every batch to one length"):
        return {"pad": int(t.rsplit(" ", 1)[-1]) if t[-1].isdigit() else max(LENGTHS)}
    if t.startswith("bucket the sequence lengths"):
        return {"buckets": BUCKETS}
    if t.startswith("compile without xla"):
        return {"jit": False}
    if t.startswith("run the step compiled"):
        return {"eager": False}
    if t.startswith("keep compiled programs across runs"):
        return {"cache": "fill"}
    return None


def run_child(scenario: str, v: dict[str, Any], diagnose: str | None = None) -> dict[str, Any]:
    env = {k: x for k, x in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND=BACKEND[scenario])
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), scenario, json.dumps(v)]
    if diagnose:
        cmd.append(diagnose)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    raise RuntimeError(f"{scenario} {v}: no result: {r.stderr.strip().splitlines()[-1:]}")


def timed(scenario: str, v: dict[str, Any]) -> float:
    """Samples/s of one fit; a cache variant is timed on the run after the one filling it."""
    if v.get("cache"):
        cache = tempfile.mkdtemp(prefix="gpudiag-jax-cache-")
        try:
            run_child(scenario, {**v, "cache": cache})  # fills it
            return float(run_child(scenario, {**v, "cache": cache})["samples_per_s"])
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    return float(run_child(scenario, v)["samples_per_s"])


@dataclass
class Row:  # read as fix_gains.Row is
    scenario: str
    remedy: str
    predicted: float
    low: float
    high: float
    measured: float | None = None
    before: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    note: str = "whole fit timed"


def measure(scenario: str, reps: int) -> tuple[list[Row], dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        diag = run_child(scenario, {}, diagnose=os.path.join(tmp, "t.json"))["diagnosis"]
    rows, variants = [], []
    for s in diag["suggestions"]:
        v = apply(s["title"])
        if v is None:
            continue
        rng = s.get("expected_gain_range") or [s["expected_gain"]] * 2
        rows.append(Row(scenario, s["title"], s["expected_gain"], rng[0], rng[-1]))
        variants.append(v)
    for _ in range(reps):
        before = timed(scenario, {})
        for row, v in zip(rows, variants, strict=True):
            row.before.append(before)
            row.after.append(timed(scenario, v))
    for row in rows:
        if row.after:
            row.measured = statistics.median(row.after) / statistics.median(row.before)
    return rows, diag


if __name__ == "__main__":
    res = child(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    print("RESULT " + json.dumps(res), flush=True)
    os._exit(0)
