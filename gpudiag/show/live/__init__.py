"""``gpudiag live``: a terminal monitor for GPUs and host, drawn with rich.

Per GPU: utilisation with a scrolling history strip where bursts and idle gaps show, a
memory bar, PCIe RX/TX, power, clock, temperature and the processes on it. Host: per-core
CPU bars, iowait, memory, load. With a training source (``--follow TRACE``): a training panel
(steps/s, step time, input-wait and sync shares, GIL lateness, rolling verdict).

Example::

    from gpudiag.show.live import run_live

    run_live(interval=1.0)  # until q or Ctrl-C
    run_live(once=True)  # one frame to stdout

    # without a terminal (tests, tools): feed a LiveState, render a frame
    state = LiveState()
    gpu = gpu_sampler(NvmlSession(), state.add_sample, observer=state.set_gpus)
    gpu.sample_once()
    Console(record=True, width=100).print(render(state, 100, 40))

The modules, in the order data flows: ``state`` (rolling history, with ``history`` doing the
binning), ``widgets`` (strips, bars, boxes), ``panels/`` (one panel per file), ``frame``
(layout for the terminal's size), ``plain`` (lines for pipes and narrow terminals), ``keys``
and ``loop`` (``run_live``). ``render`` only reads the state (and the clock, for the header).
"""

from gpudiag.show.live.frame import render
from gpudiag.show.live.loop import run_live
from gpudiag.show.live.state import LiveState
from gpudiag.show.training import TrainingPanelSource, TrainingStatus

__all__ = [
    "LiveState",
    "TrainingPanelSource",
    "TrainingStatus",
    "render",
    "run_live",
]
