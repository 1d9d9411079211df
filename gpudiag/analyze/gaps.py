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
from gpudiag.trace.timeline import Timeline, union_many, union_of


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
    for device in tl.devices:
        busy = union_many([iv for (d, _), iv in tl.activity.items() if d == device])
        b = busy.clip(window_lo, window_hi)
        # idle = complement of busy inside the profiled steps (several windows: not between)
        all_s = np.concatenate([[window_lo], b.ends])
        all_e = np.concatenate([b.starts, [window_hi]])
        parts_s, parts_e = [], []
        for lo, hi in zip(profiled.starts.tolist(), profiled.ends.tolist(), strict=True):
            s_clip, e_clip = np.maximum(all_s, lo), np.minimum(all_e, hi)
            keep_w = e_clip > s_clip
            parts_s.append(s_clip[keep_w])
            parts_e.append(e_clip[keep_w])
        edges_s, edges_e = np.concatenate(parts_s), np.concatenate(parts_e)
        gap_len = edges_e - edges_s
        keep = gap_len >= min_gap
        gs, ge, gl = edges_s[keep], edges_e[keep], gap_len[keep]
        g = Gaps(device=device, min_gap_us=min_gap, bursts=len(b), steps=int(idx.size))
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
