"""Two real Keras runs, before and after the fix gpudiag suggests, in one process.

    python -m tests.helpers.before_after OUT_DIR   -> prints one RESULT JSON line

BASE: a slow Python decode in a sequential tf.data map without prefetch, trained beside a
Keras TensorBoard callback, the report written as HTML, fit(verbose=0) with the default
report setting. NEW: the same map parallel and prefetched, fit(verbose=0) with report=True.
"""

from __future__ import annotations

import os
import sys
import time

from tests.helpers.script_io import answer

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

DECODE_S = 0.0015
SAMPLES = 32 * 40


def _dataset(parallel: bool):
    import numpy as np
    import tensorflow as tf

    def slow(a):
        time.sleep(DECODE_S)
        return a

    def fn(x, y):
        x = tf.numpy_function(slow, [x], tf.float32)
        x.set_shape([32])
        return x, y

    rng = np.random.default_rng(0)
    ds = tf.data.Dataset.from_tensor_slices(
        (rng.random((SAMPLES, 32), dtype=np.float32), rng.random((SAMPLES, 1), dtype=np.float32))
    )
    if parallel:
        # 8 calls, not AUTOTUNE: the decode sleeps, so the speed-up must not depend on how
        # many idle cores tf.data's autotuner sees on a loaded machine
        return ds.map(fn, num_parallel_calls=8).batch(32).prefetch(tf.data.AUTOTUNE)
    return ds.map(fn).batch(32)


def _model():
    import keras

    m = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse")
    return m


def main(out: str) -> dict:
    import keras

    from gpudiag import DiagnoseCallback

    ds = _dataset(parallel=False)
    base = DiagnoseCallback(
        trace_path=os.path.join(out, "base.json"), dataset=ds, html=os.path.join(out, "base.html")
    )
    callbacks = [base]
    try:  # Keras's TensorBoard callback needs the tensorboard package
        import tensorboard  # noqa: F401

        callbacks.insert(0, keras.callbacks.TensorBoard(os.path.join(out, "tb")))
    except ImportError:
        pass
    _model().fit(ds, epochs=2, verbose=0, callbacks=callbacks)
    print("BASE FIT DONE", flush=True)
    ds = _dataset(parallel=True)
    new = DiagnoseCallback(trace_path=os.path.join(out, "new.json"), dataset=ds, report=True)
    _model().fit(ds, epochs=2, verbose=0, callbacks=[new])
    return {
        "base": base.diagnosis.to_dict(),
        "new": new.diagnosis.to_dict(),
        "base_trace": base.trace_path,
        "new_trace": new.trace_path,
    }


if __name__ == "__main__":
    answer(main(sys.argv[1]))
