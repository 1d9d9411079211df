"""``gpudiag demo``: a starved Keras run, diagnosed, then re-run with gpudiag's fix.

The input pipeline reads each sample in Python-side code (a 2 ms simulated read that waits,
as reading a file would) in a sequential ``map``. gpudiag diagnoses it, the remedy it
suggests for the map is applied, both runs are timed, and the measured gain is printed
against the estimate gpudiag made before the fix.

    gpudiag demo            # about 30 s on 2 cores
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from gpudiag.trace.quiet import quiet_tensorflow_env

DECODE_S = 0.002  # simulated per-sample decode time
SAMPLES = 1536
BATCH = 32


@dataclass
class Run:
    label: str
    diagnosis: Any
    trace_path: str
    step_ms: float
    samples_per_s: float


def _dataset(parallel: bool) -> Any:
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((SAMPLES, 64), dtype=np.float32)
    y = rng.integers(0, 10, SAMPLES)

    def decode(a: Any) -> Any:
        time.sleep(DECODE_S)  # reading + decoding one sample
        return a

    def load(xi: Any, yi: Any) -> tuple[Any, Any]:
        xi = tf.numpy_function(decode, [xi], tf.float32)
        xi.set_shape([64])
        return xi, yi

    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if parallel:  # the remedy as gpudiag words it (TF adds the final prefetch itself)
        return ds.map(load, num_parallel_calls=tf.data.AUTOTUNE).batch(BATCH)
    return ds.map(load).batch(BATCH)


def _model() -> Any:
    import keras

    m = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def _train(label: str, parallel: bool, trace_path: str) -> Run:
    import numpy as np

    from gpudiag.callback import DiagnoseCallback

    ds = _dataset(parallel)
    model = _model()
    cb = DiagnoseCallback(trace_path=trace_path, dataset=ds, quiet=True)
    # a tf.data input is not shuffled by fit; the default shuffle=True only draws a warning
    model.fit(ds, epochs=1, verbose=0, shuffle=False, callbacks=[cb])
    from gpudiag.trace.load import load_file

    (tl,) = load_file(trace_path)
    steady = tl.steps.durations[3:] if len(tl.steps) > 6 else tl.steps.durations
    step_ms = float(np.median(steady)) / 1000.0
    return Run(label, cb.diagnosis, trace_path, step_ms, BATCH / (step_ms / 1000.0))


def run_demo(quick: bool = False, out_dir: str | None = None) -> int:
    quiet_tensorflow_env()
    try:
        import keras  # noqa: F401
        import tensorflow  # noqa: F401
    except ImportError:
        print(
            "gpudiag: the demo trains a Keras model: install TensorFlow and Keras 3 "
            "(on a machine without them: pip install 'gpudiag[cpu]')",
            file=sys.stderr,
        )
        return 2
    global SAMPLES
    if quick:
        SAMPLES = 640
    from rich.console import Console
    from rich.rule import Rule

    from gpudiag.show.report import render_report
    from gpudiag.show.units import gain_text

    console = Console()
    out = out_dir or tempfile.mkdtemp(prefix="gpudiag-demo-")
    os.makedirs(out, exist_ok=True)
    console.print(Rule("gpudiag demo — run 1: sequential map"))
    console.print(
        f"Training a small Keras model on CPU; each sample takes {DECODE_S * 1000:.0f}"
        " ms to 'decode' in a tf.data map…",
        style="bright_black",
    )
    t0 = time.time()
    slow = _train("starved", False, os.path.join(out, "starved.gpudiag.json"))
    console.print(render_report(slow.diagnosis, width=console.width))
    suggestions = slow.diagnosis.suggestions
    top = next((s for s in suggestions if s.title.startswith("Parallelise the tf.data map")), None)
    console.print(Rule("run 2: gpudiag's fix applied"))
    if top is not None:
        rank = suggestions.index(top) + 1
        console.print(
            f"Applying gpudiag's remedy #{rank}: [bold]{top.title}[/] — "
            "ds.map(load, num_parallel_calls=tf.data.AUTOTUNE), a one-line change"
        )
        for i, other in enumerate(suggestions[: rank - 1], start=1):
            console.print(
                f"  (#{i} {other.title}, "
                f"{gain_text(other.expected_gain, other.expected_gain_range)}"
                ", would help too; the demo keeps to the smallest change)",
                style="bright_black",
                highlight=False,
            )
    else:
        console.print(
            "gpudiag did not suggest parallelising the map on this run; applying it "
            "anyway to show the difference",
            style="yellow",
        )
    fast = _train("fixed", True, os.path.join(out, "fixed.gpudiag.json"))
    console.print(render_report(fast.diagnosis, width=console.width))
    speedup = slow.step_ms / fast.step_ms if fast.step_ms > 0 else float("nan")
    console.print(Rule("result"))
    console.print(
        f"before: [bold]{slow.diagnosis.verdict}[/], {slow.step_ms:.1f} ms/step "
        f"({slow.samples_per_s:.0f} samples/s)\n"
        f"after:  [bold]{fast.diagnosis.verdict}[/], {fast.step_ms:.1f} ms/step "
        f"({fast.samples_per_s:.0f} samples/s)\n"
        f"measured: [bold green]{speedup:.2f}× faster[/]"
        + (
            f"; gpudiag estimated {gain_text(top.expected_gain, top.expected_gain_range)} "
            "before the fix"
            if top
            else ""
        )
    )
    console.print(
        f"traces: {slow.trace_path}, {fast.trace_path}  ({time.time() - t0:.0f} s)",
        style="bright_black",
        highlight=False,
    )
    sys.stdout.flush()
    os._exit(0)  # TensorFlow can hang at interpreter exit; everything is written by now
