"""Profiler windows open in each early epoch (docs/callback.md), and a planned window that
does not open is named, with its reason, in the trace and the report.

The session counts one step per train-function call, Keras's ``steps`` counts batches: with
``steps_per_execution`` > 1 an epoch's mid-point in batches was never reached in calls, so
every window after the first was skipped without a word.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from gpudiag.analyze import diagnose
from gpudiag.record.backends import ProfilerSession, RecordBackend
from gpudiag.record.profiler import WindowSchedule, plan_windows
from gpudiag.record.samplers import SamplerSet
from gpudiag.record.session_start import start_session
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import Metadata


def test_windows_are_planned_in_calls_when_keras_runs_several_batches_per_call():
    # 48 batches in calls of 4: 12 calls per epoch
    schedule, in_epoch, note = plan_windows(True, None, 5, 8, 48, steps_per_execution=4)
    assert schedule is not None and note is None
    assert in_epoch < 12 and schedule.first_step < 12
    # one batch per call: mid-epoch, as before
    schedule, in_epoch, _ = plan_windows(True, None, 5, 8, 48)
    assert in_epoch == 24 and schedule is not None and schedule.first_step == 5


def test_an_epoch_shorter_than_the_default_start_still_gets_its_window():
    _, in_epoch, _ = plan_windows(True, None, 5, 8, 4)
    assert in_epoch < 4


@pytest.mark.train
@pytest.mark.timeout(240)
def test_a_fit_with_steps_per_execution_gets_a_window_in_each_early_epoch(tmp_path):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    from gpudiag import DiagnoseCallback

    rng = np.random.default_rng(0)
    x = rng.random((48 * 32, 32), dtype=np.float32)
    y = rng.random((48 * 32, 1), dtype=np.float32)
    m = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse", steps_per_execution=4)
    cb = DiagnoseCallback(trace_path=str(tmp_path / "t.json"), quiet=True)
    m.fit(x, y, batch_size=32, epochs=5, verbose=0, callbacks=[cb])
    assert len(cb.windows_taken) == 4
    epochs = [w["epoch"] for w in cb.diagnosis.to_dict()["run"]["windows"]]
    assert epochs == [1, 2, 3, 4]
    assert not [lim for lim in cb.diagnosis.limitations if "skipped" in lim]


class _Stopped(ProfilerSession):
    """A profiler session whose stop costs ``cost_s`` of the training thread."""

    def __init__(self, cost_s: float) -> None:
        self.cost_s = cost_s

    def stop(self) -> None:
        time.sleep(self.cost_s)


class _SlowStopBackend(RecordBackend):
    def start_profiler(self, logdir: str) -> ProfilerSession:
        return _Stopped(0.05)


def _run(tmp_path, schedule: WindowSchedule, epochs: int, steps: int, in_epoch: int):
    session = start_session(
        str(tmp_path / "t.json"),
        Metadata(producer="gpudiag"),
        _SlowStopBackend(),
        lambda writer: SamplerSet(),
        schedule=schedule,
        profile_steps=schedule.steps,
        in_epoch_start=in_epoch,
    )
    step = 0
    for epoch in range(epochs):
        session.epoch_begin(epoch)
        for batch in range(steps):
            session.batch_begin(batch)
            step += 1
            time.sleep(0.001)
        session.epoch_end(epoch)
        deadline = time.monotonic() + 10  # the decode thread adds the window's cost
        while session.windows and schedule.cost_s == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    session.finish(abnormal=False)
    session.teardown()
    return session, load_file(session.writer.path)[0]


def test_a_window_skipped_for_the_budget_is_named_in_trace_and_report(tmp_path):
    schedule = WindowSchedule(2, 2, budget_s=0.01, budget_share=0.0)
    session, tl = _run(tmp_path, schedule, epochs=4, steps=10, in_epoch=4)
    # epoch 2's window opens whatever the budget (the first outside epoch 1); then none
    assert session.windows_taken == [2, 14]
    skipped = [lim for lim in tl.meta.limitations if "skipped" in lim]
    assert skipped == [
        f"profiler window planned in epoch {n} skipped: the profiling budget of 0.01 s + 0% "
        f"of elapsed time was spent ({schedule.cost_s:.2f} s of 0.01 s)"
        for n in (3, 4)
    ]
    assert set(skipped) <= set(diagnose([tl]).limitations)  # "Not measured / caveats"


def test_a_spent_budget_never_leaves_a_multi_epoch_run_with_first_epoch_windows_only():
    """The first window (epoch 1: a cache being filled) cost more than the whole budget:
    epoch 2 still gets one, and only that one is exempt."""
    schedule = WindowSchedule(5, 5)
    schedule.open(5, 0, 1.0)
    schedule.cost_s = 1.38  # of 1.0 s + 1% of elapsed: spent
    assert schedule.due(20, 1, 5, 5, now=3.0, start=0.0)
    schedule.open(20, 1, 3.0)
    assert not schedule.due(40, 2, 5, 5, now=5.0, start=0.0)
    assert "profiling budget" in (schedule.missed(2, 20, 5) or "")


def test_a_window_the_epoch_was_too_short_for_is_named(tmp_path):
    # the epoch length unknown beforehand (a generator): its window would open after step 5
    schedule = WindowSchedule(1, 2)
    session, tl = _run(tmp_path, schedule, epochs=2, steps=4, in_epoch=5)
    assert session.windows_taken == [1]
    why = "the epoch had 4 steps; its window opens after 5"
    assert f"profiler window planned in epoch 2 skipped: {why}" in tl.meta.limitations


def test_a_window_blocked_at_its_step_opens_later_in_the_same_epoch():
    # the budget (1 s + 1% of elapsed) frees up as the epoch goes on: not a skip
    schedule = WindowSchedule(0, 2)
    schedule.open(0, 0, 0.0)
    schedule.open(10, 1, 1.0)  # epoch 2 has its window: epoch 3's is budgeted
    schedule.cost_s = 2.0
    assert not schedule.due(20, 2, 5, 5, now=50.0, start=0.0)  # 2.0 s > 1.5 s
    assert schedule.due(26, 2, 11, 5, now=150.0, start=0.0)  # 2.0 s <= 2.5 s
    schedule.open(26, 2, 150.0)
    assert schedule.missed(2, 20, 5) is None
