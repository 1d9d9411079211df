"""Keras runs where compilation is the cause, one per process, on the backend
``KERAS_BACKEND`` names (tests/training/test_compile_runs.py).

    KERAS_BACKEND=jax python -m tests.helpers.compile_scenarios varlen var TRACE   -> one JSON line
    KERAS_BACKEND=tensorflow python -m tests.helpers.compile_scenarios varlen fixed-jit TRACE
    KERAS_BACKEND=jax python -m tests.helpers.compile_scenarios eager_mlp eager TRACE

``varlen``: a text classifier (Embedding, GlobalAveragePooling1D, Dense) fed by a PyDataset
whose batches are padded to their own length (``var``: six lengths, 24 to 184) or all to 64
(``fixed``); ``-jit`` compiles with ``jit_compile=True``. ``eager_mlp``: a small MLP on
arrays, ``run_eagerly=True`` (``eager``) or compiled (``compiled``).
"""

from __future__ import annotations

import os
import sys

from tests.helpers.script_io import answer_timed

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

LENGTHS = (24, 184, 56, 152, 88, 120)  # the first two differ: Keras's spec leaves it open
FIXED = 64


def varlen(variant: str, trace: str) -> dict:
    import keras
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    fixed = variant.startswith("fixed")

    class Padded(keras.utils.PyDataset):
        def __len__(self) -> int:
            return len(LENGTHS)

        def __getitem__(self, i: int):
            n = FIXED if fixed else LENGTHS[i]
            return rng.integers(1, 500, (32, n)), rng.integers(0, 2, (32,))

    m = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(500, 16),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1, activation="sigmoid"),
        ]
    )
    m.compile("adam", "binary_crossentropy", jit_compile=True if "jit" in variant else "auto")
    ds = Padded()
    cb = DiagnoseCallback(trace_path=trace, quiet=True)
    m.fit(ds, epochs=3, verbose=0, callbacks=[cb])
    return _result(cb)


def eager_mlp(variant: str, trace: str) -> dict:
    import keras
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((1024, 64), dtype=np.float32)
    y = rng.random((1024, 1), dtype=np.float32)
    m = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse", run_eagerly=variant == "eager")
    cb = DiagnoseCallback(trace_path=trace, quiet=True)
    m.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[cb])
    return _result(cb)


def _result(cb) -> dict:
    import keras

    d = cb.diagnosis.to_dict()
    return {
        "backend": keras.backend.backend(),
        "verdict": d["verdict"],
        "confidence": d["confidence"],
        "reason": d["reason"],
        "breakdown": d["breakdown"],
        "findings": {f["id"]: f for f in d["findings"]},
        "suggestions": d["suggestions"],
        "lint_ids": [f.id for f in cb.lint_findings],
        "config": d["config"],
        "trace": cb.trace_path,
    }


if __name__ == "__main__":
    name, variant, trace_path = sys.argv[1:4]
    answer_timed({"varlen": varlen, "eager_mlp": eager_mlp}[name], variant, trace_path)
