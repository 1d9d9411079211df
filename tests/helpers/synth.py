"""Synthetic timelines with known shares, for pinning analyzer rules on both sides."""

from __future__ import annotations

from gpudiag.record.writer import TraceWriter
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline


def record_profiled(path: object, tl: Timeline, meta: Metadata) -> None:
    """``tl`` written as gpudiag's stream by a run profiled from start to end: every step
    its own event, every interval of the timeline kept."""
    with TraceWriter(str(path), meta) as w:
        w.detail(True)
        for i, s, e in zip(tl.steps.index, tl.steps.start, tl.steps.end, strict=True):
            w.step(int(i), float(s), float(e), profiled=True)
        w.timeline(tl)


def periodic(
    steps: int = 10,
    step_us: float = 1000.0,
    input_frac: float = 0.0,
    transfer_frac: float = 0.0,
    sync_frac: float = 0.0,
    overlap_sync_frac: float = 0.0,
    compute_frac: float = 0.6,
    device: str = "GPU 0",
    rank: int | None = None,
    slow: float = 1.0,
) -> Timeline:
    """Each step: input wait, copy, compute, exposed collective, then idle.

    ``overlap_sync_frac`` adds collective time hidden under compute. ``slow`` stretches the
    compute (a straggler).
    """
    tl = Timeline(meta=Metadata(producer="synthetic", rank=rank))
    idx, s_list, e_list = [], [], []
    for i in range(steps):
        t0 = i * step_us
        idx.append(i)
        s_list.append(t0)
        e_list.append(t0 + step_us)
        t = t0
        if input_frac:
            tl.add_input_wait([t], [t + input_frac * step_us], ["IteratorGetNextOp::DoCompute"])
            t += input_frac * step_us
        if transfer_frac:
            tl.add_activity(device, Kind.H2D, [t], [t + transfer_frac * step_us])
            t += transfer_frac * step_us
        c = compute_frac * step_us * slow
        tl.add_activity(device, Kind.COMPUTE, [t], [t + c])
        if overlap_sync_frac:
            tl.add_activity(device, Kind.COLLECTIVE, [t], [t + overlap_sync_frac * step_us])
        t += c
        if sync_frac:
            tl.add_activity(device, Kind.COLLECTIVE, [t], [t + sync_frac * step_us])
    tl.add_steps(idx, s_list, e_list)
    return tl.freeze()
