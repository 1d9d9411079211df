"""A short profiler window over a few training steps, with explicit step markers.

The window opens and closes at given steps and marks each step; how a backend profiles,
marks and decodes is its adapter's business (``record/backends/``: TensorFlow and JAX write
XSpace, torch Kineto JSON). The decoded Timeline is moved onto the callback's wall clock by
matching the step markers to the callback's own step times.

    win = ProfilerWindow(backend="tensorflow", first_step=5, steps=5)
    win.on_step_begin(n); ...; win.on_step_end(n, begin_us, end_us)
    timeline = win.collect()   # None (with win.problem set) when nothing could be recorded
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np

from gpudiag.record.backends import ProfilerSession, RecordBackend, for_name
from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.timeline import Intervals, Timeline
from gpudiag.trace.quiet import quiet_stderr


class WindowSchedule:
    """When profiler windows open: the first after warm-up, then spread over the fit.

    One early window cannot describe a fit whose first epoch fills a cache, or that slows
    down late. Windows open: at ``first_step``; then once in each new epoch (at its
    ``in_epoch_step``) while at least ``gap`` has passed since the previous one; and, within
    long epochs, whenever ``gap`` has passed. ``gap`` grows with the run (half the elapsed
    time, at least ``min_gap_s``), so a day-long fit gets windows spread over all of it
    without profiling more and more often. At most ``max_windows`` per fit, and never while
    their measured cost exceeds ``budget_s`` plus ``budget_share`` of the elapsed time, except
    the first window of the first epoch after the first window's: a multi-epoch run is never
    left with windows in its first epoch only (warm-up, a cache being filled), whose split
    describes a phase the rest of the run does not repeat.

    A new epoch's window opens at its ``in_epoch_step`` or, when it cannot open there (the
    budget is spent, the previous window is still open), at a later step of the same epoch.
    An early epoch that ends without its window is told by ``missed``, with the reason.
    """

    def __init__(
        self,
        first_step: int,
        steps: int,
        max_windows: int = 8,
        min_gap_s: float = 60.0,
        budget_s: float = 1.0,
        budget_share: float = 0.01,
    ) -> None:
        self.first_step = first_step
        self.steps = steps
        self.max_windows = max_windows
        self.min_gap_s = min_gap_s
        self.budget_s = budget_s
        self.budget_share = budget_share
        self.opened: list[tuple[int, int, float]] = []  # (global step, epoch, monotonic s)
        self.cost_s = 0.0  # measured: start + stop on the training thread + decode
        self.blocked: dict[int, str] = {}  # epoch -> why its planned window has not opened

    def due(
        self, step: int, epoch: int, epoch_step: int, in_epoch_step: int, now: float, start: float
    ) -> bool:
        if len(self.opened) >= self.max_windows:
            return False
        if not self.opened:
            return step >= self.first_step
        last_step, last_epoch, last_t = self.opened[-1]
        new_epoch = epoch != last_epoch and epoch_step >= in_epoch_step
        early = new_epoch and len(self.opened) < EARLY_WINDOWS
        if step < last_step + self.steps:
            if early:
                self.blocked[epoch] = "the previous window was still open"
            return False
        elapsed = now - start
        limit = self.budget_s + self.budget_share * elapsed
        if new_epoch and all(e == self.opened[0][1] for _, e, _ in self.opened):
            return True  # the first window outside the first epoch: never over budget
        if self.cost_s > limit:
            if early:
                self.blocked[epoch] = (
                    f"the profiling budget of {self.budget_s:g} s + {self.budget_share:.0%} "
                    f"of elapsed time was spent ({self.cost_s:.2f} s of {limit:.2f} s)"
                )
            return False
        gap = max(self.min_gap_s, 0.5 * elapsed)
        if new_epoch:
            # early epochs each get one (the cache-fill case); later ones as the gap allows
            return early or now - last_t >= gap
        return now - last_t >= gap

    def missed(self, epoch: int, epoch_steps: int, in_epoch_step: int) -> str | None:
        """Why the window planned in ``epoch`` (which just ended after ``epoch_steps`` steps)
        did not open; None when it opened or none was planned there (before the first
        window, after the early ones, past ``max_windows``)."""
        why = self.blocked.pop(epoch, None)
        if not self.opened or len(self.opened) >= min(EARLY_WINDOWS, self.max_windows):
            return None
        if self.opened[-1][1] >= epoch:  # it opened (or the first window is this epoch's)
            return None
        if why is None and epoch_steps <= in_epoch_step:
            why = f"the epoch had {epoch_steps} steps; its window opens after {in_epoch_step}"
        return f"profiler window planned in epoch {epoch + 1} skipped: " + (
            why or "the previous window was still open"
        )

    def open(self, step: int, epoch: int, now: float) -> None:
        self.opened.append((step, epoch, now))


DEFAULT_WARMUP_STEPS = 5
EARLY_WINDOWS = 4  # the first window and one in each of the next 3 epochs (cache fill)


# a fit in a loop (fit called again on the model) of fewer batches than this opens no window
# by default: decoding one costs ~0.2 s of CPU, more than such a fit takes (measured: fits of 8
# steps in a loop, docs/callback.md). A lone short fit keeps its window: it is all there is.
TINY_FIT_STEPS = 10


def plan_windows(
    profile: bool | None,
    start: int | None,
    steps: int,
    max_windows: int,
    steps_per_epoch: int | None,
    off_reason: str | None = None,
    steps_per_execution: int = 1,
    fit_steps: int | None = None,
) -> tuple[WindowSchedule | None, int, str | None]:
    """The fit's window schedule (None: no windows), the step of an epoch where later
    windows open, and a note for the trace when windows are off.

    Steps here are the session's steps, one per train-function call: with
    ``steps_per_execution`` > 1 an epoch of ``steps_per_epoch`` batches has fewer of them.

    Args:
        profile: True/False as the user asked; None: on unless ``off_reason`` says why not.
        start: the first window's step; None: after warm-up, or a third of a short epoch.
        steps: steps per window.
        max_windows: at most this many windows.
        steps_per_epoch: Keras's steps (batches) per epoch when known.
        off_reason: why windows are off by default on this run (the backend's adapter).
        steps_per_execution: the batches Keras runs per train-function call.
        fit_steps: the batches in all (steps × epochs) of a fit in a loop, when known: one
            shorter than ``TINY_FIT_STEPS`` opens no window unless asked to (``profile`` or
            ``start``); None for a fit on its own.
    """
    per_epoch = None
    if steps_per_epoch is not None:
        per_epoch = -(-steps_per_epoch // max(1, steps_per_execution))  # calls per epoch
    in_epoch = DEFAULT_WARMUP_STEPS
    if per_epoch is not None and per_epoch >= 4 * steps:
        in_epoch = per_epoch // 2  # later windows: mid-epoch
    elif per_epoch is not None and 0 < per_epoch <= in_epoch:
        in_epoch = per_epoch // 3  # an epoch too short to reach the default step
    if profile is None and off_reason:
        return None, in_epoch, off_reason
    if profile is False:
        note = "profiler window off (profile=False): no per-step input/compute/sync split, "
        return None, in_epoch, note + "host signals only"
    if profile is None and start is None and fit_steps is not None and fit_steps < TINY_FIT_STEPS:
        return (
            None,
            in_epoch,
            (
                f"no profiler window: a fit in a loop of {fit_steps} steps is shorter than a "
                "window's cost (~0.2 s of CPU to decode); steps, host signals and the fit's "
                "account only (profile=True records one anyway)"
            ),
        )
    if start is None:
        short = per_epoch is not None and 0 < per_epoch < 3 * DEFAULT_WARMUP_STEPS
        start = max(1, per_epoch // 3) if short and per_epoch else DEFAULT_WARMUP_STEPS
    return WindowSchedule(start, steps, max_windows=max_windows), in_epoch, None


class ProfilerWindow:
    """Profiles steps ``[first_step, first_step + steps)`` of the first epoch it sees."""

    def __init__(
        self,
        backend: str | RecordBackend,
        first_step: int = 5,
        steps: int = 5,
        keep_dir: str | None = None,
    ) -> None:
        self.backend = for_name(backend) if isinstance(backend, str) else backend
        self.keep_dir = keep_dir  # copy the raw profile here (for TensorBoard / xprof)
        self.kept: list[str] = []  # the files copied there, relative to it
        self.first_step = max(0, first_step)
        self.last_step = self.first_step + max(1, steps) - 1
        self.logdir = ""  # a temp dir while the window has files; removed by collect/cleanup
        self.active = False
        self.done = False
        self.problem: str | None = None
        self.start_cost_s = 0.0
        self.stop_cost_s = 0.0
        self.decode_cost_s = 0.0  # in a background thread, not on the training thread
        self._marker: Any = None
        self._session: ProfilerSession | None = None
        # our wall-clock begin/end of each profiled step, to align the profiler's clock
        self.step_times: dict[int, tuple[float, float]] = {}
        # wall clock (µs) when each step's marker was entered: the first step's begin comes
        # before the profiler start (milliseconds), which would bias the alignment
        self.marked: dict[int, float] = {}
        self.numbered: dict[int, int] = {}  # the profile's number of a step -> the step
        # a name scope whose op time is measured too (record/op_scopes.py): the optimizer's
        self.op_scope: str | None = None

    # ---- hooks ---------------------------------------------------------------------------
    def on_step_begin(self, step: int, batch: int | None = None) -> None:
        """``batch``: the step's first batch in its epoch (the number a Keras that marks
        steps itself gives it in the profile)."""
        if self.done or self.problem:
            return
        if step == self.first_step and not self.active:
            self._start()
        if self.active:
            number = self.backend.profile_step(step, step if batch is None else batch)
            self.numbered[number] = step
            self._enter_marker(step)

    def on_step_end(self, step: int, begin_us: float, end_us: float) -> None:
        if not self.active:
            return
        self._exit_marker()
        self.step_times[step] = (begin_us, end_us)
        if step >= self.last_step:
            self.stop()

    # ---- profiler session ----------------------------------------------------------------
    def _start(self) -> None:
        t0 = time.perf_counter()
        other = ""
        with contextlib.suppress(Exception):
            other = self.backend.user_profiler_running()
        if other:
            self.problem = (
                f"profiler window at step {self.first_step} skipped: {other} "
                "(gpudiag never stops or shares another profiler session)"
            )
            return
        try:
            self.logdir = tempfile.mkdtemp(prefix="gpudiag-profile-")
            with quiet_stderr():
                self._session = self.backend.start_profiler(self.logdir)
            if self._session is None:
                self.problem = f"no profiler for the {self.backend.name!r} backend"
                return
            self.active = True
        except Exception as e:  # another profiler running, missing module, ...
            self.problem = f"profiler window could not start ({type(e).__name__}: {e})"
        finally:
            self.start_cost_s = time.perf_counter() - t0

    def _enter_marker(self, step: int) -> None:
        try:
            self._marker = self.backend.step_marker(step)
            if self._marker is not None:
                self.marked[step] = time.time() * 1e6
                self._marker.__enter__()
        except Exception:
            self._marker = None

    def _exit_marker(self) -> None:
        if self._marker is not None:
            with contextlib.suppress(Exception):
                self._marker.__exit__(None, None, None)
            self._marker = None

    def stop(self) -> None:
        """Stop the profiler (idempotent; safe from any exit path)."""
        if not self.active:
            return
        self._exit_marker()
        self.active = False
        self.done = True
        t0 = time.perf_counter()
        try:
            with quiet_stderr():
                if self._session is not None:
                    self._session.stop()
        except Exception as e:
            self.problem = f"profiler window could not stop ({type(e).__name__}: {e})"
        finally:
            self.stop_cost_s = time.perf_counter() - t0

    # ---- decode --------------------------------------------------------------------------
    def collect(self) -> Timeline | None:
        """Decode what was recorded into a Timeline on the wall clock, then delete the files."""
        t0 = time.perf_counter()
        try:
            if self.problem or not self.done:
                if not self.problem:
                    self.problem = "the run ended before the profiler window"
                return None
            tl = self._decode()
            if tl is None:
                return None
            if self.op_scope:
                from gpudiag.record.op_scopes import scope_time

                tl.meta.extra.update(scope_time(self.logdir, self.op_scope))
            shift = self._clock_shift(tl)
            if shift is None:
                self.problem = "profiler steps could not be matched to training steps"
                return None
            return shifted(tl, shift)
        except TraceError as e:
            self.problem = f"profile could not be decoded: {e.problem}"
            return None
        finally:
            self.decode_cost_s = time.perf_counter() - t0
            if self.keep_dir and self.logdir:
                with contextlib.suppress(OSError):
                    shutil.copytree(self.logdir, self.keep_dir, dirs_exist_ok=True)
                    self.kept = _files_under(self.logdir)
            self.cleanup()

    def cleanup(self) -> None:
        """Remove the window's temp dir (idempotent; stops the profiler first if needed)."""
        if self.active:
            self.stop()
        if self.logdir:
            shutil.rmtree(self.logdir, ignore_errors=True)
            self.logdir = ""

    def _decode(self) -> Timeline | None:
        tl, problem = self.backend.decode(self.logdir)
        if tl is None:
            self.problem = problem
        return tl

    def _clock_shift(self, tl: Timeline) -> float | None:
        """Offset (µs) from the profiler's clock to ours, from matching step markers (Kineto
        and xprof clocks are not always the wall clock)."""
        ours = [self.numbered.get(int(i), int(i)) for i in tl.steps.index]
        diffs = [
            self.marked.get(i, self.step_times[i][0]) - float(s)
            for i, s in zip(ours, tl.steps.start, strict=True)
            if i in self.step_times
        ]
        return float(np.median(diffs)) if diffs else None


def _files_under(folder: str) -> list[str]:
    """Every file under ``folder``, relative to it."""
    return [
        os.path.relpath(os.path.join(root, n), folder)
        for root, _, names in os.walk(folder)
        for n in sorted(names)
    ]


def shifted(tl: Timeline, shift_us: float) -> Timeline:
    """The same timeline with every timestamp moved by ``shift_us``."""
    tl.steps.start = tl.steps.start + shift_us
    tl.steps.end = tl.steps.end + shift_us
    for key, iv in list(tl.activity.items()):
        tl.activity[key] = Intervals(iv.starts + shift_us, iv.ends + shift_us)
    tl.input_wait = Intervals(tl.input_wait.starts + shift_us, tl.input_wait.ends + shift_us)
    return tl
