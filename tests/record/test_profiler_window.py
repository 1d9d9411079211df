"""The profiler window moves a profile onto the callback's clock by its step markers.

A backend adapter that records, in a clock of its own (offset by a known amount), when each
step marker was entered, and whose profiler takes 30 ms to start, as real ones take
milliseconds: the window must recover the offset from when the markers were entered, not
from when the steps began (the first step begins before the profiler starts).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from gpudiag.record.backends import ProfilerSession, RecordBackend
from gpudiag.record.profiler import ProfilerWindow
from gpudiag.trace.model.timeline import Kind, Timeline

OFFSET_US = 5e9  # the profiler's clock: 5000 s behind the wall clock
START_S = 0.03


class _Session(ProfilerSession):
    def stop(self) -> None:
        pass


class _Marker:
    def __init__(self, backend: OffsetClockBackend, step: int) -> None:
        self.backend, self.step = backend, step

    def __enter__(self) -> _Marker:
        self.t0 = time.time() * 1e6 - OFFSET_US
        return self

    def __exit__(self, *exc: object) -> None:
        self.backend.marks.append((self.step, self.t0, time.time() * 1e6 - OFFSET_US))


class OffsetClockBackend(RecordBackend):
    name = "offset-clock"

    def __init__(self) -> None:
        self.marks: list[tuple[int, float, float]] = []

    def start_profiler(self, logdir: str) -> ProfilerSession:
        time.sleep(START_S)
        return _Session()

    def step_marker(self, step: int) -> _Marker:
        return _Marker(self, step)

    def decode(self, logdir: str) -> tuple[Timeline | None, str | None]:
        tl = Timeline()
        idx, starts, ends = (np.array(v) for v in zip(*self.marks, strict=True))
        tl.add_steps(idx, starts, ends)
        tl.add_activity("CPU", Kind.COMPUTE, starts + 10.0, ends - 10.0)
        return tl.freeze(), None


@pytest.mark.parametrize("steps", [2, 5])
def test_profile_is_aligned_on_when_the_markers_were_entered(steps):
    backend = OffsetClockBackend()
    win = ProfilerWindow(backend, first_step=3, steps=steps)
    step = 3
    while not win.done:
        begin = time.time() * 1e6
        win.on_step_begin(step)
        time.sleep(0.002)  # the step
        win.on_step_end(step, begin, time.time() * 1e6)
        step += 1
    assert win.start_cost_s >= START_S
    tl = win.collect()
    assert tl is not None, win.problem
    # shifted onto the wall clock: each step's start is its marker's entry, within 1 ms
    for (i, t0, _), start in zip(backend.marks, tl.steps.start, strict=True):
        assert abs(start - (t0 + OFFSET_US)) < 1000.0, (i, start - (t0 + OFFSET_US))
