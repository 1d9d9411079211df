"""The same TensorFlow training runs under Keras 3 and Keras 2, one per process.

    KERAS_GENERATION=2 python -m tests.helpers.keras2_scenarios NAME TRACE_PATH   -> one JSON line

Each model is written against ``tf.keras`` only: with ``KERAS_GENERATION=2`` the process sets
``TF_USE_LEGACY_KERAS=1`` before importing TensorFlow, so ``tf.keras`` is Keras 2 (tf_keras
on TensorFlow 2.16+; on TensorFlow 2.15 ``tf.keras`` is the keras 2.15 package anyway, and
the variable is set only where tf_keras is installed); otherwise it is Keras 3. One process
per run: the choice is made at import, as are the logical CPUs of a MirroredStrategy.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time

from tests.helpers.script_io import answer_timed

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
if os.environ.get("KERAS_GENERATION") == "2" and importlib.util.find_spec("tf_keras"):
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # TensorFlow 2.15 without tf_keras: Keras 2 anyway


def _python_map_dataset(samples: int, features: int, loops: int):
    """tf.data whose sequential map runs ``loops`` iterations of pure Python per element
    in a py_function (it holds the GIL): the step waits for its input."""
    from tests.helpers.scenarios import python_map_dataset

    def work(a):
        acc = 0
        for i in range(loops):
            acc += i * i
        return a

    return python_map_dataset(samples, features, work, eager=True)


def _mlp(features: int, width: int = 64, batchnorm: bool = False, optimizer=None, **compile_args):
    import tensorflow as tf

    layers = [tf.keras.layers.Dense(width, activation="relu", input_shape=(features,))]
    if batchnorm:
        layers.append(tf.keras.layers.BatchNormalization())
    m = tf.keras.Sequential([*layers, tf.keras.layers.Dense(1)])
    m.compile(optimizer or tf.keras.optimizers.Adam(0.01), "mse", **compile_args)
    return m


def python_map(trace: str) -> dict:
    """A Python map feeding a small MLP: 30 batches of 32 elements, ~0.3 ms of Python each."""
    from gpudiag import DiagnoseCallback

    ds = _python_map_dataset(960, 32, 6_000)
    m = _mlp(32)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    return _result(cb, m)


def steps_per_execution(trace: str) -> dict:
    """``compile(steps_per_execution=4)`` over 3 epochs of 48 batches: the profiler windows
    (in the first epochs) align on Keras's own step numbers, 0, 4, 8, ..."""
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    ds = (
        tf.data.Dataset.from_tensor_slices(
            (rng.random((1536, 16), dtype=np.float32), rng.random((1536, 1), dtype=np.float32))
        )
        .batch(32)
        .prefetch(tf.data.AUTOTUNE)
    )
    m = _mlp(16, steps_per_execution=4)
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=3, verbose=0, callbacks=[cb])
    out = _result(cb, m)
    out["windows_taken"] = cb.windows_taken
    return out


def uneven_mirrored(trace: str) -> dict:
    """Global batch 33 over 100 samples on 2 replicas (MirroredStrategy over 2 logical CPUs)
    with BatchNormalization and the last batch (1 sample) kept."""
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    rng = np.random.default_rng(0)
    ds = tf.data.Dataset.from_tensor_slices(
        (rng.random((100, 16), dtype=np.float32), rng.random((100, 1), dtype=np.float32))
    ).batch(33)
    with strategy.scope():
        m = _mlp(16, width=32, batchnorm=True)
    # no model=: the callback finds the strategy the program created
    cb = DiagnoseCallback(trace_path=trace, dataset=ds)
    error = None
    print("calling fit", file=sys.stderr, flush=True)  # what was printed before is pre-fit
    try:
        m.fit(ds, epochs=2, verbose=0, callbacks=[cb])
    except Exception as e:  # TensorFlow may reject the uneven split; the lints came first
        error = type(e).__name__
    time.sleep(1.0)  # let the watchdog finish an interrupted run
    out = _result(cb, m)
    out["fit_error"] = error
    out["lint_ids"] = [f.id for f in cb.lint_findings]
    return out


def mirrored4(trace: str) -> dict:
    """A parameter-heavy MLP with 2 samples per replica on 4 replicas (MirroredStrategy over
    4 logical CPUs): the all-reduce of its gradients is most of each step."""
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 4)
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(4)])
    rng = np.random.default_rng(0)
    ds = (
        tf.data.Dataset.from_tensor_slices(
            (rng.random((320, 256), dtype=np.float32), rng.random((320, 1), dtype=np.float32))
        )
        .batch(8, drop_remainder=True)
        .cache()
        .prefetch(tf.data.AUTOTUNE)
    )
    with strategy.scope():
        m = tf.keras.Sequential(
            [
                tf.keras.layers.Dense(1024, activation="relu", input_shape=(256,)),
                tf.keras.layers.Dense(1024, activation="relu"),
                tf.keras.layers.Dense(1),
            ]
        )
        m.compile(tf.keras.optimizers.SGD(0.01), "mse")
    cb = DiagnoseCallback(trace_path=trace, dataset=ds, quiet=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb])
    return _result(cb, m)


def same_loss(trace: str) -> dict:
    """The same seeded model and data fit twice, without and with the callback (a profiler
    window included): the losses of every epoch, both ways."""
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    tf.config.experimental.enable_op_determinism()
    rng = np.random.default_rng(0)
    x = rng.random((640, 16), dtype=np.float32)
    y = (x.sum(axis=1, keepdims=True) > 8).astype(np.float32)
    losses = []
    for callbacks in ([], [DiagnoseCallback(trace_path=trace, quiet=True)]):
        tf.keras.utils.set_random_seed(0)
        m = _mlp(16)
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
        history = m.fit(ds, epochs=3, verbose=0, callbacks=callbacks)
        losses.append([float(v) for v in history.history["loss"]])
    out = _result(callbacks[0], m)
    out["losses"] = losses
    return out


def graph_mode(trace: str) -> dict:
    """Keras 2 with eager execution disabled (TF1 graph mode): not recorded, said once, and
    the fit trains as without the callback."""
    import numpy as np
    import tensorflow as tf

    from gpudiag import DiagnoseCallback

    tf.compat.v1.disable_eager_execution()
    rng = np.random.default_rng(0)
    m = _mlp(8, optimizer="adam")  # Keras 2 picks its legacy optimizer in graph mode
    cb = DiagnoseCallback(trace_path=trace)
    history = m.fit(
        rng.random((256, 8)),
        rng.random((256, 1)),
        batch_size=32,
        epochs=2,
        verbose=0,
        callbacks=[cb],
    )
    out = _result(cb, m)
    out["losses"] = [float(v) for v in history.history["loss"]]
    out["trace_exists"] = os.path.exists(trace)
    return out


def _result(cb, model) -> dict:
    import tensorflow as tf

    from gpudiag.record.generation import generation_of
    from tests.helpers.scenarios import result_of

    gen = generation_of(model)
    return {
        "generation": gen.name,
        "keras": gen.header(),
        "tf": tf.__version__,
        **result_of(cb),
    }


SCENARIOS = {
    f.__name__: f
    for f in (python_map, steps_per_execution, uneven_mirrored, mirrored4, same_loss, graph_mode)
}

if __name__ == "__main__":
    answer_timed(SCENARIOS[sys.argv[1]], sys.argv[2])
