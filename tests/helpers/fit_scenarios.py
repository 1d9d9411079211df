"""Real Keras fits whose time goes outside the training steps, one per process, each timed by
a callback of its own (``Stopwatch``) so the tests can hold gpudiag's fit account against it.

    python -m tests.helpers.fit_scenarios NAME TRACE_PATH   -> one line "RESULT {json}"

* ``heavy_fit``: a large validation set at a small batch and an epoch-end callback that
  blocks (a checkpoint written to slow storage), around short training steps.
* ``plain_fit``: the same training, neither validation nor a blocking callback.
* ``shuffle_refill``: a per-element map into a shuffle buffer as large as the data: every
  epoch starts by filling it through the map.
* ``shuffle_small``: the same map into a small buffer: the map starves every step instead.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras

from tests.helpers.scenarios import dense_model
from tests.helpers.script_io import answer


class Stopwatch(keras.callbacks.Callback):
    """The script's own timing: the fit, its evaluations, each epoch's first-batch wait (from
    ``on_epoch_begin`` to the end of the epoch's first batch)."""

    def __init__(self) -> None:
        super().__init__()
        self.fit_s = 0.0
        self.validation_s = 0.0
        self.first_batch_s: list[float] = []
        self._t: dict[str, float] = {}

    def on_train_begin(self, logs=None):
        self._t["fit"] = time.perf_counter()

    def on_train_end(self, logs=None):
        self.fit_s = time.perf_counter() - self._t["fit"]

    def on_test_begin(self, logs=None):
        self._t["test"] = time.perf_counter()

    def on_test_end(self, logs=None):
        self.validation_s += time.perf_counter() - self._t["test"]

    def on_epoch_begin(self, epoch, logs=None):
        self._t["epoch"] = time.perf_counter()
        self._t.pop("first", None)

    def on_train_batch_end(self, batch, logs=None):
        if "first" not in self._t:
            self._t["first"] = 1.0
            self.first_batch_s.append(time.perf_counter() - self._t["epoch"])


class SlowStorageCheckpoint(keras.callbacks.Callback):
    """Blocks ``seconds`` at each epoch's end, as a checkpoint written to slow storage."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.spent_s = 0.0

    def on_epoch_end(self, epoch, logs=None):
        t = time.perf_counter()
        time.sleep(self.seconds)
        self.spent_s += time.perf_counter() - t


def _arrays(n: int, features: int = 32):
    import numpy as np

    rng = np.random.default_rng(0)
    return rng.random((n, features), dtype=np.float32), rng.random((n, 1), dtype=np.float32)


def _fit(trace: str, validation: int, block_s: float) -> dict:
    from gpudiag import DiagnoseCallback

    x, y = _arrays(128 * 16)
    extra = {"validation_data": _arrays(validation)} if validation else {}
    watch = Stopwatch()
    slow = SlowStorageCheckpoint(block_s)
    cb = DiagnoseCallback(trace_path=trace, quiet=True)
    callbacks = [watch, cb] + ([slow] if block_s else [])
    dense_model(32).fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=callbacks, **extra)
    return _result(cb, watch, callback_s=slow.spent_s)


def heavy_fit(trace: str) -> dict:
    return _fit(trace, validation=6_000, block_s=1.5)


def plain_fit(trace: str) -> dict:
    return _fit(trace, validation=0, block_s=0.0)


def _shuffled(trace: str, buffer: int) -> dict:
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    x, y = _arrays(20_000)

    def per_element(a, b):  # a few hundred small ops' worth of work per element
        for _ in range(8):
            a = tf.math.tanh(a * 1.01 + 0.01)
        return a, b

    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .map(per_element, num_parallel_calls=tf.data.AUTOTUNE)
        .shuffle(buffer)
        .batch(256)
        .prefetch(tf.data.AUTOTUNE)
    )
    watch = Stopwatch()
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    dense_model(32).fit(ds, epochs=3, verbose=0, callbacks=[watch, cb])
    return _result(cb, watch)


def shuffle_refill(trace: str) -> dict:
    return _shuffled(trace, 20_000)


def shuffle_small(trace: str) -> dict:
    return _shuffled(trace, 256)


def _result(cb, watch: Stopwatch, callback_s: float = 0.0) -> dict:
    return {
        "diagnosis": cb.diagnosis.to_dict() if cb.diagnosis is not None else None,
        "trace_path": cb.trace_path,
        "fit_s": watch.fit_s,
        "validation_s": watch.validation_s,
        "callback_s": callback_s,
        "first_batch_s": watch.first_batch_s,
    }


SCENARIOS = {f.__name__: f for f in (heavy_fit, plain_fit, shuffle_refill, shuffle_small)}

if __name__ == "__main__":
    answer(SCENARIOS[sys.argv[1]](sys.argv[2]))
