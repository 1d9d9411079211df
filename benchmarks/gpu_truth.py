"""GPU truth: DiagnoseCallback, the NVML/GPM samplers and the remedies' gains on a real GPU.

Keras 3 on the JAX backend (the GPU machine has JAX, no TensorFlow). Each run is a fresh
process (one backend, clean device memory). Four workloads, each diagnosed, then timed before
and after the remedy its diagnosis puts first:

- ``starved``: a ``PyDataset`` doing ~10 ms of pure-Python work per batch in the main process,
  a small MLP (the GPU waits for input). Remedy applied: worker processes.
- ``conv``: a convolutional net on in-memory arrays, float32 (compute). Remedy applied:
  ``mixed_bfloat16``. Also run at JAX's ``highest`` matmul precision (true FP32, no TF32), so
  GPM's tensor-pipe activity can be checked against what each precision must show.
- ``tiny``: a 32→64→1 MLP at batch 32 (per-step fixed cost). Remedies applied:
  ``steps_per_execution=8`` and a 4× batch.

Throughput is samples over wall time of the epochs after the first (compilation and warm-up
stay in epoch 1), the figure a user sees; every run also records ``peak_bytes_in_use``.
Beside the runs, the parent process reads the GPU through gpudiag's own ``NvmlSession``
every 0.25 s (an NVML replay fixture: utilisation samples, memory, power, clocks, GPM) and
``nvidia-smi`` at the same moments, for the sampler-vs-nvidia-smi check.

    python benchmarks/gpu_truth.py --out DIR            # the GPU run (about 4 minutes on an H100)
    python benchmarks/gpu_truth.py --out DIR --small    # the same flow on a CPU, in seconds

Writes ``DIR/results.json`` (every run: diagnosis, throughput, memory), ``DIR/nvml_replay.json``,
``DIR/smi_pairs.json``, and each diagnosed run's trace and profiler directory under ``DIR/runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# per workload: (steps per epoch, epochs, batch) at full size; --small divides the steps
SIZES = {"starved": (40, 3, 64), "conv": (30, 3, 128), "tiny": (200, 3, 32)}
PY_WORK_ITERS = 60_000  # pure-Python loop per batch: ~10 ms on one core, holds the GIL


# ---- the child: one training run ----------------------------------------------------------
def _py_work() -> int:
    acc = 0
    for i in range(PY_WORK_ITERS):
        acc += i * i
    return acc


def build(
    workload: str, variant: dict[str, Any], small: bool
) -> tuple[Any, dict[str, Any], int, int]:
    """The model, the fit arguments, the batch and the steps per epoch of one run."""
    import keras
    import numpy as np

    steps, epochs, batch = SIZES[workload]
    if small:
        steps = max(6, steps // 5)
    batch *= int(variant.get("batch_mult", 1))
    if variant.get("precision"):
        keras.mixed_precision.set_global_policy(variant["precision"])
    rng = np.random.default_rng(0)
    spe = int(variant.get("spe", 1))
    if workload == "starved":
        x = rng.random((batch, 256), dtype=np.float32)
        y = rng.integers(0, 10, batch)
        workers = int(variant.get("workers", 1))

        class SlowBatches(keras.utils.PyDataset):
            def __init__(self) -> None:
                super().__init__(workers=workers, use_multiprocessing=workers > 1)

            def __len__(self) -> int:
                return steps

            def __getitem__(self, i: int) -> tuple[Any, Any]:
                _py_work()
                return x, y

        data: Any = SlowBatches()
        model = keras.Sequential(
            [
                keras.Input((256,)),
                keras.layers.Dense(1024, activation="relu"),
                keras.layers.Dense(1024, activation="relu"),
                keras.layers.Dense(10),
            ]
        )
        fit: dict[str, Any] = {"x": data, "epochs": epochs}
    elif workload == "conv":
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
        fit = {"x": x, "y": y, "batch_size": batch, "epochs": epochs}
    else:  # tiny
        n = steps * batch
        x = rng.random((n, 32), dtype=np.float32)
        y = rng.random((n, 1), dtype=np.float32)
        model = keras.Sequential(
            [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
        )
        fit = {"x": x, "y": y, "batch_size": batch, "epochs": epochs}
    loss: Any = "mse"
    if workload != "tiny":
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile("adam", loss, steps_per_execution=spe)
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
            dataset=fit["x"] if workload == "starved" else None,
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


# ---- the parent: GPU readers beside the runs ------------------------------------------------
class GpuWatch:
    """gpudiag's NvmlSession every ``interval`` s (a replay fixture) and nvidia-smi beside it."""

    SMI_FIELDS = "utilization.gpu,memory.used,power.draw,clocks.sm,temperature.gpu"

    def __init__(self, interval: float = 0.25, smi_every: int = 4) -> None:
        from gpudiag.record.nvml import NvmlSession

        self.session = NvmlSession(backfill=False)
        self.interval = interval
        self.smi_every = smi_every
        self.t0 = time.time()
        self.reads: list[dict[str, Any]] = []
        self.util: list[list[float]] = []
        self.pairs: list[dict[str, Any]] = []
        self.marks: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.smi = shutil.which("nvidia-smi")

    def mark(self, label: str) -> None:
        self.marks.append((round(time.time() - self.t0, 3), label))

    def start(self) -> None:
        if self.session.available:
            self._thread.start()

    def _loop(self) -> None:
        k = 0
        while not self._stop.wait(self.interval):
            k += 1
            smi = None
            if self.smi and k % self.smi_every == 0:
                smi = self._smi()
            snaps = self.session.read()
            if not snaps:
                continue
            s = snaps[0]
            t = round(s.ts_us / 1e6 - self.t0, 3)
            self.util.extend([round((ts / 1e6 - self.t0) * 1000, 1), v] for ts, v in s.util_samples)
            row = {
                "t_s": t,
                "mem_used_mib": s.mem_used_mib,
                "pcie_rx_kbs": None if s.pcie_rx_mbs is None else s.pcie_rx_mbs * 1000,
                "pcie_tx_kbs": None if s.pcie_tx_mbs is None else s.pcie_tx_mbs * 1000,
                "power_mw": None if s.power_w is None else s.power_w * 1000,
                "clock_sm_mhz": s.clock_sm_mhz,
                "temperature_c": s.temperature_c,
                "util": s.util,
            }
            if s.gpm:
                row["gpm"] = {k2: round(v, 2) for k2, v in s.gpm.items()}
            if s.errors:
                row["errors"] = s.errors
            self.reads.append(row)
            if smi is not None:
                self.pairs.append({"t_s": t, "smi": smi, "gpudiag": row})

    def _smi(self) -> dict[str, Any] | None:
        try:
            r = subprocess.run(
                [self.smi, f"--query-gpu={self.SMI_FIELDS}", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            vals = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
            return dict(zip(self.SMI_FIELDS.split(","), vals, strict=False))
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        s = self.session
        fixture = {
            "description": "Recorded by benchmarks/gpu_truth.py through gpudiag's NvmlSession "
            f"every {self.interval:g} s beside Keras 3 (JAX) runs; marks: run starts",
            "driver_version": s.driver_version,
            "duration_s": round(time.time() - self.t0, 2),
            "gpm_reason": s.gpm_reason,
            "marks": self.marks,
            "devices": [
                {
                    "name": s.names[0] if s.names else "?",
                    "memory_total_mib": None,
                    "power_limit_w": s._power_limit[0] if s._power_limit else None,
                    "processes": [],
                    "util_samples_ms": self.util,
                    "reads": self.reads,
                }
            ]
            if s.available
            else [],
            "unavailable_reason": s.reason,
        }
        s.close()
        return fixture


# In order of what matters most, so a run cut short by --budget keeps the essentials. Gains
# are timed on runs without gpudiag (before and after alike); the diagnosed runs give the
# verdict, the remedies, the traces and the GPM readings.
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("conv", {"diagnose": True}),
    ("conv", {}),
    ("conv", {"precision": "mixed_bfloat16"}),
    ("conv", {"precision": "mixed_bfloat16", "diagnose": True}),
    ("starved", {"diagnose": True}),
    ("starved", {}),
    ("starved", {"workers": 8}),
    ("tiny", {"diagnose": True}),
    ("tiny", {}),
    ("tiny", {"spe": 8}),
    ("tiny", {"batch_mult": 4}),
    ("conv", {"matmul_precision": "highest", "diagnose": True}),
    ("starved", {"workers": 8, "diagnose": True}),
]


def run_name(workload: str, variant: dict[str, Any]) -> str:
    parts = [workload] + [f"{k}-{v}" for k, v in sorted(variant.items()) if k != "diagnose"]
    if variant.get("diagnose"):
        parts.append("diag")
    return "_".join(str(p).replace("_", "") for p in parts)


def pack(out: str) -> None:
    """What comes back: traces and logs in one archive, the first profiler window of each
    diagnosed run in one archive per workload (whole profile folders are tens of MB)."""
    import tarfile

    runs = os.path.join(out, "runs")
    with tarfile.open(os.path.join(out, "traces.tar.gz"), "w:gz") as tar:
        for name in sorted(os.listdir(runs)):
            for f in ("trace.json", "stderr.txt"):
                path = os.path.join(runs, name, f)
                if os.path.exists(path):
                    tar.add(path, arcname=f"{name}/{f}")
    for workload in SIZES:
        with tarfile.open(os.path.join(out, f"profiles_{workload}.tar.gz"), "w:gz") as tar:
            for name in sorted(os.listdir(runs)):
                prof = os.path.join(runs, name, "profile", "plugins", "profile")
                if not name.startswith(workload) or not os.path.isdir(prof):
                    continue
                first = sorted(os.listdir(prof))[:1]
                for window in first:
                    for f in os.listdir(os.path.join(prof, window)):
                        if f.endswith(".xplane.pb"):
                            tar.add(os.path.join(prof, window, f), arcname=f"{name}/{f}")


def parent(out: str, small: bool, timeout: float, budget: float) -> int:
    started = time.time()
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    watch = GpuWatch()
    watch.start()
    results: list[dict[str, Any]] = []
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for workload, variant in PLAN:
        name = run_name(workload, variant)
        if time.time() - started > budget:
            print(f"{name:40s} skipped: the {budget:g} s budget is spent", flush=True)
            continue
        run_dir = os.path.join(out, "runs", name)
        os.makedirs(run_dir, exist_ok=True)
        watch.mark(name)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", workload, json.dumps(variant)]
        cmd += ["--out", run_dir] + (["--small"] if small else [])
        t0 = time.time()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            res = next(
                (
                    json.loads(x[7:])
                    for x in reversed(r.stdout.splitlines())
                    if x.startswith("RESULT ")
                ),
                {"error": f"rc {r.returncode}: {r.stderr.strip()[-600:]}"},
            )
            with open(os.path.join(run_dir, "stderr.txt"), "w") as f:
                f.write(r.stderr[-20000:])
        except subprocess.TimeoutExpired:
            res = {"error": f"timed out after {timeout:g} s"}
        res["name"], res["run_s"] = name, round(time.time() - t0, 2)
        results.append(res)
        d = res.get("diagnosis") or {}
        top = (d.get("suggestions") or [{}])[0]
        print(
            f"{name:40s} {res.get('samples_per_s') or 0:10.0f} samples/s  "
            f"{d.get('verdict', '-'):14s} top: {top.get('title', '-')[:50]} "
            f"{top.get('expected_gain', '')}  {res.get('error', '')[:200]}",
            flush=True,
        )
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    fixture = watch.stop()
    with open(os.path.join(out, "nvml_replay.json"), "w") as f:
        json.dump(fixture, f)
    with open(os.path.join(out, "smi_pairs.json"), "w") as f:
        json.dump(watch.pairs, f, indent=1)
    gpm = fixture.get("unavailable_reason") or fixture.get("gpm_reason") or "read"
    print(
        f"NVML: {len(watch.reads)} reads, {len(watch.util)} util samples, "
        f"{len(watch.pairs)} nvidia-smi pairs, GPM: {gpm}"
    )
    pack(out)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--small", action="store_true")
    p.add_argument("--timeout", type=float, default=90.0, help="seconds per run")
    p.add_argument("--budget", type=float, default=300.0, help="no run starts after this")
    p.add_argument("--child", nargs=2, metavar=("WORKLOAD", "VARIANT"))
    a = p.parse_args()
    if a.child:
        os.environ.setdefault("KERAS_BACKEND", "jax")
        res = child(a.child[0], json.loads(a.child[1]), a.out, a.small)
        print("RESULT " + json.dumps(res), flush=True)
        os._exit(0)
    return parent(a.out, a.small, a.timeout, a.budget)


if __name__ == "__main__":
    sys.exit(main())
