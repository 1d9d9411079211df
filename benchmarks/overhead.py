"""What DiagnoseCallback costs a training run: per-step overhead and fixed cost per fit.

Two complementary measurements, because on a small shared VM fit-to-fit wall-clock noise
(±10-20 % between identical fits) is far larger than the 1 % being checked:

1. A/B wall clock: fits with and without the callback alternate in one process (same model,
   same data, warm graph), every step timed by a minimal callback present in both arms.
   Median and spread of the per-pair ratio of steady-state step times (the first steps and
   the profiler window excluded; the window is a one-off, counted as fixed cost).
2. Direct cost, which noise cannot hide:
   - on the training thread: time spent inside DiagnoseCallback's batch hooks, per step;
   - beside it: CPU time of gpudiag's sampler threads and of the GIL reference process,
     as a share of one core over the fit (it competes with training only for idle cores).
   The fixed cost per fit: on_train_begin, the profiler start/stop on the training thread,
   and on_train_end (closing, reading back and diagnosing the trace).

    python benchmarks/overhead.py [--pairs 10] [--steps 200] [--batch 256] [--no-profile]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

WARMUP_STEPS = 10


def _thread_cpu(native_ids: set[int]) -> float:
    """CPU seconds used so far by the given threads of this process (Linux /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for tid in native_ids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return total


def _process_cpu(pid: int | None) -> float:
    if not pid:
        return 0.0
    try:
        import psutil

        t = psutil.Process(pid).cpu_times()
        return t.user + t.system
    except Exception:
        return 0.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=int, default=10, help="with/without fit pairs")
    p.add_argument("--steps", type=int, default=200, help="steps per fit")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--no-profile", action="store_true", help="callback without profiler window")
    args = p.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    class StepTimer(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []
            self._t = 0.0

        def on_train_batch_begin(self, batch: int, logs: object = None) -> None:
            self._t = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            self.times.append(time.perf_counter() - self._t)

    class Measured(DiagnoseCallback):
        """DiagnoseCallback with its batch hooks timed, and its helpers' CPU sampled."""

        hook_s: list[float]

        def on_train_begin(self, logs: object = None) -> None:
            self.hook_s = []
            super().on_train_begin(logs)
            self.helper_tids = {t.native_id for t in threading.enumerate()
                                if t.native_id and t is not threading.current_thread()
                                and t.name != "MainThread"}
            gil = self._samplers.gil if self._samplers is not None else None
            self.ref_pid = gil.reference_pid if gil is not None else None
            self.cpu0 = _thread_cpu(self.helper_tids) + _process_cpu(self.ref_pid)
            self.wall0 = time.perf_counter()

        def on_train_batch_begin(self, batch: int, logs: object = None) -> None:
            t = time.perf_counter()
            super().on_train_batch_begin(batch, logs)
            self.hook_s.append(time.perf_counter() - t)

        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            t = time.perf_counter()
            super().on_train_batch_end(batch, logs)
            self.hook_s[-1] += time.perf_counter() - t

        def on_train_end(self, logs: object = None) -> None:
            cpu = _thread_cpu(self.helper_tids) + _process_cpu(self.ref_pid) - self.cpu0
            self.helper_core_share = cpu / max(1e-9, time.perf_counter() - self.wall0)
            super().on_train_end(logs)

    rng = np.random.default_rng(0)
    n = args.steps * args.batch
    ds = (tf.data.Dataset.from_tensor_slices(
        (rng.random((n, 128), dtype=np.float32), rng.integers(0, 10, n)))
        .batch(args.batch).cache().prefetch(tf.data.AUTOTUNE))
    model = keras.Sequential([keras.Input((128,)), keras.layers.Dense(512, activation="relu"),
                              keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=1, verbose=0)  # warm up: trace the train function, fill the cache

    tmp = tempfile.mkdtemp(prefix="gpudiag-overhead-")
    base_steps: list[float] = []
    cb_steps: list[float] = []
    base_wall: list[float] = []
    cb_wall: list[float] = []
    runs: list[Measured] = []
    for i in range(args.pairs):
        for with_cb in (i % 2 == 0, i % 2 != 0):  # alternate which arm goes first
            timer = StepTimer()
            cbs: list[keras.callbacks.Callback] = [timer]
            diag = None
            if with_cb:
                diag = Measured(trace_path=os.path.join(tmp, f"run{i}.json"), quiet=True,
                                profile=not args.no_profile)
                cbs.append(diag)
            t0 = time.perf_counter()
            model.fit(ds, epochs=1, verbose=0, callbacks=cbs)
            wall = time.perf_counter() - t0
            if diag is not None:
                window = range(5, 5 + diag.profile_steps + 1)  # the window and its stop step
                steady = [t for k, t in enumerate(timer.times)
                          if k >= WARMUP_STEPS and (args.no_profile or k not in window)]
                cb_steps.append(statistics.median(steady))
                cb_wall.append(wall)
                runs.append(diag)
            else:
                base_steps.append(statistics.median(timer.times[WARMUP_STEPS:]))
                base_wall.append(wall)

    ratios = [c / b for c, b in zip(cb_steps, base_steps, strict=True)]
    q = statistics.quantiles(ratios, n=4)
    step = statistics.median(base_steps)
    hook = statistics.median(
        statistics.median(r.hook_s[WARMUP_STEPS:]) for r in runs)
    helpers = statistics.median(r.helper_core_share for r in runs)
    cores = os.cpu_count() or 1

    def cost(key: str) -> float:
        return statistics.median(r.overhead.get(key, 0.0) for r in runs)

    fixed_thread = cost("begin_s") + cost("end_s") + cost("profile_start_s") + cost(
        "profile_stop_s")
    print(f"machine: {cores} cores, TensorFlow {tf.__version__}, Keras {keras.__version__}; "
          f"{args.pairs} pairs of {args.steps}-step fits, batch {args.batch}, profiler window "
          f"{'off' if args.no_profile else 'on'}")
    print(f"steady step without the callback: {1000 * step:.3f} ms")
    print("A/B wall clock, per-step ratio: median "
          f"{100 * (statistics.median(ratios) - 1):+.2f}%, interquartile "
          f"{100 * (q[0] - 1):+.1f}% .. {100 * (q[2] - 1):+.1f}% (fit-to-fit noise)")
    print(f"direct per-step cost on the training thread: {1e6 * hook:.1f} µs = "
          f"{100 * hook / step:.2f}% of a step   target <= 1%")
    print(f"sampler threads + GIL reference process: {100 * helpers:.2f}% of one core "
          f"({100 * helpers / cores:.2f}% of this machine)")
    print(f"fixed cost per fit on the training thread: {fixed_thread:.3f} s   target <= 3 s")
    print(f"  begin {cost('begin_s'):.3f} s, end (close, read back, diagnose) "
          f"{cost('end_s'):.3f} s" + ("" if args.no_profile else
          f", profiler start {cost('profile_start_s'):.3f} s, stop "
          f"{cost('profile_stop_s'):.3f} s; decode in a background thread "
          f"{cost('profile_decode_s'):.3f} s"))
    print(f"A/B wall clock per fit: {statistics.median(cb_wall):.2f} s with, "
          f"{statistics.median(base_wall):.2f} s without")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
