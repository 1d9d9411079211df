"""What DiagnoseCallback costs a training run: per-step overhead and fixed cost per fit.

Alternates fits with and without the callback in one process (same model, same data, same
warm graph), timing every step with a minimal callback present in both arms. Prints:

- per-step overhead: median steady-state step time with / without, minus 1 (target ≤ 1%).
  Steady state excludes the first steps and the profiler window (a one-off, counted as fixed).
- fixed cost per fit: extra wall time per fit not explained by the per-step overhead
  (set-up, profiler window, trace decode, diagnosis; target ≤ 3 s).

    python benchmarks/overhead.py [--pairs 5] [--steps 200] [--no-profile]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


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
    skip = 10  # warm-up steps of each fit
    base_steps: list[float] = []
    cb_steps: list[float] = []
    base_wall: list[float] = []
    cb_wall: list[float] = []
    costs: list[dict[str, float]] = []
    for i in range(args.pairs):
        for with_cb in (i % 2 == 0, i % 2 != 0):  # alternate which arm goes first
            timer = StepTimer()
            cbs: list[keras.callbacks.Callback] = [timer]
            diag = None
            if with_cb:
                diag = DiagnoseCallback(trace_path=os.path.join(tmp, f"run{i}.json"),
                                        quiet=True, profile=not args.no_profile)
                cbs.append(diag)
            t0 = time.perf_counter()
            model.fit(ds, epochs=1, verbose=0, callbacks=cbs)
            wall = time.perf_counter() - t0
            steady = timer.times[skip:]
            if diag is not None:
                window = range(5, 5 + diag.profile_steps + 1)  # the window and its stop step
                steady = [t for k, t in enumerate(timer.times) if k >= skip and k not in window]
                cb_steps.append(statistics.median(steady))
                cb_wall.append(wall)
                costs.append(diag.overhead)
            else:
                base_steps.append(statistics.median(steady))
                base_wall.append(wall)

    ratios = [c / b for c, b in zip(cb_steps, base_steps, strict=True)]
    ratio = statistics.median(ratios)
    per_step = statistics.median(cb_steps) - statistics.median(base_steps)
    fixed = statistics.median(cb_wall) - statistics.median(base_wall) - per_step * args.steps
    print(f"machine: {os.cpu_count()} cores, TensorFlow {tf.__version__}, Keras "
          f"{keras.__version__}; {args.pairs} pairs of {args.steps}-step fits, batch "
          f"{args.batch}, profiler window {'off' if args.no_profile else 'on'}")
    print(f"steady step, without callback: {1000 * statistics.median(base_steps):.3f} ms")
    print(f"steady step, with callback:    {1000 * statistics.median(cb_steps):.3f} ms")
    print(f"per-step overhead (median ratio): {100 * (ratio - 1):+.2f}%   target <= 1%")
    print("  per pair: " + " ".join(f"{100 * (r - 1):+.1f}%" for r in ratios))
    print(f"fixed cost per fit: {fixed:.2f} s   target <= 3 s")
    print(f"  callback begin: {statistics.median(c.get('begin_s', 0) for c in costs):.3f} s, "
          f"end (stop, decode, diagnose): "
          f"{statistics.median(c.get('end_s', 0) for c in costs):.3f} s")
    if not args.no_profile:
        print("  profiler window (one-off, on the training thread): start "
              f"{statistics.median(c.get('profile_start_s', 0) for c in costs):.3f} s, stop "
              f"{statistics.median(c.get('profile_stop_s', 0) for c in costs):.3f} s; decode "
              f"(background thread): "
              f"{statistics.median(c.get('profile_decode_s', 0) for c in costs):.3f} s")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
