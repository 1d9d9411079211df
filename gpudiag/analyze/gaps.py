"""GPU bursts and idle gaps: how often, how long, and whether they sit at step boundaries. Pure.

An input-starved run shows a signature: a burst of device work per step, then an idle gap at
the step boundary while the next batch is produced. Gaps shorter than ``min_gap_us`` (launch
latency between kernels) are not counted.

    g = idle_gaps(timeline)
    g.count, g.longest_us, g.share, g.boundary_share
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpudiag.analyze.breakdown import profiled_steps
from gpudiag.analyze.thresholds import GAP_BOUNDARY_WINDOW, GAP_MIN_FRACTION_OF_STEP, GAP_MIN_US
from gpudiag.trace.model.timeline import Intervals, Kind, Timeline, subtract, union_many, union_of


@dataclass
class Gaps:
    device: str
    count: int = 0
    longest_us: float = 0.0
    total_us: float = 0.0
    share: float = 0.0  # of profiled step time
    boundary_share: float = 0.0  # of gap time touching a step boundary
    bursts: int = 0
    min_gap_us: float = 0.0
    steps: int = 0

    @property
    def per_step(self) -> float:
        return self.count / self.steps if self.steps else 0.0


def idle_gaps(tl: Timeline) -> list[Gaps]:
    """Idle gaps per device over the profiled steps."""
    idx = profiled_steps(tl)
    if not idx.size:
        return []
    starts = tl.steps.start[idx]
    ends = tl.steps.end[idx]
    durations = ends - starts
    window_lo, window_hi = float(starts.min()), float(ends.max())
    profiled = union_of(starts, ends)
    min_gap = max(GAP_MIN_US, GAP_MIN_FRACTION_OF_STEP * float(np.median(durations)))
    boundaries = np.unique(np.concatenate([starts, ends]))
    margin = GAP_BOUNDARY_WINDOW * float(np.median(durations))
    out = []
    # a device that never computes (one that only receives copies) is not "idle in gaps":
    # it has no work to wait for
    working = [
        d
        for d in tl.devices
        if len(tl.device_activity(d, Kind.COMPUTE)) or len(tl.device_activity(d, Kind.COLLECTIVE))
    ] or tl.devices
    by_device: dict[str, list[Intervals]] = {}
    for (d, _), iv in tl.activity.items():  # once: a scan per device was quadratic
        by_device.setdefault(d, []).append(iv)
    for device in working:
        busy = union_many(by_device.get(device, []))
        # idle = what the profiled steps cover and the device does not (windows: not between)
        idle = subtract(profiled, busy)
        gap_len = idle.ends - idle.starts
        keep = gap_len >= min_gap
        gs, ge, gl = idle.starts[keep], idle.ends[keep], gap_len[keep]
        # bursts: busy stretches overlapping the profiled span
        bursts = int(
            np.searchsorted(busy.starts, window_hi, side="left")
            - np.searchsorted(busy.ends, window_lo, side="right")
        )
        g = Gaps(device=device, min_gap_us=min_gap, bursts=bursts, steps=int(idx.size))
        if gl.size:
            # a gap is at a boundary if a step start/end lies within it (+/- margin)
            pos = np.searchsorted(boundaries, gs - margin, side="left")
            near = (pos < boundaries.size) & (
                boundaries[np.minimum(pos, boundaries.size - 1)] <= ge + margin
            )
            g.count = int(gl.size)
            g.longest_us = float(gl.max())
            g.total_us = float(gl.sum())
            g.share = g.total_us / float(durations.sum())
            g.boundary_share = float(gl[near].sum() / gl.sum())
        out.append(g)
    return out
