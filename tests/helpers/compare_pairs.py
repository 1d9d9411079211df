"""Real before/after pairs for ``gpudiag compare``, each recorded by DiagnoseCallback.

    python -m tests.helpers.compare_pairs OUT_DIR   -> prints one RESULT JSON line

- batch: the per-replica batch grown 4× (32 -> 128), the change gpudiag's small-batch remedy
  asks for: each step is longer, each sample cheaper.
- noisy: the same configuration twice, NEW trained while other processes spin on every core.
- strategy: MirroredStrategy over 2 logical CPUs dropped for the default single device, the
  global batch unchanged.
Each run's time per sample is also taken from its own wall clock (epochs after the first), as
the reference compare's figure is checked against.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from tests.helpers.script_io import answer

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

SAMPLES = 128 * 48
EPOCHS = 3


# Spinners started through a shell that exits at once: they are no descendants of the
# training process, so gpudiag counts them as other processes (as a neighbour's job is).
SPIN = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass"


def _neighbours(seconds: float) -> list[int]:
    """Start one spinning process per core outside this process tree; their pids."""
    out = subprocess.run(
        [
            "sh",
            "-c",
            f"for i in $(seq {os.cpu_count() or 2}); do "
            f"{sys.executable} -c '{SPIN.format(s=seconds)}' >/dev/null 2>&1 & echo $!; done",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return [int(p) for p in out.stdout.split()]


def _data(batch: int):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.random((SAMPLES, 64), dtype=np.float32)
    y = rng.random((SAMPLES, 1), dtype=np.float32)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch).prefetch(2)


def _model():
    import keras

    m = keras.Sequential(
        [keras.Input((64,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse")
    return m


class _EpochClock:
    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []


def _fit(out: str, name: str, batch: int, strategy=None) -> dict:
    import keras

    from gpudiag import DiagnoseCallback

    ds = _data(batch)
    clock = _EpochClock()
    timer = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda e, logs: clock.starts.append(time.perf_counter()),
        on_epoch_end=lambda e, logs: clock.ends.append(time.perf_counter()),
    )
    cb = DiagnoseCallback(trace_path=os.path.join(out, f"{name}.json"), dataset=ds, report=False)
    if strategy is not None:
        with strategy.scope():
            model = _model()
        ds = strategy.experimental_distribute_dataset(ds)
    else:
        model = _model()
    model.fit(ds, epochs=EPOCHS, verbose=0, callbacks=[timer, cb])
    seconds = sum(e - s for s, e in zip(clock.starts[1:], clock.ends[1:], strict=True))
    return {
        "trace": cb.trace_path,
        "us_per_sample": 1e6 * seconds / (SAMPLES * (EPOCHS - 1)),
    }


def main(out: str) -> dict:
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    result: dict = {}
    result["batch"] = [_fit(out, "batch32", 32), _fit(out, "batch128", 128)]
    quiet = _fit(out, "quiet", 64)
    pids = _neighbours(120)
    try:
        noisy = _fit(out, "noisy", 64)
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    result["noisy"] = [quiet, noisy]
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    result["strategy"] = [_fit(out, "mirrored", 64, mirrored), _fit(out, "single", 64)]
    return result


if __name__ == "__main__":
    answer(main(sys.argv[1]))
