"""Do the remedies for the field's causes hold? The cause scenarios of benchmarks/fix_gains.py
(docs/causes.md): each is diagnosed once with DiagnoseCallback for the remedy and its
predicted gain, then timed without gpudiag before and after the remedy, applied as a user
would, in fresh processes, interleaved (fix_gains.py's method, docs/remedies.md).

The figure is what the remedy acts on: the step's median time for a step remedy (float32
policy, sparse embedding updates), the fit's wall time for a fit remedy (a callback's
per-batch work, a checkpoint's frequency, one fit instead of a loop).

    python benchmarks/fix_gains.py fp16 predict_cb numpy_cb embedding checkpoint_freq loop
    python benchmarks/cause_gains.py --list
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# scenario: (what it trains, the remedy's key, the figure: "step" or "fit")
SCENARIOS = {
    "fp16": (
        "MLP 64-512-512-1 at batch 64 under mixed_float16 on the CPU",
        "float32-policy",
        "step",
    ),
    "predict_cb": ("model.predict on 256 samples every 2 batches", "predict-on-batch", "fit"),
    "numpy_cb": ("a 900x900 NumPy matmul every 2 batches", "callback-less-often", "fit"),
    "embedding": (
        "Adam on a 150k x 64 Embedding, 5 lookups a sample; after: SGD for the table",
        "sparse-embedding-updates",
        "step",
    ),
    "embedding_adagrad": (
        "the same; after: Adagrad for the table (the remedy's low end)",
        "sparse-embedding-updates",
        "step",
    ),
    "checkpoint_freq": (
        "ModelCheckpoint(save_freq=4) of a 1.1 M-parameter MLP",
        "checkpoint-less-often",
        "fit",
    ),
    "loop": ("fit(epochs=1) of 8 steps called 40 times", "one-fit", "fit"),
}
STEPS = 60  # steps per fit (3 epochs of 20) where a fit is timed


class _Clock:
    """Step times and the fit's wall time, without gpudiag (a callback of its own)."""

    def __init__(self) -> None:
        import keras

        class C(keras.callbacks.Callback):
            def __init__(s) -> None:
                super().__init__()
                s.steps: list[float] = []
                s.fit = 0.0

            def on_train_begin(s, logs=None):
                s._f = time.perf_counter()

            def on_train_batch_begin(s, batch, logs=None):
                s._t = time.perf_counter()

            def on_train_batch_end(s, batch, logs=None):
                s.steps.append(time.perf_counter() - s._t)

            def on_train_end(s, logs=None):
                s.fit += time.perf_counter() - s._f

        self.cb = C()


def one(scenario: str, after: bool, diagnose: str | None) -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import numpy as np

    from gpudiag.record.host import HostMonitor

    rng = np.random.default_rng(0)
    clock = _Clock().cb
    cbs: list[Any] = [clock]
    if diagnose:
        from gpudiag import DiagnoseCallback

        gd = DiagnoseCallback(trace_path=diagnose, quiet=True)
        cbs.append(gd)

    def mlp(inp: int, width: int, depth: int = 2):
        layers = [keras.Input((inp,))]
        layers += [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
        m = keras.Sequential([*layers, keras.layers.Dense(1)])
        m.compile("adam", "mse")
        return m

    x, y = rng.random((20 * 64, 64), dtype=np.float32), rng.random((20 * 64, 1), dtype=np.float32)
    load = HostMonitor()  # other processes' share of the host over the timed part
    t0 = time.perf_counter()
    if scenario == "fp16":
        if not after:
            keras.mixed_precision.set_global_policy("mixed_float16")
        mlp(64, 512).fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=cbs)
    elif scenario in ("predict_cb", "numpy_cb"):
        a = rng.random((900, 900))

        class Work(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if scenario == "predict_cb":
                    if batch % 2 == 0:
                        if after:
                            self.model.predict_on_batch(x[:256])
                        else:
                            self.model.predict(x[:256], verbose=0)
                elif batch % (10 if after else 2) == 0:
                    float(np.linalg.norm(a @ a))

        mlp(64, 64).fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[Work(), *cbs])
    elif scenario.startswith("embedding"):
        rows = 150_000
        xi = rng.integers(0, rows, (20 * 32, 5)).astype("int32")
        yi = rng.random((len(xi), 1)).astype("float32")
        m = keras.Sequential(
            [
                keras.Input((5,), dtype="int32"),
                keras.layers.Embedding(rows, 64),
                keras.layers.GlobalAveragePooling1D(),
                keras.layers.Dense(1),
            ]
        )
        opt: Any = keras.optimizers.Adam()
        if after:  # gpudiag's remedy: the table's rows by SGD (or Adagrad), the rest by Adam
            table = keras.optimizers.Adagrad() if "adagrad" in scenario else keras.optimizers.SGD()
            opt = keras.optimizers.MultiOptimizer(
                keras.optimizers.OptimizerMap(
                    default_optimizer=keras.optimizers.Adam(),
                    optimizer_map={f"(.*/)?{m.layers[0].name}/.*": table},
                )
            )
        m.compile(opt, "mse")
        m.fit(xi, yi, batch_size=32, epochs=3, verbose=0, callbacks=cbs)
    elif scenario == "checkpoint_freq":
        path = os.path.join(tempfile.mkdtemp(), "m.keras")
        ck = keras.callbacks.ModelCheckpoint(path, save_freq=28 if after else 4)
        mlp(64, 1024).fit(x, y, batch_size=64, epochs=3, verbose=0, callbacks=[ck, *cbs])
    elif scenario == "loop":
        m = mlp(64, 64)
        xs, ys = x[: 8 * 32], y[: 8 * 32]
        m.fit(xs, ys, batch_size=32, epochs=1, verbose=0)  # compiled before the timing
        clock.fit = 0.0
        load = HostMonitor()
        t0 = time.perf_counter()
        if after:
            m.fit(
                np.concatenate([xs] * 40),
                np.concatenate([ys] * 40),
                batch_size=32,
                epochs=1,
                verbose=0,
                callbacks=cbs,
            )
        else:
            for _ in range(40):
                m.fit(xs, ys, batch_size=32, epochs=1, verbose=0, callbacks=cbs)
    wall = time.perf_counter() - t0
    out: dict[str, Any] = {
        "step_s": statistics.median(clock.steps[10:]),
        "fit_s": wall,
        "others_pct": load.read().cpu_others,
    }
    if diagnose:
        d = gd.diagnosis
        out["suggestions"] = [
            {"remedy": s.remedy, "gain": s.expected_gain, "range": s.expected_gain_range}
            for s in d.suggestions
        ]
        out["findings"] = [f.id for f in d.findings]
    return out


def _run(scenario: str, after: bool, diagnose: str | None = None) -> dict[str, Any]:
    args = [sys.executable, __file__, "--child", scenario, "1" if after else "0"]
    if diagnose:
        args.append(diagnose)
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}  # TF's defaults
    env.update(PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"{scenario}: {p.stderr[-800:]}")
    return json.loads(line[7:])


def measure(scenario: str, reps: int) -> dict[str, Any]:
    _, key, figure = SCENARIOS[scenario]
    d = _run(scenario, False, os.path.join(tempfile.mkdtemp(), "t.json"))
    sug = next((s for s in d["suggestions"] if s["remedy"] == key), None)
    before, after, others = [], [], []
    for _ in range(reps):  # interleaved: each round's load falls on both sides
        for side, xs in ((False, before), (True, after)):
            r = _run(scenario, side)
            xs.append(r[f"{figure}_s"])
            others.append(r.get("others_pct") or 0.0)
    measured = statistics.median(before) / statistics.median(after)
    return {
        "scenario": scenario,
        "remedy": key,
        "offered": sug is not None,
        "predicted": sug["gain"] if sug else None,
        "range": sug["range"] if sug else None,
        "measured": round(measured, 2),
        "best": round(min(before) / min(after), 2),
        "figure": figure,
        "before": [round(b, 4) for b in before],
        "after": [round(a, 4) for a in after],
        "findings": d["findings"],
        "others_pct": [round(o) for o in others],
    }


def main(names: list[str], reps: int, out: str | None = None) -> None:
    rows = []
    print(
        f"{'scenario':16s} {'remedy':26s} {'predicted':>20s} {'measured':>9s} {'best':>6s}  result"
    )
    for n in names:
        r = measure(n, reps)
        rows.append(r)
        if out:
            with open(out, "w") as f:
                json.dump(rows, f, indent=1)
        load = f"others {min(r['others_pct'])}-{max(r['others_pct'])}% CPU"
        if r["predicted"] is None:
            print(
                f"{n:16s} {r['remedy']:26s} {'not offered':>20s} {r['measured']:>9.2f}  "
                f"{r['findings']}  {load}",
                flush=True,
            )
            continue
        lo, hi = r["range"][0], r["range"][-1]
        pred = f"{r['predicted']:.2f} ({lo:.2f}-{hi:.2f})"
        ok = abs(r["predicted"] - r["measured"]) <= 0.25 * r["measured"]
        within = lo - 0.01 <= r["measured"] <= hi + 0.01
        verdict = "holds" if ok else ("in range" if within else "MISSES")
        print(
            f"{n:16s} {r['remedy']:26s} {pred:>20s} {r['measured']:>9.2f} {r['best']:>6.2f}  "
            f"{verdict}"
            f"  [{r['figure']}: before {r['before']}, after {r['after']}; {load}]",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        res = one(sys.argv[2], sys.argv[3] == "1", sys.argv[4] if len(sys.argv) > 4 else None)
        print("RESULT " + json.dumps(res), flush=True)
        os._exit(0)
    if "--list" in sys.argv:
        for k, v in SCENARIOS.items():
            print(f"{k:16s} {v[0]}")
        sys.exit(0)
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 3
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    main([a for a in sys.argv[1:] if a in SCENARIOS] or list(SCENARIOS), reps, out)
