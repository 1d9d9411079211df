"""The training panel of ``gpudiag live --follow TRACE``: rolling figures and verdict.

The verdict comes from ``gpudiag.analyze.diagnose`` on the tail's rolling Timeline — the same
analyzers as ``gpudiag analyze``, so live and offline never disagree. ``TRACE`` may be several
files or a glob pattern (``'gpudiag-trace-*.json'``, quoted or expanded by the shell): the
newest matching file is followed, and a newer one (the next run) replaces it.

    source = TraceFollower("gpudiag-trace-*.json")
    status = source.poll()      # TrainingStatus for the live monitor
"""

from __future__ import annotations

import dataclasses
import glob
import os
import stat
import time
from collections.abc import Sequence

import numpy as np

from gpudiag.analyze import diagnose
from gpudiag.show.training import TrainingStatus
from gpudiag.trace.load import matching_paths
from gpudiag.trace.native.follow import TraceTail

# A live run's trace grows at least every AGG_S (10 s: the samplers' counter means) plus the
# writer's flush interval (2 s); a minute without a byte is five times that.
SILENT_S = 60.0


def newest(patterns: Sequence[str]) -> str | None:
    """The most recently modified regular file among paths and glob patterns."""
    found: list[tuple[float, str]] = []
    for p in patterns:
        for name in matching_paths(p):
            try:
                st = os.stat(name)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                found.append((st.st_mtime, name))
    return max(found)[1] if found else None


class TraceFollower:
    """``TrainingPanelSource`` over a growing gpudiag trace."""

    def __init__(self, path: str | Sequence[str], window_s: float = 30.0) -> None:
        self.patterns = [path] if isinstance(path, str) else list(path)
        self.window_s = window_s
        self.tail = TraceTail(newest(self.patterns) or self.patterns[0], window_s=window_s)
        self._last: TrainingStatus | None = None

    def poll(self) -> TrainingStatus | None:
        current = newest(self.patterns)
        if current is None:
            return TrainingStatus(note=f"waiting for {' '.join(self.patterns)} to appear")
        if current != self.tail.path:  # a newer run started
            self.tail = TraceTail(current, window_s=self.window_s)
            self._last = None
        status = self._status(current)
        silent = None if self.tail.closed else _silent_s(current)
        if silent is None or status.verdict is None:
            return status
        # no closing bracket, yet nothing written for a long while: killed, or hung
        note = f"no new data for {silent:.0f} s: the run may have stopped; {status.note}"
        return dataclasses.replace(status, silent_s=silent, note=note)

    def _status(self, current: str) -> TrainingStatus:
        new = self.tail.poll()
        # the closing "]" alone is news too: the run ended after the last events were read
        if not new and self._last is not None and self._last.ended == self.tail.closed:
            return self._last
        tl = self.tail.timeline()
        if tl is None:
            return TrainingStatus(note=f"waiting for the trace header of {current}")
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
            status.ended = True
            status.note = "run ended; " + status.note
        if self.tail.bad_lines:
            status.note += f"; {self.tail.bad_lines} malformed line(s) skipped"
        if self.tail.skipped:  # the writer outran the tail: the latest events are shown
            status.note += f"; {self.tail.skipped / 1e6:,.0f} MB skipped to keep up"
        if len(self.patterns) > 1 or glob.has_magic(self.patterns[0]):
            status.note += f"; following {os.path.basename(current)}"
        self._last = status
        return status

    def close(self) -> None:
        pass


def _silent_s(path: str) -> float | None:
    """Seconds since ``path`` last grew, when that is longer than a live run ever stays
    silent; else None."""
    try:
        quiet = time.time() - os.stat(path).st_mtime
    except OSError:
        return None
    return quiet if quiet > SILENT_S else None
