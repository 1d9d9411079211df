"""DiagnoseCallback must not change what it measures on a GPU: Keras's asynchronous batch
dispatch stays on with it in ``fit``.

Keras 3 (``CallbackList._configure_async_dispatch``) runs every ``on_train_batch_end`` on a
worker thread, where the logs are turned into Python numbers, unless some callback in the
list overrides a batch-end hook without declaring ``async_safe``; then the conversion happens
on the training thread every batch, which waits for the device each step and stalls its
pipeline (invisible on a CPU, where the step is synchronous anyway). These tests watch, in
real fits, what the CallbackList decides and on which thread an async-safe probe's
batch-end hook runs. A control callback that records steps from ``on_train_batch_end``, as
DiagnoseCallback once did, turns the dispatch off: the same checks catch it.

Keras dispatches async only on backends it declares thread-safe (JAX, torch); on TensorFlow
(``IS_THREAD_SAFE = False``, tensorflow/tensorflow#78338) it converts the logs on the
training thread whatever the callbacks. The environment here has TensorFlow only, so the
fits below declare the backend thread-safe, as JAX and torch are: Keras then takes its own
decision on our callback list.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytestmark = [pytest.mark.train, pytest.mark.timeout(240)]
keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

from gpudiag import DiagnoseCallback  # noqa: E402
from gpudiag.trace.load import load_file  # noqa: E402

BATCH = 8
BATCHES = 10  # per epoch


class Probe(keras.callbacks.Callback):
    """Says on which threads Keras ran batch-end hooks and what the logs held there."""

    async_safe = True

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def on_train_batch_end(self, batch, logs=None):
        self.threads.add(threading.get_ident())


class BatchEndRecorder(DiagnoseCallback):
    """The control: per-step work in on_train_batch_end, not declared async-safe."""

    def on_train_batch_end(self, batch, logs=None):
        pass


def _fit(callbacks: list, monkeypatch, steps_per_execution: int = 1, epochs: int = 2) -> list:
    """Train a tiny model; returns the async decision of each CallbackList that fit built."""
    decisions: list[bool] = []
    real = keras.callbacks.CallbackList._configure_async_dispatch

    def watch(self, cbs):
        real(self, cbs)
        decisions.append(self._async_train)

    monkeypatch.setattr(keras.callbacks.CallbackList, "_configure_async_dispatch", watch)
    monkeypatch.setattr(keras.src.backend, "IS_THREAD_SAFE", True)  # as on JAX and torch
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH * BATCHES, 8)).astype("float32")
    y = rng.normal(size=(BATCH * BATCHES, 1)).astype("float32")
    m = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile(optimizer="sgd", loss="mse", steps_per_execution=steps_per_execution)
    m.fit(
        x,
        y,
        batch_size=BATCH,
        epochs=epochs,
        verbose=0,
        validation_data=(x[:16], y[:16]),
        callbacks=callbacks,
    )
    return decisions


def test_fit_with_the_callback_keeps_async_dispatch(tmp_path, monkeypatch):
    probe = Probe()
    cb = DiagnoseCallback(
        trace_path=str(tmp_path / "t.json"), quiet=True, profile_start=3, profile_steps=2
    )
    decisions = _fit([cb, probe], monkeypatch)
    assert decisions and decisions[0] is True  # the fit's CallbackList dispatches async
    assert probe.threads and threading.get_ident() not in probe.threads
    # and the recording is whole: every step, the profiler window's steps among them
    assert cb.diagnosis.steps["count"] == 2 * BATCHES
    assert cb.windows_taken == [3, 15]  # one window in each early epoch (mid-epoch later)
    assert cb.diagnosis.steps["analyzed"] == 4


def test_a_batch_end_recorder_turns_async_dispatch_off(tmp_path, monkeypatch):
    probe = Probe()
    cb = BatchEndRecorder(trace_path=str(tmp_path / "t.json"), quiet=True, profile=False)
    decisions = _fit([cb, probe], monkeypatch)
    assert decisions and decisions[0] is False
    assert probe.threads == {threading.get_ident()}  # logs converted on the training thread


def test_steps_per_execution_batches_are_counted_to_the_epochs_end(tmp_path, monkeypatch):
    # 10 batches in calls of 3: 3 + 3 + 3 + 1 per epoch; a step is closed when the next one
    # begins, the last of each epoch when the epoch (or its validation) starts
    cb = DiagnoseCallback(trace_path=str(tmp_path / "t.json"), quiet=True, profile=False)
    _fit([cb], monkeypatch, steps_per_execution=3)
    steps = load_file(cb.trace_path)[0].steps
    assert len(steps) == 8
    assert steps.batches.tolist() == [3, 3, 3, 1] * 2
    assert cb.diagnosis.steps["count"] == 2 * BATCHES


def test_only_profiled_steps_wait_for_the_device(tmp_path):
    """Where a backend dispatches steps asynchronously (JAX, torch on a GPU), a profiled
    step's train-function call waits for its device work, so the step's markers hold it;
    every other step keeps the pipeline."""
    from types import SimpleNamespace

    from gpudiag.record.backends import ProfilerSession, RecordBackend
    from gpudiag.record.profiler import WindowSchedule
    from gpudiag.record.samplers import SamplerSet
    from gpudiag.record.session_start import start_session
    from gpudiag.trace.model.timeline import Metadata

    waited: list[int] = []

    class Stopped(ProfilerSession):
        def stop(self) -> None:
            pass

    class AsyncBackend(RecordBackend):
        def start_profiler(self, logdir: str) -> ProfilerSession:
            return Stopped()

        def wait_for(self, result) -> None:
            waited.append(result)

    model = SimpleNamespace(train_function=lambda step: step)
    session = start_session(
        str(tmp_path / "t.json"),
        Metadata(producer="gpudiag"),
        AsyncBackend(),
        lambda writer: SamplerSet(),
        model=model,
        schedule=WindowSchedule(2, 3),
        profile_steps=3,
    )
    for step in range(8):
        session.batch_begin(step)
        model.train_function(step)
    session.finish(abnormal=False)
    session.teardown()
    assert session.windows_taken == [2]
    assert waited == [2, 3, 4]


def test_steps_end_when_the_device_has_done_them(tmp_path):
    """With the training thread running ahead of an asynchronous device, each step is
    recorded as ending when its device work was done (a helper thread waits), never by
    making the training thread wait."""
    import time
    from types import SimpleNamespace

    from gpudiag.record.backends import RecordBackend
    from gpudiag.record.samplers import SamplerSet
    from gpudiag.record.session_start import start_session
    from gpudiag.trace.model.timeline import Metadata

    class TenMsDevice(RecordBackend):
        """Each step's device work ends 10 ms after the previous one's."""

        def completion(self, result):
            return lambda: time.sleep(0.010)

    model = SimpleNamespace(train_function=lambda step: step)
    session = start_session(
        str(tmp_path / "t.json"),
        Metadata(producer="gpudiag"),
        TenMsDevice(),
        lambda writer: SamplerSet(),
        model=model,
    )
    t0 = time.perf_counter()
    for step in range(20):
        session.batch_begin(step)
        model.train_function(step)
    host_s = time.perf_counter() - t0
    steps = session.finish(abnormal=False).steps
    session.teardown()
    assert host_s < 0.1  # the training thread dispatched all 20 without waiting
    assert steps.index.tolist() == list(range(20))
    assert np.median(steps.end - steps.start) >= 9_000.0  # µs: the device's 10 ms
    assert np.all(steps.start[1:] >= steps.end[:-1] - 1.0)  # contiguous, in order
