"""Real before/after pairs of the shapes where a median step misleads, recorded by
DiagnoseCallback, each run also timed by its own wall clock (samples over the seconds of epochs
2 and later, as Keras's progress bar shows them).

    python -m tests.helpers.throughput_pairs OUT_DIR   -> prints one RESULT JSON line

- workers: a PyDataset doing pure Python per sample inline (workers=1), then the same in 2
  worker processes (the remedy "Run the Python input in N worker processes");
- generator: a Python generator doing the same work, against the 2-process PyDataset;
- cached: a Python decode in a tf.data map every epoch, then the same map followed by
  ``.cache()`` (a bigger model: another program than the PyDataset runs);
- crashed: the inline PyDataset run again, stopped by an exception at its 8th step;
- the inline run keeps its profile windows (``profile_dir=``) for ``gpudiag analyze``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras
import numpy as np

from tests.helpers.script_io import answer

BATCH = 32
STEPS = 40  # per epoch
EPOCHS = 4
PY_WORK = 1500  # pure-Python loop iterations per sample (holds the GIL)
DECODE_S = 0.0004  # the cached pair's decode per sample (a read: releases the GIL)


def _work(row: np.ndarray) -> np.ndarray:
    acc = 0
    for i in range(PY_WORK):
        acc += i * i
    return row


def _arrays() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    n = BATCH * STEPS
    return rng.random((n, 32), dtype=np.float32), rng.random((n, 1), dtype=np.float32)


class Batches(keras.utils.PyDataset):
    """One batch per item, built in Python (module level: worker processes can import it)."""

    def __init__(self, workers: int, processes: bool) -> None:
        super().__init__(workers=workers, use_multiprocessing=processes, max_queue_size=8)
        self.x, self.y = _arrays()

    def __len__(self) -> int:
        return STEPS

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        sl = slice(i * BATCH, (i + 1) * BATCH)
        return np.stack([_work(r) for r in self.x[sl]]), self.y[sl]


def _generator() -> Any:
    x, y = _arrays()
    while True:
        for i in range(STEPS):
            sl = slice(i * BATCH, (i + 1) * BATCH)
            yield np.stack([_work(r) for r in x[sl]]), y[sl]


def _decoded(cache: bool) -> Any:
    import tensorflow as tf

    def slow(a: np.ndarray) -> np.ndarray:
        time.sleep(DECODE_S)
        return a

    def decode(x: Any, y: Any) -> tuple[Any, Any]:
        x = tf.numpy_function(slow, [x], tf.float32)
        x.set_shape([32])
        return x, y

    x, y = _arrays()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(decode)
    if cache:
        ds = ds.cache()
    return ds.batch(BATCH).prefetch(2)


def _model(width: int = 64) -> Any:
    m = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(width, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse")
    return m


class _Clock(keras.callbacks.Callback):
    """Each epoch's wall time, and an optional exception at a given step."""

    def __init__(self, stop_at: int | None = None) -> None:
        super().__init__()
        self.begins: list[float] = []
        self.ends: list[float] = []
        self.stop_at = stop_at

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.begins.append(time.perf_counter())

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self.ends.append(time.perf_counter())

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        if self.stop_at is not None and batch == self.stop_at:
            raise RuntimeError("stopped on purpose")


def _fit(out: str, name: str, data: Any, width: int = 64, **kw: Any) -> dict[str, Any]:
    from gpudiag import DiagnoseCallback

    stop_at = kw.pop("stop_at", None)
    clock = _Clock(stop_at)
    cb = DiagnoseCallback(
        trace_path=os.path.join(out, f"{name}.json"), dataset=data, report=False, **kw
    )
    extra = {} if isinstance(data, keras.utils.PyDataset) else {"steps_per_epoch": STEPS}
    try:
        _model(width).fit(data, epochs=EPOCHS, verbose=0, callbacks=[clock, cb], **extra)
    except RuntimeError:  # the callback's watchdog notices fit was left, and finishes
        deadline = time.monotonic() + 20
        while cb.diagnosis is None and time.monotonic() < deadline:
            time.sleep(0.05)
    seconds = sum(e - b for b, e in zip(clock.begins[1:], clock.ends[1:], strict=False))
    done = len(clock.ends) - 1
    return {
        "trace": cb.trace_path,
        "diagnosis": cb.diagnosis.to_dict() if cb.diagnosis is not None else None,
        "us_per_sample": 1e6 * seconds / (BATCH * STEPS * done) if done > 0 else None,
    }


def main(out: str) -> dict[str, Any]:
    keep = os.path.join(out, "profile")
    inline = _fit(out, "inline", Batches(1, False), profile_dir=keep)
    inline["profile_dir"] = keep
    pool = _fit(out, "pool", Batches(2, True))
    gen = _fit(out, "generator", _generator())
    decode = _fit(out, "decode", _decoded(False), width=256)
    cached = _fit(out, "cached", _decoded(True), width=256)
    crashed = _fit(out, "crashed", Batches(1, False), stop_at=8)
    return {
        "workers": [inline, pool],
        "generator": [gen, pool],
        "cached": [decode, cached],
        "crashed": [inline, crashed],
        "unrelated": [inline, decode],
    }


if __name__ == "__main__":
    answer(main(sys.argv[1]))
