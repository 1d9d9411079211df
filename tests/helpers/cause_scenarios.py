"""Real small Keras fits (TF, CPU) with a reason for slowness planted, several per process so
that the tests stay short; each fit has its own ``DiagnoseCallback`` and trace.

    python -m tests.helpers.cause_scenarios GROUP TRACE_DIR   -> one line "RESULT {json}"

Group ``main`` (one process, default threading):

* ``plain``: a small MLP, float32 arrays, no callback of its own: none of the causes.
* ``mixed16``: the same under ``mixed_float16`` (float16 runs in emulation on a CPU).
* ``predict_cb``: a callback that calls ``model.predict`` on 256 samples every 2 batches.
* ``numpy_cb``: a callback that does NumPy work (an 800² matmul) every 2 batches.
* ``light_cb``: a callback with a batch hook that does almost nothing (the other side).
* ``adam_embedding``: Adam on a 150k-row Embedding (dense updates of the whole table).
* ``sgd_embedding``: the same table under SGD without momentum (sparse updates).
* ``checkpoint``: ``ModelCheckpoint(save_freq=4)`` on a 1.3 M-parameter model.
* ``float64``: the plain model given float64 arrays (pandas' default).
* ``loop``: ``fit(epochs=1)`` of 8 steps called 40 times on one model.
* ``two_fits``: ``fit`` called twice on one model (a resumed fit, not a loop).
* ``interrupted``: a series of fits whose fourth is left by a KeyboardInterrupt raised in a
  batch hook (Ctrl-C: no ``on_train_end``), then one more fit in the same process.

Group ``capped`` (its own process: TF's thread pools are set before its first op):
intra/inter-op threads capped at 1 and deterministic ops forced, on the plain model.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import keras
import numpy as np

from tests.helpers.scenarios import dense_model

STEPS = 40  # steps per fit (2 epochs of 20): a profiler window and its warm-up fit in
BATCH = 32


def _arrays(n: int, features: int = 64, dtype: str = "float32"):
    rng = np.random.default_rng(0)
    return rng.random((n, features)).astype(dtype), rng.random((n, 1)).astype(dtype)


def _cb(trace_dir: str, name: str, **kw):
    from gpudiag import DiagnoseCallback

    return DiagnoseCallback(trace_path=os.path.join(trace_dir, f"{name}.json"), quiet=True, **kw)


def _fit(model, x, y, cbs, epochs: int = 2, batch: int = BATCH) -> float:
    t = time.perf_counter()
    model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=cbs)
    return time.perf_counter() - t


def _out(cb, wall_s: float, **extra) -> dict:
    d = cb.diagnosis
    return {"diagnosis": d.to_dict() if d is not None else None, "wall_s": wall_s, **extra}


class PredictEvery(keras.callbacks.Callback):
    """``model.predict`` on 256 samples every ``every`` batches."""

    def __init__(self, x, every: int = 2) -> None:
        super().__init__()
        self.x, self.every, self.spent_s = x[:256], every, 0.0

    def on_train_batch_end(self, batch, logs=None):
        if batch % self.every == 0:
            t = time.perf_counter()
            self.model.predict(self.x, verbose=0)
            self.spent_s += time.perf_counter() - t


class NumpyEvery(keras.callbacks.Callback):
    """NumPy work (``size``² matmuls) every ``every`` batches."""

    def __init__(self, size: int, every: int = 2) -> None:
        super().__init__()
        self.a = np.random.default_rng(1).random((size, size))
        self.every, self.spent_s = every, 0.0

    def on_train_batch_end(self, batch, logs=None):
        if batch % self.every == 0:
            t = time.perf_counter()
            float(np.linalg.norm(self.a @ self.a))
            self.spent_s += time.perf_counter() - t


def _embedding_model(optimizer: str, rows: int):
    m = keras.Sequential(
        [
            keras.Input((5,), dtype="int32"),
            keras.layers.Embedding(rows, 64),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1),
        ]
    )
    m.compile(optimizer, "mse")
    return m


def _embedding(trace_dir: str, name: str, optimizer: str) -> dict:
    rows = 150_000
    rng = np.random.default_rng(0)
    x = rng.integers(0, rows, (STEPS * BATCH // 2, 5)).astype("int32")
    y = rng.random((len(x), 1)).astype("float32")
    cb = _cb(trace_dir, name)
    return _out(cb, _fit(_embedding_model(optimizer, rows), x, y, [cb]))


def main(trace_dir: str) -> dict:
    out: dict = {}
    x, y = _arrays(STEPS * BATCH // 2)

    cb = _cb(trace_dir, "plain")
    out["plain"] = _out(cb, _fit(dense_model(64), x, y, [cb]))

    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        cb = _cb(trace_dir, "mixed16")
        out["mixed16"] = _out(cb, _fit(dense_model(64, width=256), x, y, [cb]))
    finally:
        keras.mixed_precision.set_global_policy("float32")

    for name, user in (
        ("predict_cb", PredictEvery(x)),
        ("numpy_cb", NumpyEvery(800)),
        ("light_cb", NumpyEvery(8)),
    ):
        cb = _cb(trace_dir, name)
        wall = _fit(dense_model(64), x, y, [user, cb])
        out[name] = _out(cb, wall, user_s=user.spent_s)

    out["adam_embedding"] = _embedding(trace_dir, "adam_embedding", "adam")
    out["sgd_embedding"] = _embedding(trace_dir, "sgd_embedding", "sgd")

    big = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    big.compile("adam", "mse")
    ckpt = keras.callbacks.ModelCheckpoint(os.path.join(trace_dir, "ck.keras"), save_freq=4)
    cb = _cb(trace_dir, "checkpoint")
    out["checkpoint"] = _out(cb, _fit(big, x, y, [ckpt, cb]))

    x64, y64 = _arrays(STEPS * BATCH // 2, dtype="float64")
    cb = _cb(trace_dir, "float64")
    out["float64"] = _out(cb, _fit(dense_model(64), x64, y64, [cb]))

    m = dense_model(64)
    cb = _cb(trace_dir, "loop")
    t, load = time.perf_counter(), _OthersCpu()
    for _ in range(40):
        m.fit(x[: 8 * BATCH], y[: 8 * BATCH], batch_size=BATCH, epochs=1, verbose=0, callbacks=[cb])
    out["loop"] = _out(cb, time.perf_counter() - t, others_pct=load.pct())

    m = dense_model(64)
    cb = _cb(trace_dir, "two_fits")
    t = time.perf_counter()
    for _ in range(2):
        m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[cb])
    out["two_fits"] = _out(cb, time.perf_counter() - t)
    out["interrupted"] = _interrupted(trace_dir, x[: 8 * BATCH], y[: 8 * BATCH])
    return out


class _OthersCpu:
    """Other processes' share of the host's CPU since it was made, measured apart from
    gpudiag: the host's busy time less this process's (threads included), psutil."""

    def __init__(self) -> None:
        import psutil

        self._ps = psutil
        self._t = time.monotonic()
        self._busy, self._own = self._read()

    def _read(self) -> tuple[float, float]:
        c, p = self._ps.cpu_times(), self._ps.Process().cpu_times()
        return c.user + c.system + c.nice + c.irq + c.softirq, p.user + p.system

    def pct(self) -> float:
        busy, own = self._read()
        span = (time.monotonic() - self._t) * (os.cpu_count() or 1)
        return 100.0 * max(0.0, (busy - self._busy) - (own - self._own)) / max(1e-9, span)


class _Heard:
    """Stands in for the callback's ``Say``: keeps what gpudiag says."""

    quiet = False

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.printed: set[str] = set()

    def __call__(self, text: str) -> None:
        self.lines.append(text)

    def once(self, text: str) -> None:
        if text not in self.printed:
            self.printed.add(text)
            self(text)

    def lints(self, findings) -> None:
        pass


class _CtrlC(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 3:
            raise KeyboardInterrupt


def _interrupted(trace_dir: str, x, y) -> dict:
    """Ctrl-C in the fourth fit of a series; what gpudiag said, the trace it left, the threads
    left running, and the next fit of the process."""
    import threading

    from gpudiag.record import fit_series

    m = dense_model(64)
    cb = _cb(trace_dir, "interrupted", report=True)
    heard = cb._say = _Heard()
    for _ in range(3):
        m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[cb])
    stopped = False
    try:
        m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=[_CtrlC(), cb])
    except KeyboardInterrupt:
        stopped = True
    time.sleep(1.0)  # the watchdog looks every 0.25 s
    said = list(heard.lines)
    with open(cb.trace_path) as f:
        events = len(json.load(f))  # closed: a whole JSON array
    threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("gpudiag"))
    d = cb.diagnosis
    wall = _fit(m, x, y, [cb], epochs=1)  # the same callback, the same model: fit again
    fit_series.close_open()
    return {
        "stopped": stopped,
        "said": said,
        "events": events,
        "threads": threads,
        "fits": d.to_dict()["run"]["fit"].get("fits") if d is not None else None,
        "after": _out(cb, wall),
        "said_after": heard.lines[len(said) :],
    }


def capped(trace_dir: str) -> dict:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.experimental.enable_op_determinism()
    keras.utils.set_random_seed(0)  # determinism refuses unseeded random ops
    x, y = _arrays(STEPS * 128 // 2)
    cb = _cb(trace_dir, "capped")
    return {"capped": _out(cb, _fit(dense_model(64, width=1024), x, y, [cb], batch=128))}


GROUPS = {"main": main, "capped": capped}

if __name__ == "__main__":
    result = GROUPS[sys.argv[1]](sys.argv[2])
    print("RESULT " + json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)
