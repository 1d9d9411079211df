"""What the live monitor's training panel shows, and the interface of whatever feeds it.

The monitor and the trace follower both depend on this module and not on each other: the
command line opens the follower and hands it to the monitor::

    source = TraceFollower("gpudiag-trace-*.json")   # a TrainingPanelSource
    run_live(training_source=source)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass
class TrainingStatus:
    """What the training panel shows. ``None`` = not known (rendered as "—", never 0).

    Shares are fractions of step time (0–1); ``confidence`` is 0–1.
    """

    steps_per_s: float | None = None
    step_time_ms: float | None = None
    input_share: float | None = None
    sync_share: float | None = None
    gil_p95_ms: float | None = None
    verdict: str | None = None
    confidence: float | None = None
    note: str = ""
    ended: bool = False  # the run closed its trace: the figures are its last ones
    silent_s: float | None = None  # not closed, yet its trace has not grown for this long


@runtime_checkable
class TrainingPanelSource(Protocol):
    """Feeds the training panel: polled once per frame on the UI thread, so ``poll`` must
    return quickly (tail the file incrementally). ``None`` means "nothing new to show yet"."""

    def poll(self) -> TrainingStatus | None: ...

    def close(self) -> None: ...
