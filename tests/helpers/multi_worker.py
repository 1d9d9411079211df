"""One worker of a real two-worker MultiWorkerMirroredStrategy run on localhost (CPU).

    TF_CONFIG=... python -m tests.helpers.multi_worker TRACE_DIR
        --sleep-ms 80 --sleeper 1 --order after

Each worker trains a tiny model with DiagnoseCallback(trace_path=TRACE_DIR/run-{rank}.json).
Worker ``--sleeper`` sleeps in a callback every step (placed before or after
DiagnoseCallback), the way a slow logging or checkpoint callback would.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def keras_multi_worker_workaround(model, batch) -> None:
    """What Keras 3.15 needs to run ``fit`` under MultiWorkerMirroredStrategy
    (keras-team/keras#20585); docs/multi-worker.md explains both lines."""
    from keras.src.backend.tensorflow import trainer

    # 1. Keras reduces every logged metric with axis=0 across workers, which fails on
    #    scalars: reduce them per worker instead (gradients are still all-reduced).
    trainer._collective_all_reduce_multi_worker = lambda strategy: False
    # 2. Keras builds the model by all-reducing a distributed batch, which the collective
    #    strategy rejects: build it from one local batch, then skip that step.
    model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = lambda *args, **kwargs: None


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("trace_dir")
    p.add_argument("--sleep-ms", type=float, default=0.0)
    p.add_argument("--sleeper", type=int, default=1, help="rank that sleeps; -1: every rank")
    p.add_argument("--order", choices=("before", "after"), default="after")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--profile", choices=("auto", "on"), default="auto")
    args = p.parse_args()

    import keras
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    rank = strategy.cluster_resolver.task_id

    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(rank)
    x = rng.normal(size=(64 * 16, 32)).astype("float32")
    y = rng.normal(size=(64 * 16, 1)).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64).repeat()
    with strategy.scope():
        model = keras.Sequential(
            [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
        )
        model.compile(optimizer="sgd", loss="mse")
        keras_multi_worker_workaround(model, next(iter(ds)))

    class Sleeper(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if args.sleeper in (rank, -1) and args.sleep_ms:
                time.sleep(args.sleep_ms / 1000.0)

    cb = DiagnoseCallback(
        trace_path=os.path.join(args.trace_dir, "run-{rank}.json"),
        profile=True if args.profile == "on" else None,
        gpu=False,
    )
    callbacks = [cb, Sleeper()] if args.order == "after" else [Sleeper(), cb]
    model.fit(ds, epochs=1, steps_per_epoch=args.steps, verbose=2, callbacks=callbacks)
    print(f"TRACE {cb.trace_path}", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # collective threads can hang interpreter exit


if __name__ == "__main__":
    raise SystemExit(main())
