"""Real Keras training runs for the memory checks, one per process.

    python -m tests.helpers.memory_scenarios NAME TRACE_PATH   -> prints one JSON line

``small_batch``: a convolutional model on cached in-memory data at batch 8 (compute-bound
on the CPU): its bigger-batch remedy must carry the host's memory check. ``host_leak``: an
MLP whose callback keeps 48 MB more at every epoch's end (a Python list of arrays, the
usual leak); ``no_leak``: the same run without it.
"""

from __future__ import annotations

import os
import sys

from tests.helpers.scenarios import (  # stdlib only: no framework yet
    cached_conv_fit,
    dense_model,
    result_of,
)
from tests.helpers.script_io import answer

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

LEAK_BYTES = 48 << 20
EPOCHS = 6


def small_batch(trace: str) -> dict:
    return cached_conv_fit(trace, samples=320, batch=8, filters=32, epochs=2)


def _mlp_run(trace: str, leak: bool) -> dict:
    import keras
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    kept: list[np.ndarray] = []

    class Keep(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if leak:
                kept.append(np.ones(LEAK_BYTES // 8))  # written: resident, not just mapped

    rng = np.random.default_rng(0)
    x = rng.random((1024, 16), dtype=np.float32)
    y = rng.random((1024, 1), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).prefetch(tf.data.AUTOTUNE)
    m = dense_model(16)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True, profile=False)
    # Keep runs first: the epoch's memory reading sees what it kept
    m.fit(ds, epochs=EPOCHS, verbose=0, callbacks=[Keep(), cb])
    return result_of(cb)


def host_leak(trace: str) -> dict:
    return _mlp_run(trace, leak=True)


def no_leak(trace: str) -> dict:
    return _mlp_run(trace, leak=False)


SCENARIOS = {f.__name__: f for f in (small_batch, host_leak, no_leak)}

if __name__ == "__main__":
    answer(SCENARIOS[sys.argv[1]](sys.argv[2]))
