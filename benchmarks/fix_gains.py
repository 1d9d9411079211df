"""Do gpudiag's remedies hold? Each scenario is run once with DiagnoseCallback to get the
remedies and their predicted gains, then timed before and after every remedy gpudiag
suggests — applied as a user would, programmatically — and predicted is printed against
measured.

Method (docs/remedies.md):
- every run is a fresh subprocess with TensorFlow's defaults (oneDNN on:
  TF_ENABLE_ONEDNN_OPTS is removed from the children's environment);
- a run trains ``--warmup`` steps untimed, then ``--steps`` timed steps in the same fit; the
  figure is samples per second over the timed steps (per sample, so a bigger batch counts);
- before and after runs alternate (interleaved) for ``--reps`` rounds; a round during which
  other processes used more than ``--max-others`` % of the host CPU (psutil, sampled inside
  the run over the timed steps) is discarded and re-run, up to twice;
- measured gain = median after / median before; it holds when predicted is within ±25% of
  it; a remedy measured < 1.0× is "slower".

    python benchmarks/fix_gains.py                  # every scenario (about 15 minutes)
    python benchmarks/fix_gains.py gil_map io_map   # some scenarios
    python benchmarks/fix_gains.py --list

``benchmarks/fix_pairs.py`` runs scenarios of this file as multi-epoch fits recorded by
DiagnoseCallback, and sets ``gpudiag compare``'s figure beside the wall clock's.
The remedies of the whole fit (validation, epoch-end callbacks, each epoch's first-batch
wait, worker pools started every epoch) act outside the steps: their scenarios
(``fit_gains.py``, listed here too) time the fit's wall time instead; the remedies for the
field's causes (docs/causes.md) are ``cause_gains.py``'s scenarios, listed here too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cause_gains  # noqa: E402  (beside this file: the field's causes, docs/causes.md)
import fit_gains  # noqa: E402  (beside this file: the fit-level scenarios)
import fix_compile  # noqa: E402  (compilation scenarios: benchmarks/fix_compile.py)

TOLERANCE = 0.25  # predicted within ±25% of measured
PY_WORK = 2500  # pure-Python loop iterations per sample (holds the GIL ~0.1 ms)


# ---- what a scenario trains (runs in the child) ----------------------------------------------
def py_work(x: Any) -> Any:
    acc = 0
    for i in range(PY_WORK):
        acc += i * i
    return x


def _dense(inputs: int, jit: bool = False, spe: int = 1, width: int = 256) -> Any:
    import keras

    m = keras.Sequential(
        [
            keras.Input((inputs,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    m.compile(
        "adam",
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
        steps_per_execution=spe,
    )
    return m


def _light_conv(shape: tuple[int, int, int], jit: bool = False) -> Any:
    """A model light enough that augmentation is the bottleneck."""
    import keras

    m = keras.Sequential(
        [
            keras.Input(shape),
            keras.layers.Conv2D(8, 3, strides=4, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )
    m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    return m


def _conv(shape: tuple[int, int, int], jit: bool = False, filters: int = 32) -> Any:
    import keras

    m = keras.Sequential(
        [
            keras.Input(shape),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )
    m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit)
    return m


def _arrays(n: int, features: int) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.random((n, features), dtype=np.float32), rng.integers(0, 10, n)


def _pydataset(
    x: Any, y: Any, batch: int, workers: int, mp: bool, work: Callable[[Any], Any]
) -> Any:
    import keras
    import numpy as np

    class Batches(keras.utils.PyDataset):
        def __init__(self) -> None:
            super().__init__(workers=workers, use_multiprocessing=mp, max_queue_size=8)

        def __len__(self) -> int:
            return len(x) // batch

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            sl = slice(i * batch, (i + 1) * batch)
            return np.stack([work(a) for a in x[sl]]), y[sl]

    return Batches()


def _sleep_work(a: Any) -> Any:
    time.sleep(0.0005)  # a read that waits (file, network): releases the GIL
    return a


def build(scenario: str, v: dict[str, Any]) -> tuple[Any, Any, int, dict[str, Any]]:
    """(model, data, batch size, fit kwargs) for one variant of a scenario."""
    import tensorflow as tf

    batch = 32 * v.get("batch_mult", 1)
    spe = v.get("spe", 1)
    jit = v.get("jit", False)
    workers, mp = v.get("workers"), v.get("mp", False)
    if scenario in ("gil_map", "io_map"):
        work = py_work if scenario == "gil_map" else _sleep_work
        x, y = _arrays(16384, 64)
        if workers:
            return _dense(64, jit, spe), _pydataset(x, y, batch, workers, mp, work), batch, {}

        def fn(a: Any, b: Any) -> tuple[Any, Any]:
            a = tf.numpy_function(work, [a], tf.float32)
            a.set_shape([64])
            return a, b

        ds = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .repeat()
            .map(fn, num_parallel_calls=tf.data.AUTOTUNE if v.get("parallel") else None)
            .batch(batch)
        )
        if v.get("prefetch"):
            ds = ds.prefetch(tf.data.AUTOTUNE)
        return _dense(64, jit, spe), ds, batch, {}
    if scenario in ("native_map", "already_on"):
        import numpy as np

        rng = np.random.default_rng(0)
        imgs = rng.integers(0, 255, (512, 96, 96, 3), dtype=np.uint8)
        labels = rng.integers(0, 10, 512)

        def aug(a: Any, b: Any) -> tuple[Any, Any]:
            a = tf.image.convert_image_dtype(a, tf.float32)
            a = tf.image.random_crop(a, [80, 80, 3])
            a = tf.image.resize(a, [64, 64])
            a = tf.image.random_flip_left_right(a)
            a = tf.image.random_brightness(a, 0.2)
            a = tf.nn.avg_pool2d(a[None], 3, 1, "SAME")[0]  # blur
            return a, b

        parallel = v.get("parallel") or scenario == "already_on"
        ds = (
            tf.data.Dataset.from_tensor_slices((imgs, labels))
            .repeat()
            .map(aug, num_parallel_calls=tf.data.AUTOTUNE if parallel else None)
            .batch(batch)
        )
        if v.get("prefetch") or scenario == "already_on":
            ds = ds.prefetch(tf.data.AUTOTUNE)
        jit = jit or scenario == "already_on"
        return _light_conv((64, 64, 3), jit), ds, batch, {}
    if scenario == "generator":
        x, y = _arrays(16384, 64)
        if workers:
            return _dense(64, jit, spe), _pydataset(x, y, batch, workers, mp, py_work), batch, {}

        def gen() -> Any:
            import numpy as np

            i = 0
            while True:
                sl = slice(i % (len(x) // batch) * batch, (i % (len(x) // batch) + 1) * batch)
                yield np.stack([py_work(a) for a in x[sl]]), y[sl]
                i += 1

        return _dense(64, jit, spe), gen(), batch, {}
    if scenario == "pydataset":
        x, y = _arrays(16384, 64)
        return (_dense(64, jit, spe), _pydataset(x, y, batch, workers or 1, mp, py_work), batch, {})
    if scenario in ("small_batch", "cached"):
        import numpy as np

        base = 8 if scenario == "small_batch" else 64
        batch = base * v.get("batch_mult", 1)
        rng = np.random.default_rng(0)
        x = rng.random((1024, 32, 32, 3), dtype=np.float32)
        y = rng.integers(0, 10, 1024)
        ds = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .batch(batch)
            .cache()
            .repeat()
            .prefetch(tf.data.AUTOTUNE)
        )
        return _conv((32, 32, 3), jit), ds, batch, {}
    if scenario == "mirrored":
        return _mirrored(v.get("replicas", 2), jit, spe)
    if scenario == "cached_decode":
        x, y = _arrays(8192, 64)

        def decode(a: Any, b: Any) -> tuple[Any, Any]:
            a = tf.numpy_function(py_work, [a], tf.float32)
            a.set_shape([64])
            return a, b

        # the decode runs in epoch 1 only: from then on the cache serves it
        ds = tf.data.Dataset.from_tensor_slices((x, y)).map(
            decode, num_parallel_calls=tf.data.AUTOTUNE if v.get("parallel") else None
        )
        ds = ds.cache().batch(64).repeat().prefetch(tf.data.AUTOTUNE)
        return _dense(64, jit, spe), ds, 64, {}
    if scenario == "tiny_steps":
        x, y = _arrays(8192, 16)
        ds = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .batch(16)
            .cache()
            .repeat()
            .prefetch(tf.data.AUTOTUNE)
        )
        return _dense(16, jit, spe, width=16), ds, 16, {}
    raise SystemExit(f"unknown scenario {scenario}")


def _mirrored(replicas: int, jit: bool, spe: int) -> tuple[Any, Any, int, dict[str, Any]]:
    """A tiny MLP at batch 64 under MirroredStrategy over 2 logical CPUs (``replicas=1``:
    the same model on the default single device). Both see the same 2 logical devices."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    x, y = _arrays(8192, 32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).repeat().prefetch(2)
    if replicas == 1:
        return _dense(32, jit, spe, width=32), ds, 64, {}
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = _dense(32, jit, spe, width=32)
    return model, ds, 64, {}  # Keras distributes it over the scope's replicas


# (warm-up, timed) steps: the timed part lasts ~1.5-4 s so queue start-up and bursts of
# worker processes average out
STEPS = {
    "tiny_steps": (64, 800),
    "small_batch": (10, 80),
    "cached": (10, 40),
    "io_map": (10, 100),
    "cached_decode": (140, 300),  # warm-up past the first pass, which fills the cache
    "native_map": (10, 150),
    "already_on": (10, 150),
}
DEFAULT_STEPS = (20, 300)


def child(scenario: str, variant: dict[str, Any], diagnose: str | None) -> dict[str, Any]:
    """One training run: timed samples/s over the steps after warm-up, other processes' CPU."""
    import keras

    from gpudiag.record.host import HostMonitor

    warm, timed = STEPS.get(scenario, DEFAULT_STEPS)
    mult = variant.get("batch_mult", 1)
    timed = max(8, timed // mult)
    model, data, batch, kw = build(scenario, variant)
    marks: list[tuple[int, float]] = []
    mon: list[HostMonitor] = []
    snaps: list[Any] = []

    class Clock(keras.callbacks.Callback):
        def on_train_batch_end(self, b: int, logs: Any = None) -> None:
            if b + 1 >= warm and not mon:
                mon.append(HostMonitor())
            if b + 1 >= warm:
                marks.append((b, time.perf_counter()))
            if b + 1 >= warm + timed and mon and not snaps:
                snaps.append(mon[0].read())  # before fit stops the input workers

    cbs: list[Any] = [Clock()]
    if diagnose:
        from gpudiag import DiagnoseCallback

        cb = DiagnoseCallback(trace_path=diagnose, dataset=data, quiet=True)
        cbs.append(cb)
    model.fit(data, epochs=1, steps_per_epoch=warm + timed, verbose=0, callbacks=cbs, **kw)
    snap = snaps[0] if snaps else (mon[0].read() if mon else None)
    (b0, t0), (b1, t1) = marks[0], marks[-1]
    out: dict[str, Any] = {
        "samples_per_s": (b1 - b0) * batch / max(1e-9, t1 - t0),
        "others_pct": snap.cpu_others if snap else None,
    }
    if diagnose:
        d = cbs[-1].diagnosis
        out["diagnosis"] = d.to_dict() if d is not None else None
    return out


# ---- remedies applied as a user would -------------------------------------------------------
def apply(title: str, cores: int) -> dict[str, Any] | None:
    """The variant a user gets by following a suggestion; None = no programmatic form."""
    t = title.lower()
    if t.startswith("parallelise the tf.data map"):
        return {"parallel": True}
    if t.startswith("run the python input in"):
        n = int(t.split("in ")[1].split()[0])
        return {"workers": n, "mp": True}
    if t.startswith("run the python input stage in worker processes"):
        return {"workers": max(2, cores), "mp": True}
    if t.startswith("train on one replica"):
        return {"replicas": 1}
    if t.startswith("train with a 4× bigger batch"):
        return {"batch_mult": 4}
    if t.startswith("run 8 steps per execution"):
        return {"spe": 8}
    if t.startswith("prefetch"):
        return {"prefetch": True}
    if t.startswith("compile the model with xla"):
        return {"jit": True}
    return None


# ---- the parent: interleaved timing ---------------------------------------------------------
@dataclass
class Row:
    scenario: str
    remedy: str
    predicted: float
    low: float
    high: float
    measured: float | None = None
    before: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    note: str = ""


def run_child(
    scenario: str, variant: dict[str, Any], diagnose: str | None = None, timeout: float = 300
) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", scenario, json.dumps(variant)]
    if diagnose:
        cmd += ["--diagnose", diagnose]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    raise RuntimeError(
        f"{scenario} {variant}: no result (rc {r.returncode}): "
        f"{r.stderr.strip().splitlines()[-1:] if r.stderr else ''}"
    )


def clean_run(scenario: str, variant: dict[str, Any], max_others: float) -> tuple[float, str]:
    """Samples/s of one run; re-run (twice at most) when other processes took the CPU."""
    note = ""
    label = "before" if not variant else "after"
    for _ in range(3):
        res = run_child(scenario, variant)
        others = res.get("others_pct")
        if others is None or others <= max_others:
            return float(res["samples_per_s"]), note
        note = f"{label}: discarded a run, others took {others:.0f}% CPU"
    return float(res["samples_per_s"]), note + " (kept the last)"


def measure(scenario: str, reps: int, max_others: float) -> tuple[list[Row], dict[str, Any]]:
    from gpudiag.record.host import available_cores

    cores = available_cores()
    with tempfile.TemporaryDirectory() as tmp:
        diag = run_child(scenario, {}, diagnose=os.path.join(tmp, "trace.json"))["diagnosis"]
    rows: list[Row] = []
    variants: list[dict[str, Any] | None] = []
    for s in diag["suggestions"]:
        rng = s.get("expected_gain_range") or [s["expected_gain"]] * 2
        rows.append(Row(scenario, s["title"], s["expected_gain"], rng[0], rng[-1]))
        variants.append(apply(s["title"], cores))
    for _ in range(reps):  # interleaved: before, every after, before, ...
        before, note = clean_run(scenario, {}, max_others)
        for row, v in zip(rows, variants, strict=True):
            row.before.append(before)
            if v is None:
                row.note = "no programmatic form: not timed"
                continue
            after, n2 = clean_run(scenario, v, max_others)
            row.after.append(after)
            row.note = "; ".join(x for x in (note, n2) if x)
        if not rows:
            rows_none = Row(scenario, "(no remedy suggested)", 1.0, 1.0, 1.0)
            rows_none.before.append(before)
            return [rows_none], diag
    for row in rows:
        if row.after:
            row.measured = statistics.median(row.after) / statistics.median(row.before)
    return rows, diag


SCENARIOS = {
    "gil_map": "tf.data map over GIL-holding Python (numpy_function), sequential",
    "io_map": "tf.data map over Python that waits (0.5 ms sleep per sample), sequential",
    "native_map": "tf.data map of TF ops (crop, resize, flip, brightness, blur), sequential",
    "generator": "Python generator passed to fit",
    "pydataset": "PyDataset(workers=1) with Python per-sample work",
    "small_batch": "conv net at batch 8 on cached data (compute-bound)",
    "tiny_steps": "tiny MLP at batch 16: per-step host overhead",
    "cached": "cached, prefetched conv net at batch 64 (nothing to fix on the input)",
    "already_on": "parallel map + prefetch + jit_compile already on",
    "mirrored": "MirroredStrategy over 2 logical CPUs for a tiny MLP at batch 64",
    "cached_decode": "Python decode in a sequential map, then .cache(): decoded in epoch 1 only",
    **fix_compile.SCENARIOS,  # compilation as a cause: timed over the whole fit
}


def verdict_of(row: Row) -> str:
    if row.measured is None:
        return "not timed"
    ok = abs(row.predicted / row.measured - 1) <= TOLERANCE
    flags = []
    if row.measured < 1.0:
        flags.append("SLOWER")
    if row.measured < 1.05 and row.predicted >= 1.2:
        flags.append("PROMISED >=1.2x, GAVE <1.05x")
    return ("holds" if ok else "off") + (" " + ", ".join(flags) if flags else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*", help="default: all")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument(
        "--max-others",
        type=float,
        default=15.0,
        help="discard a run when other processes used more than this %% of the CPU",
    )
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("SCENARIO", "VARIANT"))
    ap.add_argument("--diagnose")
    args = ap.parse_args()
    if args.child:
        res = child(args.child[0], json.loads(args.child[1]), args.diagnose)
        print("RESULT " + json.dumps(res), flush=True)
        os._exit(0)  # TF can hang at exit
    if args.list:
        causes = {k: v[0] for k, v in cause_gains.SCENARIOS.items()}
        for k, v in {**SCENARIOS, **fit_gains.SCENARIOS, **causes}.items():
            print(f"{k:12s} {v}")
        return 0
    names = args.scenarios or [*SCENARIOS, *fit_gains.SCENARIOS, *cause_gains.SCENARIOS]
    fit_names = [n for n in names if n in fit_gains.SCENARIOS]
    cause_names = [n for n in names if n in cause_gains.SCENARIOS]
    names = [n for n in names if n not in fit_gains.SCENARIOS and n not in cause_gains.SCENARIOS]
    for n in names:
        if n not in SCENARIOS:
            print(f"fix_gains: unknown scenario {n!r} (--list)", file=sys.stderr)
            return 2
    print(
        f"{'scenario':12s} {'verdict':14s} {'remedy':44s} {'predicted':>18s} "
        f"{'measured':>9s}  result"
    )
    t0 = time.time()
    for n in names:
        if n in fix_compile.SCENARIOS:
            rows, diag = fix_compile.measure(n, args.reps)  # type: ignore[assignment]
        else:
            rows, diag = measure(n, args.reps, args.max_others)
        for row in rows:
            pred = f"{row.predicted:.2f} ({row.low:.2f}-{row.high:.2f})"
            meas = f"{row.measured:.2f}" if row.measured else "-"
            print(
                f"{n:12s} {diag['verdict']:14s} {row.remedy[:44]:44s} {pred:>18s} "
                f"{meas:>9s}  {verdict_of(row)}" + (f"  [{row.note}]" if row.note else ""),
                flush=True,
            )
            print(
                f"{'':12s}   before {_fmt(row.before)} samples/s; after {_fmt(row.after)}",
                flush=True,
            )
    print(f"({time.time() - t0:.0f} s; {args.reps} interleaved repetitions, median)")
    if fit_names:  # the whole fit's remedies: the fit's wall time before and after
        fit_gains.main(fit_names, args.reps)
    if cause_names:  # the field's causes: the step or the fit, whichever the remedy acts on
        cause_gains.main(cause_names, args.reps)
    return 0


def _fmt(xs: list[float]) -> str:
    return "/".join(f"{x:.0f}" for x in xs) if xs else "-"


if __name__ == "__main__":
    sys.exit(main())
