"""The monitor's loop: samplers started, one frame per interval, until ``q``, Ctrl-C or a
set duration; one frame with ``once``; plain lines when the output is not a terminal.

    run_live(interval=1.0)                      # until q or Ctrl-C
    run_live(once=True)                         # one frame to stdout
    run_live(training_source=TraceFollower(p))  # with the training panel

The data path is the recorder's: ``gpudiag.record.samplers`` threads read NVML and psutil and
push counter samples into ``LiveState.add_sample`` (the same sink signature a trace writer
uses); their raw snapshots (process lists, per-core values) arrive through the samplers'
observer hook.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from rich.console import Console

from gpudiag.record.nvml import NvmlSession
from gpudiag.record.samplers import SamplerSet, gpu_sampler, host_sampler
from gpudiag.show.live.frame import MIN_WIDTH, render
from gpudiag.show.live.keys import Keys
from gpudiag.show.live.plain import plain_frame, plain_line
from gpudiag.show.live.state import LiveState
from gpudiag.show.training import TrainingPanelSource, TrainingStatus


@contextlib.contextmanager
def _samplers_for(state: LiveState, interval: float, nvml_lib: Any) -> Iterator[SamplerSet]:
    session = NvmlSession(lib=nvml_lib)
    state.gpu_reason = session.reason
    samplers: list[Any] = []
    if session.available:
        samplers.append(gpu_sampler(session, state.add_sample, interval, observer=state.set_gpus))
    samplers.append(host_sampler(state.add_sample, interval, observer=state.set_host))
    notes = [] if session.available else [f"GPU: not measured — {session.reason}"]
    sset = SamplerSet(samplers, notes)
    sset.gpu = session
    try:
        yield sset
    finally:
        sset.stop_all()


def _poll(source: TrainingPanelSource | None, state: LiveState) -> None:
    if source is None:
        return
    try:
        status = source.poll()
    except Exception as exc:  # the panel must not take the monitor down
        state.training = TrainingStatus(note=f"follow error: {type(exc).__name__}: {exc}")
        return
    if status is not None:
        state.training = status


def run_live(
    interval: float = 1.0,
    once: bool = False,
    follow: str | Sequence[str] | None = None,
    console: Console | None = None,
    nvml_lib: Any = None,
    *,
    duration: float | None = None,
    training_source: TrainingPanelSource | None = None,
) -> int:
    """``gpudiag live``. Returns the exit status (0; 130 on Ctrl-C). ``once``: print one
    frame and return. ``duration``: stop after that many seconds (benchmarks).
    ``training_source`` feeds the training panel (the command line hands in a
    ``TraceFollower``); ``follow`` names what it follows, for "waiting for …"."""
    console = console or Console()
    interval = max(0.1, float(interval))
    state = LiveState(interval=interval)
    state.follow = follow if follow is None or isinstance(follow, str) else " ".join(follow)
    source = training_source
    try:
        with _samplers_for(state, interval, nvml_lib) as sset:
            if once:
                time.sleep(min(0.25, interval))  # so the CPU shares cover a real interval
                for s in sset.samplers:
                    s.sample_once()
                _poll(source, state)
                state.errors = sset.errors
                _print_frame(console, state)
                return 0
            if not console.is_terminal:  # piped or logged: plain lines, one per interval
                return _plain_loop(console, state, sset, source, interval, duration)
            return _loop(console, state, sset, source, interval, duration)
    finally:
        if source is not None:
            with contextlib.suppress(Exception):
                source.close()


def _loop(
    console: Console,
    state: LiveState,
    sset: SamplerSet,
    source: TrainingPanelSource | None,
    interval: float,
    duration: float | None,
) -> int:
    from rich.live import Live

    sset.start_all()
    t_end = None if duration is None else time.monotonic() + duration
    try:
        with (
            Keys(enabled=console.is_terminal) as keys,
            Live(
                console=console,
                auto_refresh=False,
                screen=console.is_terminal,
                redirect_stdout=False,
                redirect_stderr=False,
            ) as live,
        ):
            next_t = time.monotonic()
            while True:
                _poll(source, state)
                state.errors = sset.errors
                w, h = console.size
                live.update(render(state, w, h, keys=keys.active), refresh=True)
                next_t += interval
                now = time.monotonic()
                if t_end is not None and now >= t_end:
                    break
                if next_t < now:
                    next_t = now
                wait = next_t - now if t_end is None else min(next_t, t_end) - now
                if "q" in keys.wait(wait).lower():
                    break
    except KeyboardInterrupt:
        return 130  # like any command interrupted by Ctrl-C (128 + SIGINT)
    return 0


def _plain_loop(
    console: Console,
    state: LiveState,
    sset: SamplerSet,
    source: TrainingPanelSource | None,
    interval: float,
    duration: float | None,
) -> int:
    sset.start_all()
    t_end = None if duration is None else time.monotonic() + duration
    next_t = time.monotonic() + min(interval, 0.5)  # a first line soon, then every interval
    first = True
    try:
        while True:
            now = time.monotonic()
            wake = next_t if t_end is None else min(next_t, t_end)
            if wake > now:
                time.sleep(wake - now)
            if t_end is not None and time.monotonic() >= t_end:
                break
            _poll(source, state)
            state.errors = sset.errors
            console.file.write(plain_line(state, why=first) + "\n")
            first = False
            console.file.flush()
            next_t = max(next_t + interval, time.monotonic())
    except KeyboardInterrupt:
        return 130
    return 0


def _print_frame(console: Console, state: LiveState) -> None:
    """One frame to stdout; too narrow (or a width of 0) for panels: the plain lines, each
    printed whole so that nothing, the verdict least of all, is cropped away."""
    if console.width < MIN_WIDTH:
        console.file.write("".join(line.plain + "\n" for line in plain_frame(state)))
    else:
        console.print(render(state, console.width, None))
