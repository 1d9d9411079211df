"""The training panel of ``gpudiag live --follow TRACE``: rolling figures and verdict.

The verdict comes from ``gpudiag.analyze.diagnose`` on the tail's rolling Timeline — the same
analyzers as ``gpudiag analyze``, so live and offline never disagree.

    source = TraceFollower("gpudiag-trace-….json")
    status = source.poll()      # TrainingStatus for the live monitor
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import diagnose
from gpudiag.show.live import TrainingStatus
from gpudiag.trace.follow import TraceTail


class TraceFollower:
    """``TrainingPanelSource`` over a growing gpudiag trace."""

    def __init__(self, path: str, window_s: float = 30.0) -> None:
        self.tail = TraceTail(path, window_s=window_s)
        self._last: TrainingStatus | None = None

    def poll(self) -> TrainingStatus | None:
        if not self.tail.exists:
            return TrainingStatus(note=f"waiting for {self.tail.path} to appear")
        new = self.tail.poll()
        if not new and self._last is not None:
            return self._last
        tl = self.tail.timeline()
        if tl is None:
            return TrainingStatus(note="waiting for the trace header")
        steps = self.tail.recent_steps(10.0)
        status = TrainingStatus()
        if len(steps) >= 2:
            span = (steps[-1][1] - steps[0][0]) / 1e6
            status.steps_per_s = len(steps) / span if span > 0 else None
            status.step_time_ms = float(np.median([e - s for s, e in steps[-20:]])) / 1000.0
        gil = tl.counter("gil_lateness")
        if gil and gil[0].values.size:
            status.gil_p95_ms = float(np.max(gil[0].values[-5:]))
        d = diagnose([tl])
        status.verdict, status.confidence = d.verdict, d.confidence
        if d.steps.get("analyzed"):
            status.input_share = d.breakdown["input"]
            status.sync_share = d.breakdown["sync"]
            top = d.findings[0].id if d.findings else ""
            status.note = f"profiled {d.steps['analyzed']} steps" + (f"; top: {top}" if top else "")
        else:
            status.note = "profiler window not reached yet: " + d.reason
        if self.tail.closed:
            status.note = "run ended; " + status.note
        self._last = status
        return status

    def close(self) -> None:
        pass
