"""The device "Steps" line xprof derives for an XSpace the profiler left ungrouped.

xprof groups the events of such a profile (``group_events.cc``): a user's root event
(``Trace("train", step_num=n, _r=1)``) and everything it leads to, through nesting, the
executor's producer/consumer ids and the CUDA correlation id from a kernel's launch on the
host to its execution on the GPU. Each GPU plane then gets a "Steps" line
(``DeriveStepEventsFromGroups``): its events sorted by time, an event without a group taking
the last group seen, and each run of one group one step event, named after the group
("train 5"), from the run's first start to its last end.

The link from a launch to its root is taken here from time: a launch belongs to the root
whose span holds it on the host (the highest root level first, then the earliest), which is
what the executor's ids lead to when a step's function runs inside its marker; the ids
themselves are not followed (docs/formats.md).
"""

from __future__ import annotations

import bisect
from array import array
from typing import Any

STEPS_TID = 0xDEADBEEF  # xprof's kThreadIdStepInfo
STEPS_LINE = "Steps"
CORRELATION_ID = "correlation_id"


class StepDeriver:
    """Launch groups from the host plane, then each GPU plane's steps."""

    def __init__(self, groups: list[tuple[Any, int, str]]) -> None:
        # roots by start; among those that hold a time, the first in xprof's order wins
        self.roots = sorted(((r.ts_ps, r.end_ps, rank, g) for rank, (r, g, _) in enumerate(groups)))
        self.starts = [r[0] for r in self.roots]
        self.names = {g: name for _, g, name in groups}
        self.launches: dict[int, int] = {}  # correlation id -> group
        self._events = (array("q"), array("q"), array("q"))  # start, end, group (-1: none)

    def reset(self) -> None:
        """Forget what a pass over the events gathered."""
        self.launches = {}
        self._events = (array("q"), array("q"), array("q"))

    def group_at(self, ts_ps: int) -> int | None:
        """The group of the root that holds this host time, if any."""
        best: tuple[int, int] | None = None
        for start, end, rank, group in self.roots[: bisect.bisect_right(self.starts, ts_ps)]:
            if start <= ts_ps <= end and (best is None or rank < best[0]):
                best = (rank, group)
        return best[1] if best is not None else None

    def host_event(self, ts_ps: int, dur_ps: int, correlation: int | None) -> None:
        if correlation is not None:
            group = self.group_at(ts_ps)
            if group is not None:
                self.launches[correlation] = group

    def device_event(self, ts_ps: int, dur_ps: int, correlation: int | None) -> None:
        group = self.launches.get(correlation, -1) if correlation is not None else -1
        starts, ends, groups = self._events
        starts.append(ts_ps)
        ends.append(ts_ps + dur_ps)
        groups.append(group)

    def steps(self) -> list[tuple[int, int, str]]:
        """The plane's step events (start ps, end ps, name); the plane's events are then
        forgotten, for the next plane."""
        starts, ends, groups = self._events
        order = sorted(range(len(starts)), key=lambda i: (starts[i], -ends[i]))
        out: list[list[Any]] = []
        last: int | None = None
        for i in order:
            group = groups[i] if groups[i] >= 0 else last
            if group is None:
                continue
            if out and group == last:
                out[-1][1] = max(out[-1][1], ends[i])
            else:
                out.append([starts[i], ends[i], self.names[group]])
            last = group
        self._events = (array("q"), array("q"), array("q"))
        return [(a, b, name) for a, b, name in out]
