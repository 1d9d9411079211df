"""The fit's own spans in a recording: the fit, its epochs and evaluations, gpudiag's time in
those hooks, the other callbacks' per-batch time, and the pause between two fits of a series
(``record/fit_series.py``). A part of ``RecordingSession`` (``record/session.py``), which
holds the steps and the profiler windows.

    session.fit_begin(start_us)      # on_train_begin
    session.epoch_begin(0); ...; session.epoch_end(0)
    session.pause()                  # on_train_end of a fit in a series: the trace stays open
    session.resume(windows=False)    # the next fit of the series
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from gpudiag.record.memory import EPOCH_READ_EVERY_S
from gpudiag.trace.model.timeline import Timeline

if TYPE_CHECKING:
    from gpudiag.record.call_timer import CallTimer
    from gpudiag.record.decode import WindowDecoder
    from gpudiag.record.fit_clock import FitClock
    from gpudiag.record.profiler import ProfilerWindow, WindowSchedule
    from gpudiag.record.samplers import SamplerSet
    from gpudiag.record.writer import TraceWriter

# the other callbacks' per-batch totals go into the header at an epoch's end at most this
# often (a fit of thousands of short epochs must not fill the header's updates), and always
# when the fit ends or pauses
TOTALS_EVERY_S = 30.0


def now_us() -> float:
    return time.time() * 1e6


class FitSpans:
    """The fit's, epochs' and evaluations' spans; pause and resume between fits."""

    writer: TraceWriter
    clock: FitClock
    decoder: WindowDecoder
    samplers: SamplerSet
    schedule: WindowSchedule | None
    window: ProfilerWindow | None
    calls: CallTimer | None
    in_epoch_start: int
    windows_on: bool

    def _init_spans(self) -> None:
        self._epoch = 0
        self._epoch_step = 0
        self._epoch_begin_us = 0.0
        self._test_begin_us = 0.0
        self._fit_begin_us = 0.0
        self._test_batches = 0  # batches of the evaluation running now
        self._validation = [0, 0]  # evaluations inside fit, their batches
        self._totals_at = 0.0  # when the per-batch totals were last written
        # epoch-end memory readings at most every EPOCH_READ_EVERY_S: set by the second fit
        # of a series (its fits end an epoch every ~0.1 s)
        self._memory_every = 0.0

    # the step's side, in session.py
    def close_step(self, end_us: float, next_batch: int | None = None) -> None: ...

    def read_memory(self, every: float = 0.0) -> None: ...

    def submit_window(self) -> None: ...

    def fit_begin(self, start_us: float) -> None:
        """The fit began at ``start_us`` (the callback's ``on_train_begin``); what gpudiag did
        since (lints, samplers, the trace's header) is its own time."""
        self._fit_begin_us = start_us
        self.clock.own("train_begin", start_us, now_us())

    def epoch_begin(self, epoch: int) -> None:
        self._epoch = epoch
        self._epoch_step = 0
        self._epoch_begin_us = now_us()
        self.clock.own("epoch_begin", self._epoch_begin_us, now_us())

    def epoch_end(self, epoch: int) -> None:
        now = now_us()
        self.close_step(now)
        self.read_memory(self._memory_every)
        self.writer.span("epoch", self._epoch_begin_us, now, epoch=epoch)
        missed = None
        if self.schedule is not None and self.windows_on:
            missed = self.schedule.missed(self._epoch, self._epoch_step, self.in_epoch_start)
        if missed:  # docs/callback.md promises one per early epoch: say why not
            self.writer.update_meta(limitations=[missed])
        if time.monotonic() - self._totals_at >= TOTALS_EVERY_S:
            self.write_totals()
        self.clock.own("epoch_end", now, now_us())

    def test_begin(self) -> None:
        self._test_begin_us = now_us()
        self._test_batches = 0
        self.close_step(self._test_begin_us)  # validation inside fit: the step is over
        self.clock.own("test_begin", self._test_begin_us, now_us())

    def test_batch(self) -> None:
        self._test_batches += 1

    def test_end(self) -> None:
        if self._test_begin_us:
            now = now_us()
            self.writer.span("evaluation", self._test_begin_us, now, steps=self._test_batches)
            self._validation[0] += 1
            self._validation[1] += self._test_batches
            self.clock.own("test_end", now, now_us())

    def write_totals(self) -> None:
        """The other callbacks' per-batch time so far, into the header (the last one
        written stands)."""
        self._totals_at = time.monotonic()
        totals = self.clock.batch_totals()
        if totals:
            self.writer.update_meta(extra={"batch_callbacks": totals})

    def end_fit(self, end_us: float) -> None:
        """The fit's span and its evaluations' count."""
        self.close_step(end_us)
        if self._fit_begin_us:
            self.writer.span("fit", self._fit_begin_us, end_us)
            self._fit_begin_us = 0.0
        if self._validation[0]:
            self.writer.update_meta(
                extra={
                    "validation_runs": self._validation[0],
                    "validation_batches": self._validation[1],
                }
            )
        self.write_totals()

    # ---- fits in a loop ------------------------------------------------------------------
    def pause(self) -> None:
        """This fit ended and the next one continues the series: the open step and the fit
        closed, the other callbacks' hooks put back, an open profiler window stopped and
        decoded; the samplers keep running and the trace stays open."""
        now = now_us()
        self.clock.detach()
        self.end_fit(now)
        self.submit_window()
        gil = self.samplers.gil
        if gil is not None:
            gil.end_burst()
        self.writer.flush()
        self.clock.own("train_end", now, now_us())

    def resume(self, windows: bool) -> None:
        """The next fit of the series begins; ``windows``: it may open profiler windows."""
        self._epoch_step = 0
        self.windows_on = windows
        self._memory_every = EPOCH_READ_EVERY_S
        if self.calls is not None:  # a call between the fits is none of this fit's steps
            self.calls.take()
            self.calls.take_done()

    def snapshot(self) -> Timeline:
        """What was recorded so far, the trace left open (a series' diagnosis)."""
        self.write_totals()
        self.decoder.wait_idle()  # the windows of the fits so far, decoded
        self.writer.settle()
        return self.writer.summary(self.writer.path)

    def fit_config(self, fields: dict[str, Any]) -> None:
        """Facts about the run learnt while it runs (the fits of a series so far)."""
        self.writer.update_meta(config=fields)
