"""Real Keras training runs for the memory checks, one per process.

    python -m tests.memory_scenarios NAME TRACE_PATH   -> prints one JSON line

``small_batch``: a convolutional model on cached in-memory data at batch 8 (compute-bound
on the CPU): its bigger-batch remedy must carry the host's memory check. ``host_leak``: an
MLP whose callback keeps 48 MB more at every epoch's end (a Python list of arrays, the
usual leak); ``no_leak``: the same run without it.
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

LEAK_BYTES = 48 << 20
EPOCHS = 6


def small_batch(trace: str) -> dict:
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback
    from tests.scenarios import conv_classifier

    rng = np.random.default_rng(0)
    x = rng.random((320, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, 320)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8).cache().prefetch(tf.data.AUTOTUNE)
    m = conv_classifier(32, 32)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=2, verbose=0, callbacks=[cb])
    return _result(cb)


def _mlp_run(trace: str, leak: bool) -> dict:
    import keras
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback
    from tests.scenarios import dense_model

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
    return _result(cb)


def host_leak(trace: str) -> dict:
    return _mlp_run(trace, leak=True)


def no_leak(trace: str) -> dict:
    return _mlp_run(trace, leak=False)


def _result(cb) -> dict:
    d = cb.diagnosis
    return {"diagnosis": d.to_dict() if d is not None else None, "trace_path": cb.trace_path}


SCENARIOS = {f.__name__: f for f in (small_batch, host_leak, no_leak)}

if __name__ == "__main__":
    result = SCENARIOS[sys.argv[1]](sys.argv[2])
    print("RESULT " + json.dumps(result), flush=True)
    os._exit(0)
