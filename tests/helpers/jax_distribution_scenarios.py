"""Keras 3 on JAX across host devices, written the way Keras's multi-device guide writes it:
``keras.distribution.set_distribution(DataParallel(devices=jax.devices()))`` (or a
ModelParallel with a LayoutMap), ``fit`` on NumPy arrays, ``DiagnoseCallback()``.

    python -m tests.helpers.jax_distribution_scenarios NAME TRACE_PATH DEVICES [ARG]
        -> one JSON line

One process per run: ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` must be set
before JAX is imported, and Keras picks its backend at import.
"""

from __future__ import annotations

import os
import sys
import time

from tests.helpers.script_io import answer_timed

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ["KERAS_BACKEND"] = "jax"


def _devices(n: int) -> None:
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"


def _data_parallel() -> None:
    import jax
    import keras

    if len(jax.devices()) > 1:
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))


def _arrays(samples: int, features: int):
    import numpy as np

    rng = np.random.default_rng(0)
    return (
        rng.random((samples, features), dtype=np.float32),
        rng.random((samples, 1), dtype=np.float32),
    )


def _mlp(features: int, width: int, batchnorm: bool = False, depth: int = 1):
    import keras

    layers = [keras.Input((features,))]
    for _ in range(depth):
        layers.append(keras.layers.Dense(width, activation="relu"))
    if batchnorm:
        layers.append(keras.layers.BatchNormalization())
    m = keras.Sequential([*layers, keras.layers.Dense(1)])
    m.compile(keras.optimizers.SGD(0.01), "mse")
    return m


def _fit(m, x, y, batch: int, trace: str, epochs: int = 1, **cb_args) -> dict:
    """fit with the callback; a failure inside fit is recorded with the lints judged by
    then (they must have been, before JAX failed)."""
    from gpudiag import DiagnoseCallback

    cb = DiagnoseCallback(trace_path=trace, **cb_args)
    out: dict = {"fit_error": None}
    try:
        m.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=[cb])
    except Exception as e:
        out["fit_error"] = type(e).__name__
        out["lints_at_error"] = [f.id for f in cb.lint_findings]
        time.sleep(1.0)  # the watchdog finishes the interrupted run
    d = cb.diagnosis
    out.update(
        diagnosis=d.to_dict() if d is not None else None,
        trace_path=cb.trace_path,
        lint_ids=[f.id for f in cb.lint_findings],
        config=cb.config.to_dict(),
        params=int(m.count_params()),
    )
    return out


def batch(trace: str, devices: int, size: str) -> dict:
    """A global batch of ``size`` over the devices (640 samples, a 17-feature MLP)."""
    _devices(devices)
    _data_parallel()
    x, y = _arrays(640, 17)
    return _fit(_mlp(17, 32), x, y, int(size), trace)


def small_model(trace: str, devices: int, width: str = "32") -> dict:
    """An MLP on 17 features (width 32: 609 parameters) over the devices at batch 32:
    Keras slices the arrays each step."""
    _devices(devices)
    _data_parallel()
    x, y = _arrays(640, 17)
    w = int(width)
    return _fit(_mlp(17, w, depth=1 if w < 512 else 2), x, y, 32, trace)


def ragged(trace: str, devices: int, samples: str) -> dict:
    """``samples`` rows at batch 32 with BatchNormalization: 2000 leave a last batch of 16."""
    _devices(devices)
    _data_parallel()
    x, y = _arrays(int(samples), 16)
    return _fit(_mlp(16, 32, batchnorm=True), x, y, 32, trace)


def ragged_generator(trace: str, devices: int, last: str) -> dict:
    """A Python generator of 20 batches of 32 and a last one of ``last`` rows: the sample
    count is unknown before fit, the short batch is seen when the step compiles for it."""
    _devices(devices)
    _data_parallel()
    from gpudiag import DiagnoseCallback

    x, y = _arrays(20 * 32 + int(last), 16)

    def batches():
        for i in range(0, len(x), 32):
            yield x[i : i + 32], y[i : i + 32]

    m = _mlp(16, 32, batchnorm=True)
    cb = DiagnoseCallback(trace_path=trace)
    m.fit(batches(), epochs=1, verbose=0, callbacks=[cb])
    d = cb.diagnosis
    return {
        "diagnosis": d.to_dict() if d is not None else None,
        "trace_path": cb.trace_path,
        "lint_ids": [f.id for f in cb.lint_findings],
        "config": cb.config.to_dict(),
    }


def sync(trace: str, devices: int) -> dict:
    """A 1.3M-parameter MLP at 2 samples per device: each step all-reduces 5 MB of
    gradients for almost no computation (tests/helpers/scenarios.py mirrored4, on JAX)."""
    _devices(devices)
    _data_parallel()
    per_device = 2
    x, y = _arrays(per_device * devices * 40, 256)
    out = _fit(
        _mlp(256, 1024, depth=2), x, y, per_device * devices, trace, quiet=True, profile_start=3
    )
    out["samples_per_step"] = per_device * devices
    return out


def model_parallel(trace: str, devices: int, size: str) -> dict:
    """ModelParallel on a (devices/2, 2) mesh of ("batch", "model"), the first Dense kernel split
    over "model": the batch splits devices/2 ways."""
    _devices(devices)
    import jax
    import keras

    mesh = keras.distribution.DeviceMesh((devices // 2, 2), ["batch", "model"], jax.devices())
    layout = keras.distribution.LayoutMap(mesh)
    layout[".*/dense/kernel"] = (None, "model")  # fullmatch of the first kernel's path
    keras.distribution.set_distribution(
        keras.distribution.ModelParallel(layout_map=layout, batch_dim_name="batch")
    )
    x, y = _arrays(640, 16)
    return _fit(_mlp(16, 64), x, y, int(size), trace)


SCENARIOS = {
    f.__name__: f for f in (batch, small_model, ragged, ragged_generator, sync, model_parallel)
}

if __name__ == "__main__":
    name, trace_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    answer_timed(SCENARIOS[name], trace_path, n, *sys.argv[4:])
