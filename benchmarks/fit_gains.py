"""Do the remedies of the whole fit hold? The fit-level scenarios of benchmarks/fix_gains.py:
each is diagnosed once with DiagnoseCallback, then timed before and after every remedy gpudiag
suggests (applied as a user would), and predicted is printed against measured.

The figure is the fit's wall time (a timing callback's ``on_train_begin`` to
``on_train_end``, without gpudiag), since these remedies act outside the steps: validation,
epoch-end callbacks, each epoch's first-batch wait. Measured gain = median fit time before /
median after, over interleaved repetitions (fix_gains.py's method, docs/remedies.md); "best"
is the fastest before over the fastest after (a neighbour's load only ever adds time).

    python benchmarks/fix_gains.py validation checkpoint shuffle_refill pool   # via fix_gains
    python benchmarks/fit_gains.py --list
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPOCHS = 4

SCENARIOS = {
    "validation": "MLP, 4 epochs of 128 steps at batch 16, 8000 validation samples at batch 16",
    "checkpoint": "MLP of 9.4 M parameters, 4 steps an epoch, ModelCheckpoint (.keras) every epoch",
    "slow_callback": "a callback of the user's own that blocks 0.4 s at every epoch's end",
    "tensorboard": "TensorBoard(histogram_freq=1) on a 6-layer MLP",
    "shuffle_refill": "per-element map into shuffle(20000) over 20000 samples, batch 256",
    "pool": "PyDataset(workers=2, use_multiprocessing=True) over 20-batch epochs",
    "pool_inline": "the same PyDataset with no workers (Keras runs it inline)",
}


# ---- the child: one fit ------------------------------------------------------------------------
def _mlp(inputs: int, width: int, depth: int = 2, spe: int = 1) -> Any:
    import keras

    layers = [keras.Input((inputs,))]
    layers += [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
    m = keras.Sequential([*layers, keras.layers.Dense(1)])
    m.compile("adam", "mse", steps_per_execution=spe)
    return m


def _arrays(n: int, features: int) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.random((n, features), dtype=np.float32), rng.random((n, 1), dtype=np.float32)


def _python_batches(batches: int, workers: int, mp: bool, endless: bool = False) -> Any:
    import keras

    x, y = _arrays(64, 32)

    class Batches(keras.utils.PyDataset):
        def __init__(self) -> None:
            super().__init__(workers=workers, use_multiprocessing=mp)

        @property
        def num_batches(self) -> int | None:
            return None if endless else batches

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            t = time.perf_counter()
            while time.perf_counter() - t < 0.005:  # 5 ms of Python per batch
                pass
            return x, y

    return Batches()


def build(scenario: str, v: dict[str, Any], tmp: str) -> tuple[Any, Any, dict[str, Any], list]:
    """(model, data, fit kwargs, callbacks) of one variant."""
    import keras

    epochs = EPOCHS
    if scenario == "validation":
        x, y = _arrays(128 * 16, 32)
        vx, vy = _arrays(8000, 32)
        n = int(len(vx) * v.get("val_subset", 1.0))
        kw = {
            "batch_size": 16,
            "validation_data": (vx[:n], vy[:n]),
            "validation_batch_size": 16 * v.get("val_batch_mult", 1),
            "validation_freq": v.get("validation_freq", 1),
        }
        return _mlp(32, 64, spe=v.get("spe", 1)), (x, y), kw | {"epochs": epochs}, []
    if scenario in ("checkpoint", "slow_callback", "tensorboard"):
        batches = 4 if scenario == "checkpoint" else 64  # a checkpoint of a big model
        x, y = _arrays(batches * 32, 512)
        every = v.get("every", 1)
        if scenario == "checkpoint":
            cb = keras.callbacks.ModelCheckpoint(
                os.path.join(tmp, "m.weights.h5" if v.get("weights_only") else "m.keras"),
                save_weights_only=bool(v.get("weights_only")),
                save_freq=every * batches if every > 1 else "epoch",
            )
            model = _mlp(512, 2048, depth=3)
        elif scenario == "slow_callback":
            cb = _Blocking(0.4, every)
            model = _mlp(512, 64)
        else:
            cb = keras.callbacks.TensorBoard(
                os.path.join(tmp, "tb"), histogram_freq=v.get("histogram_freq", 1)
            )
            model = _mlp(512, 256, depth=6)
        return model, (x, y), {"batch_size": 32, "epochs": epochs}, [cb]
    if scenario == "shuffle_refill":
        return (*_shuffled(v), [])
    if scenario in ("pool", "pool_inline"):
        workers = v.get("workers", 2 if scenario == "pool" else 1)
        mp = v.get("mp", scenario == "pool")
        if v.get("one_epoch"):
            data = _python_batches(20, workers, mp, endless=True)
            return _mlp(32, 64), data, {"epochs": 1, "steps_per_epoch": 20 * epochs * 2}, []
        return _mlp(32, 64), _python_batches(20, workers, mp), {"epochs": epochs * 2}, []
    raise SystemExit(f"unknown scenario {scenario}")


class _Blocking:
    """Made a keras Callback when first used (keras is imported in the child only)."""

    def __new__(cls, seconds: float, every: int) -> Any:
        import keras

        class Blocking(keras.callbacks.Callback):
            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                if (epoch + 1) % every == 0:
                    time.sleep(seconds)

        return Blocking()


def _shuffled(v: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """A per-element map into shuffle(20000), or the variant a remedy makes of it."""
    import tensorflow as tf

    x, y = _arrays(20_000, 32)

    def work(a: Any, b: Any) -> tuple[Any, Any]:
        for _ in range(8):
            a = tf.math.tanh(a * 1.01 + 0.01)
        return a, b

    auto = tf.data.AUTOTUNE
    src = tf.data.Dataset.from_tensor_slices((x, y))
    kw: dict[str, Any] = {"epochs": EPOCHS}
    if v.get("shuffle_first"):  # shuffle raw elements, map whole batches (vectorised)
        ds = src.shuffle(20_000).batch(256).map(work, num_parallel_calls=auto)
    elif v.get("buffer"):  # a small buffer over a shuffled source (raw elements shuffled)
        ds = src.shuffle(20_000).map(work, num_parallel_calls=auto).shuffle(v["buffer"])
        ds = ds.batch(256)
    else:
        ds = src.map(work, num_parallel_calls=auto)
        if v.get("cache"):
            ds = ds.cache()
        if v.get("repeat"):  # repeat under the shuffle, one iterator for the fit
            ds = ds.repeat()
            kw["steps_per_epoch"] = -(-20_000 // 256)
        ds = ds.shuffle(20_000).batch(256)
    return _mlp(32, 64), ds.prefetch(auto), kw


def one_fit(scenario: str, variant: dict[str, Any], diagnose: str | None = None) -> Any:
    """The fit's wall time (s), or with ``diagnose`` the Diagnosis as a dict."""
    import keras

    spent: dict[str, float] = {}

    class Stopwatch(keras.callbacks.Callback):
        def on_train_begin(self, logs: Any = None) -> None:
            spent["t0"] = time.perf_counter()

        def on_train_end(self, logs: Any = None) -> None:
            spent["fit_s"] = time.perf_counter() - spent["t0"]

    with tempfile.TemporaryDirectory() as tmp:
        model, data, kw, cbs = build(scenario, variant, tmp)
        cbs = [Stopwatch(), *cbs]
        if diagnose:
            from gpudiag import DiagnoseCallback

            cbs.append(DiagnoseCallback(trace_path=diagnose, dataset=data, quiet=True))
        x, y = data if isinstance(data, tuple) else (data, None)
        model.fit(x, y, verbose=0, callbacks=cbs, **kw)
    if diagnose:
        d = cbs[-1].diagnosis
        return d.to_dict() if d is not None else None
    return spent["fit_s"]


def child(scenario: str, variants: list[dict[str, Any]], reps: int) -> dict[str, Any]:
    """Every variant fitted ``reps`` times, interleaved in this one process (the first is
    "before"): neighbours' load drifts over minutes, so before and after run side by side."""
    times: list[list[float]] = [[] for _ in variants]
    for _ in range(reps):
        for i, v in enumerate(variants):
            times[i].append(one_fit(scenario, v))
    return {"fit_s": times}


# ---- remedies applied as a user would -----------------------------------------------------------
def apply(title: str, detail: str = "") -> dict[str, Any] | None:
    """The variant a user gets by following a suggestion; None = no programmatic form."""
    t = title.lower()
    if t.startswith("validate every"):
        return {"validation_freq": int(t.split("every ")[1].split()[0])}
    if t.startswith("validate in 4"):
        return {"val_batch_mult": 4}
    if t.startswith("validate on a smaller set"):
        return {"val_subset": 0.25}
    if t.startswith("run 8 steps per execution"):
        return {"spe": 8}
    if t.startswith("checkpoint every") or (t.startswith("run ") and " every " in t):
        return {"every": int(t.split("every ")[1].split()[0])}
    if t.startswith("save the weights only"):
        return {"weights_only": True}
    if t.startswith("write fewer tensorboard"):
        return {"histogram_freq": 0}
    if t.startswith("shuffle before the map"):
        return {"shuffle_first": True}
    if t.startswith("cache after the map"):
        return {"cache": True}
    if t.startswith("a smaller shuffle buffer"):
        return {"buffer": 1024}
    if t.startswith("repeat before the shuffle"):
        return {"repeat": True}
    if t.startswith("fewer, longer epochs"):
        return {"one_epoch": True}
    if t.startswith("run the python input in"):
        n = int(t.split("in ")[1].split()[0])
        return {"workers": n, "mp": True, "one_epoch": "longer epochs" in t}
    if t.startswith("run the python input stage in worker processes"):
        m = re.search(r"workers=(\d+)", detail)
        return {"workers": int(m.group(1)) if m else 2, "mp": True, "one_epoch": "longer" in detail}
    return None


# ---- the parent ---------------------------------------------------------------------------------
def run_child(scenario: str, args: list[str], timeout: float = 1800) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", scenario, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    raise RuntimeError(f"{scenario}: no result: {r.stderr.strip()[-500:]}")


def measure(scenario: str, reps: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per suggestion: predicted (point, range) and the fit times before and after."""
    with tempfile.TemporaryDirectory() as tmp:
        diag = run_child(scenario, ["--diagnose", os.path.join(tmp, "t.json")])["diagnosis"]
    rows = []
    for s in diag["suggestions"]:
        rng = s.get("expected_gain_range") or [s["expected_gain"]] * 2
        rows.append(
            {
                "remedy": s["title"],
                "predicted": s["expected_gain"],
                "range": [rng[0], rng[-1]],
                "variant": apply(s["title"], s["detail"]),
                "before": [],
                "after": [],
            }
        )
    timed = [r for r in rows if r["variant"] is not None]
    variants = [{}] + [r["variant"] for r in timed]
    times = run_child(scenario, ["--variants", json.dumps(variants), "--reps", str(reps)])
    before, *after = times["fit_s"]
    for row, t in zip(timed, after, strict=True):
        row["before"], row["after"] = before, t
        row["measured"] = statistics.median(before) / statistics.median(t)
        row["best"] = min(before) / min(t)  # a neighbour's load only adds time
    return rows, diag


def main(names: list[str], reps: int) -> None:
    t0 = time.time()
    for n in names:
        rows, diag = measure(n, reps)
        fit = diag["run"].get("fit", {})
        shares = {k: round(100 * v) for k, v in fit.get("shares", {}).items() if v >= 0.02}
        print(f"{n:14s} fit {fit.get('wall_s', 0):.1f} s {shares}", flush=True)
        ids = [f["id"] for f in diag["findings"]]
        print(f"{'':14s} findings {ids}", flush=True)
        for row in rows or [{"remedy": "(no remedy suggested)", "predicted": 1.0, "range": [1, 1]}]:
            meas = f"{row['measured']:.2f}" if row.get("measured") else "-"
            best = f"{row['best']:.2f}" if row.get("best") else "-"
            pred = f"{row['predicted']:.2f} ({row['range'][0]:.2f}-{row['range'][1]:.2f})"
            print(
                f"{'':14s} {row['remedy'][:52]:52s} {pred:>18s} {meas:>6s} (best {best})",
                flush=True,
            )
            if row.get("before"):
                b = "/".join(f"{x:.1f}" for x in row["before"])
                a = "/".join(f"{x:.1f}" for x in row["after"]) or "not timed"
                print(f"{'':14s}   fit s before {b}; after {a}", flush=True)
    print(f"({time.time() - t0:.0f} s; {reps} interleaved repetitions, median)")


def _arg(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        scenario, diag_path = sys.argv[2], _arg("--diagnose")
        if diag_path:
            res: dict[str, Any] = {"diagnosis": one_fit(scenario, {}, diag_path)}
        else:
            variants = json.loads(_arg("--variants") or "[{}]")
            res = child(scenario, variants, int(_arg("--reps") or 3))
        print("RESULT " + json.dumps(res), flush=True)
        os._exit(0)
    if "--list" in sys.argv:
        for k, v in SCENARIOS.items():
            print(f"{k:14s} {v}")
        sys.exit(0)
    reps = int(os.environ.get("FIT_GAINS_REPS", "3"))
    main([a for a in sys.argv[1:] if not a.startswith("--")] or list(SCENARIOS), reps)
