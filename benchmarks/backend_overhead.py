"""What DiagnoseCallback costs under each Keras backend (A/B, same process per backend).

Keras picks its backend at import, so each backend runs in a child process
(``KERAS_BACKEND``). In it: an MLP 256→1024→1024→10, batch 64, numpy arrays (the input
every backend takes), ``--steps`` steps per fit, one warm-up fit; then rounds, each running
in a shuffled order two baseline fits (the A/A pair: the noise), one with the full callback
(profiler window on) and one with ``profile=False``.

A fit's figures are its wall time and its process CPU time per step (all threads: the
callback's samplers and decode included; on a machine shared with other processes the CPU
time is the steadier of the two, since waiting for a core does not count). No timer
callback: one with a batch-end hook makes Keras wait for the device every step on JAX and
torch and would change the baseline.
It therefore includes everything the callback costs a fit: its begin (samplers, trace file),
the profiler window (start, the profiled steps' device waits, stop) and the end (decode,
diagnosis). Ratio per round: arm / mean of the round's baselines; the headline is the median
over rounds with the min..max spread and a bootstrap 90% interval.

    python benchmarks/backend_overhead.py [--backends tensorflow,jax,torch] [--rounds 8]

``keras2`` in ``--backends`` runs the same model in Keras 2 (tf_keras, TensorFlow).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def bootstrap(ratios: list[float], n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """90% bootstrap interval of the median ratio."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return meds[int(0.05 * n)], meds[int(0.95 * n)]


def child(rounds: int, steps: int, batch: int) -> dict:
    import numpy as np

    if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
        import tf_keras as keras  # Keras 2: the "keras2" entry of --backends
    else:
        import keras

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    n = steps * batch
    x = rng.random((n, 256), dtype=np.float32)
    y = rng.integers(0, 10, n)
    model = keras.Sequential(
        [
            keras.Input((256,)),
            keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=batch, epochs=1, verbose=0, shuffle=False)  # compile, warm up
    tmp = tempfile.mkdtemp(prefix="gpudiag-backend-overhead-")
    arms = {"full": {}, "profile=False": {"profile": False}}
    counter = 0

    def fit(kw: dict | None) -> tuple[float, float]:
        nonlocal counter
        counter += 1
        cbs = []
        if kw is not None:
            path = os.path.join(tmp, f"run{counter}.json")
            cbs = [DiagnoseCallback(trace_path=path, quiet=True, **kw)]
        t0, c0 = time.perf_counter(), time.process_time()
        model.fit(x, y, batch_size=batch, epochs=1, verbose=0, callbacks=cbs, shuffle=False)
        return (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps

    order = random.Random(1)
    out: dict = {"backend": keras.backend.backend(), "keras": keras.__version__}
    if keras.__version__.startswith("2."):
        out["backend"] += " (Keras 2)"
    for k in ("wall", "cpu"):
        out[k] = {"A/A": [], **{a: [] for a in arms}}
        out[k + "_base_ms"] = []
    for _ in range(rounds):
        plan: list[str | None] = [None, None, *arms]
        order.shuffle(plan)
        bases: list[tuple[float, float]] = []
        got: dict[str, tuple[float, float]] = {}
        for arm in plan:
            if arm is None:
                bases.append(fit(None))
            else:
                got[arm] = fit(arms[arm])
        for i, k in enumerate(("wall", "cpu")):
            base = statistics.mean(b[i] for b in bases)
            out[k]["A/A"].append(bases[1][i] / bases[0][i])
            out[k + "_base_ms"].append(1000 * base)
            for arm, t in got.items():
                out[k][arm].append(t[i] / base)
    return out


def report(r: dict, steps: int, rounds: int) -> None:
    print(f"{r['backend']} ({steps} steps per fit, {rounds} rounds, Keras {r['keras']})")
    for k in ("wall", "cpu"):
        base = statistics.median(r[k + "_base_ms"])
        print(f"  {k} time per step, baseline {base:.2f} ms")
        for name, vals in r[k].items():
            lo, hi = bootstrap(vals)
            print(
                f"    {name:14s} {statistics.median(vals):.3f}x  min..max {min(vals):.3f}.."
                f"{max(vals):.3f}  90% CI {lo:.3f}..{hi:.3f}"
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backends", default="tensorflow,jax,torch")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        out = child(args.rounds, args.steps, args.batch)
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(0)
    print(f"machine: {os.cpu_count()} cores; figure: fit wall time per step, arm / baseline")
    for backend in args.backends.split(","):
        r = subprocess.run(
            [sys.executable, __file__, "--child", *sys.argv[1:]],
            env={
                **os.environ,
                "KERAS_BACKEND": "tensorflow" if backend == "keras2" else backend,
                "TF_USE_LEGACY_KERAS": "1" if backend == "keras2" else "0",
            },
            capture_output=True,
            text=True,
        )
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(f"{backend}: failed\n{r.stderr[-2000:]}")
            continue
        report(json.loads(line[len("RESULT ") :]), args.steps, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
