"""One ``fit``'s recording: the trace writer, the samplers, the profiler windows and their
decode thread, and the step clock, driven by the callback's hooks.

The callback builds a session when training begins and hands it each hook; the session does
the work and, at the end, closes the trace and returns what was recorded. It knows nothing
of Keras callbacks, of the diagnosis or of printing (``record/`` imports nothing from
``show/``), so it can be driven by any training loop:

    session = start_session(path, meta, backend, make_samplers)   # record/session_start.py
    session.fit_begin(time.time() * 1e6)
    for step in ...:
        session.batch_begin(step)         # closes the previous step, opens this one
        ...                               # the training step
    summary = session.finish(abnormal=False)   # the same as reading the file back

Per step the session only reads the clock, appends to the writer's buffer and, inside a
profiler window, enters or leaves a step marker: nothing that waits for the device.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from gpudiag.record.backends import RecordBackend
from gpudiag.record.call_timer import CallTimer
from gpudiag.record.compile_watch import CompileWatch
from gpudiag.record.completion import StepCompletion
from gpudiag.record.decode import WindowDecoder
from gpudiag.record.fit_clock import FitClock
from gpudiag.record.memory import MemoryProbe
from gpudiag.record.profiler import DEFAULT_WARMUP_STEPS, ProfilerWindow, WindowSchedule
from gpudiag.record.samplers import SamplerSet
from gpudiag.record.session_fit import FitSpans
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.model.timeline import STOPPED_EARLY, Timeline
from gpudiag.trace.ranks.kept_run import write_manifest

# a step hook of gpudiag's taking this long (a profiler window opening or closing) is written
# as its own time; shorter ones stay inside the step they begin (docs/trace-format.md)
OWN_STEP_HOOK_US = 500.0


def now_us() -> float:
    return time.time() * 1e6


class RecordingSession(FitSpans):
    """Records one fit (or the fits of a series) into ``writer``; the fit's own spans are
    ``FitSpans``'s (record/session_fit.py).

    Args:
        writer: the streamed trace (its header already written).
        samplers: NVML, host and GIL samplers writing counters into ``writer``.
        backend: the Keras backend's adapter (profiler, step markers).
        schedule: when profiler windows open; None: no windows.
        profile_steps: steps per window.
        profile_dir: keep each window's raw profile there.
        calls: times the train-function call of each step (see ``call_timer.CallTimer``).
        in_epoch_start: the step of an epoch where later windows open.
        steps_per_epoch: Keras's steps per epoch when known.
        steps_per_execution: the batches Keras runs per train-function call.
        op_scope: a name scope whose op time each window measures (the optimizer's).
    """

    def __init__(
        self,
        writer: TraceWriter,
        samplers: SamplerSet,
        backend: RecordBackend,
        schedule: WindowSchedule | None = None,
        profile_steps: int = 5,
        profile_dir: str | None = None,
        calls: CallTimer | None = None,
        in_epoch_start: int = DEFAULT_WARMUP_STEPS,
        steps_per_epoch: int | None = None,
        steps_per_execution: int = 1,
        watch: CompileWatch | None = None,
        memory: MemoryProbe | None = None,
        op_scope: str | None = None,
    ) -> None:
        self.writer = writer
        self.op_scope = op_scope  # a name scope each window measures (record/op_scopes.py)
        self.memory = memory  # device and host memory, read at epoch ends (record/memory.py)
        self.watch = watch  # counts the step's compilations (record/compile_watch.py)
        self.samplers = samplers
        self.backend = backend
        self.schedule = schedule
        self.profile_steps = profile_steps
        self.profile_dir = profile_dir
        self.calls = calls
        self.in_epoch_start = in_epoch_start
        self.steps_per_epoch = steps_per_epoch
        self.steps_per_execution = max(1, steps_per_execution)
        self.window: ProfilerWindow | None = None  # the open window
        self.windows: list[ProfilerWindow] = []  # every window of this fit
        self.windows_taken: list[int] = []  # first step of each window
        self.decoder = WindowDecoder(writer, gil=samplers.gil, on_cost=self._add_cost)
        self.completion = StepCompletion(writer.step)
        self._completing = False  # steps go through the completion thread (async backend)
        self.step = 0  # steps recorded so far (global over epochs and the fits of a series)
        self._begin_us = 0.0
        self._batch_begin = 0
        self._pending = False  # a step has begun and is not recorded yet
        self._t0 = time.monotonic()
        self.clock = FitClock(writer)  # gpudiag's own hook time, the other callbacks' timed
        self.windows_on = True  # this fit may open profiler windows (off: tiny fits)
        self._init_spans()

    def _add_cost(self, seconds: float) -> None:
        if self.schedule is not None:
            self.schedule.cost_s += seconds

    # ---- steps ---------------------------------------------------------------------------
    # A step is closed when the next one begins (or the epoch, an evaluation or the run
    # ends), never from a batch-end hook: a callback that overrides on_train_batch_end
    # makes Keras turn its logs into Python numbers on the training thread every batch,
    # which waits for the device each step (keras CallbackList._configure_async_dispatch).
    def batch_begin(self, batch: int) -> None:
        """Keras's ``on_train_batch_begin(batch)``: closes the previous step, opens this one."""
        now = now_us()
        self.close_step(now, next_batch=batch)
        self._begin_us = now
        self._batch_begin = batch
        self._pending = True
        if self.step == 1:  # the first step traced and compiled: probe the GIL from here on
            self.gil_burst()
        sch = self.schedule
        if (
            sch is not None
            and self.windows_on
            and self.window is None
            and sch.due(
                self.step,
                self._epoch,
                self._epoch_step,
                self.in_epoch_start,
                time.monotonic(),
                self._t0,
            )
        ):
            self._open_window()
        w = self.window
        if w is not None:
            w.on_step_begin(self.step, batch)
            if w.problem:  # could not start (a profiler of the user's own is running, ...)
                self.window = None
                self.writer.detail(False)
                self.writer.update_meta(limitations=[w.problem])
        if self.calls is not None:  # a profiled step's call returns once its device work is done
            self.calls.sync = self.window is not None and self.window.active
        done = now_us()
        if done - now >= OWN_STEP_HOOK_US:
            self.clock.own("train_batch_begin", now, done)

    def close_step(self, end_us: float, next_batch: int | None = None) -> None:
        """Record the open step as ending at ``end_us``. Its batches (``steps_per_execution``)
        are the distance to the next step's first batch, or at an epoch's end what is left
        of the epoch."""
        if not self._pending:
            return
        self._pending = False
        first = self._batch_begin
        if next_batch is not None and next_batch > first:
            batches = next_batch - first
        elif self.steps_per_epoch:
            batches = min(self.steps_per_execution, self.steps_per_epoch - first)
        else:
            batches = self.steps_per_execution
        step = self.step
        self.step += 1
        self._epoch_step += 1
        w = self.window
        in_window = w is not None and w.active
        call = self.calls.take() if self.calls is not None else None
        done = self.calls.take_done() if self.calls is not None else None
        fields: dict[str, Any] = {"profiled": in_window, "call": call, "batches": max(1, batches)}
        if self._epoch_step == 1 or next_batch is None:  # an epoch's first or last step
            fields["keep"] = True
        if done is not None or self._completing:  # in order, once the device has done it
            self._completing = True
            last = next_batch is None
            self.completion.submit(step, self._begin_us, end_us, wait=done, last=last, **fields)
        else:
            self.writer.step(step, self._begin_us, end_us, **fields)
        if w is not None and w.active:
            w.on_step_end(step, self._begin_us, end_us)
            if w.done:
                self.window = None
                self.writer.detail(False)
                self.decoder.submit(w)

    def _open_window(self) -> None:
        assert self.schedule is not None
        self.schedule.open(self.step, self._epoch, time.monotonic())
        w = ProfilerWindow(
            self.backend,
            first_step=self.step,
            steps=self.profile_steps,
            keep_dir=self.profile_dir,
        )
        w.op_scope = self.op_scope
        self.writer.detail(True)  # full resolution while the window is open
        self.window = w
        self.windows.append(w)
        self.windows_taken.append(self.step)
        self.gil_burst()

    def submit_window(self) -> None:
        """Stop an open window and hand it to the decode thread (a window the run left
        before its last step is decoded as far as it got)."""
        window, self.window = self.window, None
        if window is not None and window.active:
            window.stop()
            self.writer.detail(False)
            self.decoder.submit(window)

    def gil_burst(self) -> None:
        gil = self.samplers.gil
        if gil is not None:
            gil.request_burst(gil.burst_s)

    # ---- the end -------------------------------------------------------------------------
    def finish(self, abnormal: bool) -> Timeline:
        """Stop recording, close the trace, and return its summary (what reading the file
        back gives, at a cost that does not grow with the run's length)."""
        self.clock.detach()
        if not abnormal:
            self.end_fit(now_us())
        elif self.calls is not None and self.calls.last is not None:
            self.close_step(self.calls.last[1])  # its train-function call had returned
        self.completion.close()
        gil = self.samplers.gil
        if gil is not None:  # training is over: so is what the GIL probe measures
            gil.end_burst()
        if abnormal and self.window is not None and self.window.active:
            self.window.stop()
        self.submit_window()
        self.decoder.close()
        self.read_memory()
        writer = self.writer
        self._stop_watch()
        if self.schedule is not None and not self.windows:
            writer.update_meta(
                limitations=[
                    f"the run had {self.step} steps, fewer than the profiler window start "
                    f"({self.schedule.first_step})"
                ]
            )
        self.samplers.stop_all()
        errs = self.samplers.errors
        if errs:
            writer.update_meta(
                limitations=[
                    f"{self.samplers.error_count} sampler errors (first: {errs[0]}): "
                    "those signals have gaps"
                ]
            )
        if abnormal:
            writer.update_meta(limitations=[STOPPED_EARLY])
        writer.close()
        summary = writer.summary(writer.path)
        kept = list(dict.fromkeys(f for w in self.windows for f in w.kept))
        if self.profile_dir and kept and not writer.failed:  # one run (trace/ranks/kept_run.py)
            problem = write_manifest(self.profile_dir, writer.path, summary.meta.run_id, kept)
            if problem:
                summary.meta.limitations.append(problem)
        return summary

    def read_memory(self, every: float = 0.0) -> None:
        """One reading of device and host memory into the trace (cheap: no device wait);
        skipped where the last one is less than ``every`` seconds old."""
        probe = self.memory
        if probe is None:
            return
        for name, source, ts, value in probe.read(every):
            self.writer.counter(name, source, ts, value)
        problem = probe.new_problem()
        if problem:
            self.writer.update_meta(limitations=[problem])

    def _stop_watch(self) -> None:
        watch, self.watch = self.watch, None
        if watch is None:
            return
        try:
            watch.stop()
        except Exception as e:
            watch.fault(e)
        if watch.problem:
            self.writer.update_meta(limitations=[watch.problem])

    def overhead(self) -> dict[str, float]:
        """What the profiler windows cost: seconds on the training thread and decoding."""
        out = {
            key: sum(getattr(w, attr) for w in self.windows)
            for key, attr in (
                ("profile_start_s", "start_cost_s"),
                ("profile_stop_s", "stop_cost_s"),
                ("profile_decode_s", "decode_cost_s"),
            )
        }
        out["profile_windows"] = float(len(self.windows))
        return out

    def teardown(self) -> None:
        """Release everything (idempotent; safe from any exit path)."""
        self.clock.detach()
        if self.calls is not None:
            self.calls.restore()
        if self.watch is not None:
            with contextlib.suppress(Exception):
                self.watch.stop()
            self.watch = None
        self.completion.close(timeout=2.0)
        if self.window is not None:
            self.window.stop()
        for w in self.windows:
            w.cleanup()
        self.samplers.stop_all()
