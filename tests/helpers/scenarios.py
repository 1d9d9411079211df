"""Real Keras training runs with injected bottlenecks, one per process.

    python -m tests.helpers.scenarios NAME TRACE_PATH   -> prints one JSON line (diagnosis + facts)

Each runs in its own process because logical CPU devices must be configured before
TensorFlow initialises, and TF processes sometimes hang at exit (hence ``os._exit``).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from tests.helpers.script_io import answer_timed

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def _setup_replicas(n: int):
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    if n > 1:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * n
        )
        return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])
    return tf.distribute.get_strategy()


def dense_model(inp: int, width: int = 64, batchnorm: bool = False):
    """A small regression MLP, compiled (the TF and the backend scenarios share it)."""
    import keras

    layers = [keras.Input((inp,)), keras.layers.Dense(width, activation="relu")]
    if batchnorm:
        layers.append(keras.layers.BatchNormalization())
    m = keras.Sequential([*layers, keras.layers.Dense(1)])
    m.compile("adam", "mse")
    return m


def conv_classifier(size: int, filters: int):
    """Three 3x3 convolutions over ``size`` x ``size`` RGB images, ten classes, compiled: a
    step that is computation."""
    import keras

    m = keras.Sequential(
        [
            keras.Input((size, size, 3)),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(filters, 3, padding="same", activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )
    m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def gil_generator(trace: str) -> dict:
    """A pure-Python generator (holds the GIL) feeding a small model.

    Made unambiguous so that a loaded machine cannot blur it: each batch costs ~25 ms of pure
    Python against a ~1 ms step (the input wait dominates, whatever else runs), and the
    holder keeps the GIL 50 ms at a time (``sys.setswitchinterval``), so the in-process probe
    is late by ~100 ms while CPU contention from other processes delays the out-of-process
    reference by 5-15 ms. Measured here on 2 cores with other processes taking 75-85% of the
    CPU: reference p95 5-14 ms; probe p95 ~10 ms at the default 5 ms interval and 43-51 ms at
    20 ms, both too close to the rule's 3x margin to tell apart reliably. 60 steps give the
    probe enough bursts for a p95 that is not a single sample."""
    import numpy as np

    from gpudiag import DiagnoseCallback

    sys.setswitchinterval(0.05)
    rng = np.random.default_rng(0)
    x = rng.random((64, 32), dtype=np.float32)
    y = rng.random((64, 1), dtype=np.float32)

    def gen():
        while True:
            acc = 0
            for i in range(400_000):  # pure Python: the GIL is held all along
                acc += i * i
            yield x, y

    m = dense_model(32)
    g = gen()
    cb = DiagnoseCallback(trace_path=trace, dataset=g, quiet=True)
    m.fit(g, steps_per_epoch=60, epochs=1, verbose=0, callbacks=[cb])
    return result_of(cb)


def python_map_dataset(samples: int, features: int, work, *, eager: bool = False):
    """tf.data of random regression pairs in batches of 32 whose sequential map runs ``work``
    on each element in Python: through ``tf.numpy_function``, or ``tf.py_function`` where
    ``eager`` (an EagerTensor in and out, as tf.keras code of Keras 2 writes it)."""
    import numpy as np
    import tensorflow as tf

    call = tf.py_function if eager else tf.numpy_function

    def fn(x, y):
        x = call(work, [x], tf.float32)
        x.set_shape([features])
        return x, y

    rng = np.random.default_rng(0)
    return (
        tf.data.Dataset.from_tensor_slices(
            (
                rng.random((samples, features), dtype=np.float32),
                rng.random((samples, 1), dtype=np.float32),
            )
        )
        .map(fn)
        .batch(32)
    )


def _slow_map_dataset(samples: int, features: int, decode_s: float):
    """tf.data whose sequential map spends ``decode_s`` per element in Python."""

    def slow(a):
        time.sleep(decode_s)
        return a

    return python_map_dataset(samples, features, slow)


def sequential_map(trace: str) -> dict:
    """A slow per-element map with no num_parallel_calls."""
    from gpudiag import DiagnoseCallback

    ds = _slow_map_dataset(960, 32, 0.0015)
    m = dense_model(32)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    return result_of(cb)


def already_on(trace: str) -> dict:
    """Everything the advice could offer is on: parallel map, prefetch, XLA."""
    import keras
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((640, 32), dtype=np.float32)
    y = rng.random((640, 1), dtype=np.float32)
    ds = (
        tf.data.Dataset.from_tensor_slices((x, y))
        .map(lambda a, b: (tf.math.tanh(a) * 2.0, b), num_parallel_calls=tf.data.AUTOTUNE)
        .batch(32)
        .prefetch(tf.data.AUTOTUNE)
    )
    m = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse", jit_compile=True)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    return result_of(cb)


def cached_conv(trace: str) -> dict:
    """Cached, prefetched in-memory data and a convolutional model: compute-bound."""
    return cached_conv_fit(trace, samples=640, batch=32, filters=64, epochs=1)


def cached_conv_fit(trace: str, samples: int, batch: int, filters: int, epochs: int) -> dict:
    """32x32 images cached and prefetched, fed to ``conv_classifier(32, filters)``."""
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((samples, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, samples)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch).cache().prefetch(tf.data.AUTOTUNE)
    m = conv_classifier(32, filters)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=epochs, verbose=0, callbacks=[cb])
    return result_of(cb)


def _mirrored(trace: str, replicas: int) -> dict:
    """A parameter-heavy MLP with a tiny per-replica batch under MirroredStrategy."""
    import keras
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    strategy = _setup_replicas(replicas)
    per_replica = 2
    batch = per_replica * replicas
    rng = np.random.default_rng(0)
    n = batch * 40
    ds = (
        tf.data.Dataset.from_tensor_slices(
            (rng.random((n, 256), dtype=np.float32), rng.random((n, 1), dtype=np.float32))
        )
        .batch(batch, drop_remainder=True)
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )
    with strategy.scope():
        m = keras.Sequential(
            [
                keras.Input((256,)),
                keras.layers.Dense(1024, activation="relu"),
                keras.layers.Dense(1024, activation="relu"),
                keras.layers.Dense(1),
            ]
        )
        m.compile(keras.optimizers.SGD(0.01), "mse")
    cb = DiagnoseCallback(
        trace_path=trace, dataset=ds, quiet=True, profile_dir=os.environ.get("KEEP_PROFILE")
    )
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    out = result_of(cb)
    out["samples_per_step"] = batch
    return out


def mirrored4(trace: str) -> dict:
    return _mirrored(trace, 4)


def mirrored1(trace: str) -> dict:
    return _mirrored(trace, 1)


def ragged_bn(trace: str) -> dict:
    """Global batch 33 on 2 replicas, 100 samples, BatchNormalization, no drop_remainder."""
    import keras
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    strategy = _setup_replicas(2)
    rng = np.random.default_rng(0)
    ds = tf.data.Dataset.from_tensor_slices(
        (rng.random((100, 16), dtype=np.float32), rng.random((100, 1), dtype=np.float32))
    ).batch(33)
    with strategy.scope():
        m = keras.Sequential(
            [
                keras.Input((16,)),
                keras.layers.Dense(32),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(1),
            ]
        )
        m.compile("adam", "mse")
    # no model=: the callback finds the strategy the program created
    cb = DiagnoseCallback(trace_path=trace, dataset=ds)
    error = None
    try:
        m.fit(ds, epochs=2, verbose=0, callbacks=[cb])
    except Exception as e:  # TF may reject the uneven split; the lints came first
        error = f"{type(e).__name__}"
    time.sleep(1.0)  # let the watchdog finish an interrupted run
    out = result_of(cb)
    out["fit_error"] = error
    out["lint_ids"] = [f.id for f in cb.lint_findings]
    return out


def crash(trace: str) -> dict:
    """An exception inside fit: every gpudiag thread and process must stop."""
    import keras

    from gpudiag import DiagnoseCallback

    class Boom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 8:
                raise RuntimeError("boom")

    import numpy as np

    rng = np.random.default_rng(0)
    m = dense_model(8)
    cb = DiagnoseCallback(trace_path=trace, quiet=True)
    raised = False
    try:
        m.fit(
            rng.random((640, 8)),
            rng.random((640, 1)),
            batch_size=16,
            epochs=1,
            verbose=0,
            callbacks=[cb, Boom()],
        )
    except RuntimeError:
        raised = True
    deadline = time.time() + 5
    while time.time() < deadline and _gpudiag_threads():
        time.sleep(0.1)
    out = result_of(cb)
    out["raised"] = raised
    out["threads_left"] = _gpudiag_threads()
    gil = cb._samplers.gil if cb._samplers is not None else None
    pid = gil.reference_pid if gil is not None else None
    out["reference_alive"] = bool(pid) and _alive(pid)
    return out


def long_run(trace: str) -> dict:
    """Trains for a long time; the test kills it with SIGKILL part-way."""
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    m = dense_model(8)
    cb = DiagnoseCallback(trace_path=trace, quiet=True, profile_start=3, profile_steps=3)
    print("started", flush=True)
    m.fit(
        rng.random((64_000, 8)),
        rng.random((64_000, 1)),
        batch_size=8,
        epochs=50,
        verbose=0,
        callbacks=[cb],
    )
    return result_of(cb)


def follow_run(trace: str) -> dict:
    """About 10 s of a starved run, for a live follower to watch."""
    from gpudiag import DiagnoseCallback

    ds = _slow_map_dataset(32 * 300, 16, 0.001)
    m = dense_model(16)
    cb = DiagnoseCallback(trace_path=trace, quiet=True, profile_start=3, profile_steps=4)
    print("started", flush=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    return result_of(cb)


def other_backend(trace: str) -> dict:
    """The Keras backend named by KERAS_BACKEND (jax, torch) with numpy data on CPU."""
    import keras
    import numpy as np

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    m = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    m.compile("adam", "mse")
    cb = DiagnoseCallback(trace_path=trace, quiet=True)
    m.fit(
        rng.random((4096, 64)),
        rng.random((4096, 1)),
        batch_size=64,
        epochs=1,
        verbose=0,
        callbacks=[cb],
    )
    out = result_of(cb)
    out["backend"] = keras.backend.backend()
    return out


def _gpudiag_threads() -> list[str]:
    return [
        t.name
        for t in threading.enumerate()
        if t.is_alive()
        and ("gpudiag" in t.name.lower() or "sampler" in t.name.lower() or "gil" in t.name.lower())
    ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return True


def result_of(cb) -> dict:
    """What every scenario answers: the diagnosis, the trace and gpudiag's own overhead."""
    d = cb.diagnosis
    return {
        "diagnosis": d.to_dict() if d is not None else None,
        "trace_path": cb.trace_path,
        "overhead": cb.overhead,
    }


SCENARIOS = {
    f.__name__: f
    for f in (
        gil_generator,
        sequential_map,
        cached_conv,
        already_on,
        mirrored4,
        mirrored1,
        ragged_bn,
        crash,
        long_run,
        follow_run,
        other_backend,
    )
}

if __name__ == "__main__":
    answer_timed(SCENARIOS[sys.argv[1]], sys.argv[2])
