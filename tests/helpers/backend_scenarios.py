"""The Keras scenarios every backend runs (TensorFlow, JAX, torch), one per process.

    KERAS_BACKEND=jax python -m tests.helpers.backend_scenarios NAME TRACE_PATH   -> one JSON line

Only Keras and numpy: no tf.data, so the same code trains on each backend. Each run is a few
seconds on 2 shared cores. Keras picks its backend at import, hence one process per run.
"""

from __future__ import annotations

import os
import sys
import time

from tests.helpers.script_io import answer_timed

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

from tests.helpers.scenarios import conv_classifier, dense_model  # stdlib only: no framework yet


def starved_input(trace: str) -> dict:
    """A PyDataset whose batches take 30 ms of Python I/O each against a ~1 ms step."""
    import keras
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((32, 32), dtype=np.float32)
    y = rng.random((32, 1), dtype=np.float32)

    class Slow(keras.utils.PyDataset):
        def __len__(self) -> int:
            return 30

        def __getitem__(self, i: int):
            time.sleep(0.03)  # a slow read: the step waits for it
            return x, y

    ds = Slow()
    m = dense_model(32)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    return _result(cb)


def conv_compute(trace: str) -> dict:
    """In-memory arrays and a convolutional model: the computation is the step."""
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((480, 24, 24, 3), dtype=np.float32)
    y = rng.integers(0, 10, 480)
    m = conv_classifier(24, 32)
    cb = DiagnoseCallback(trace_path=trace, quiet=True)
    m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[cb])
    return _result(cb)


def tiny_batch(trace: str) -> dict:
    """A parameter-heavy MLP fed 4 samples a step (a PyDataset, so the batch is known)."""
    import keras
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((160, 256), dtype=np.float32)
    y = rng.random((160, 1), dtype=np.float32)

    class Batches(keras.utils.PyDataset):
        def __len__(self) -> int:
            return 30

        def __getitem__(self, i: int):
            return x[i * 4 : (i + 1) * 4], y[i * 4 : (i + 1) * 4]

    ds = Batches()
    m = keras.Sequential(
        [
            keras.Input((256,)),
            keras.layers.Dense(4096, activation="relu"),
            keras.layers.Dense(4096, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    m.compile(keras.optimizers.SGD(0.01), "mse")
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    return _result(cb)


def _two_replicas():
    """Two data-parallel replicas on this CPU where the backend offers them in one process:
    TensorFlow's MirroredStrategy over 2 logical CPUs, JAX's DataParallel over 2 host
    devices; torch trains data-parallel only across processes (DDP), so it keeps one."""
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    if backend == "jax":
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        import keras

        keras.distribution.set_distribution(keras.distribution.DataParallel())
        return None
    if backend == "tensorflow":
        import tensorflow as tf

        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2
        )
        return tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    return None


def uneven_batch(trace: str) -> dict:
    """Global batch 33 over 100 samples with BatchNormalization, the last batch (1 sample)
    kept, on two replicas where the backend has them in one process."""
    import contextlib

    strategy = _two_replicas()
    import keras
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((100, 16), dtype=np.float32)
    y = rng.random((100, 1), dtype=np.float32)

    class Batches(keras.utils.PyDataset):
        def __len__(self) -> int:
            return 4  # 33 + 33 + 33 + 1

        def __getitem__(self, i: int):
            return x[i * 33 : (i + 1) * 33], y[i * 33 : (i + 1) * 33]

    ds = Batches()
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        m = dense_model(16, width=32, batchnorm=True)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, model=m, quiet=True)
    error = None
    try:
        m.fit(ds, epochs=5, verbose=0, callbacks=[cb])
    except Exception as e:  # a backend may reject the uneven split; the lints came first
        error = type(e).__name__
    time.sleep(1.0)  # let the watchdog finish an interrupted run
    out = _result(cb)
    out["fit_error"] = error
    out["lint_ids"] = [f.id for f in cb.lint_findings]
    return out


def _result(cb) -> dict:
    import keras

    from tests.helpers.scenarios import result_of

    return {"backend": keras.backend.backend(), **result_of(cb)}


SCENARIOS = {f.__name__: f for f in (starved_input, conv_compute, tiny_batch, uneven_batch)}

if __name__ == "__main__":
    answer_timed(SCENARIOS[sys.argv[1]], sys.argv[2])
