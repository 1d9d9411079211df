"""A decoded profiler window as trace events, bounded whatever the number of kernels.

Device activity goes per device and kind (CPU compute threads as the union of their nested
events, device kernels one by one since their sizes feed the launch-bound finding); past
``MAX_WINDOW_EVENTS`` per device and kind, the first half stay individual and the rest are
written as merged busy runs with their kernel count. Input waits are merged.

    for event, exact in window_events(timeline, device_pid, shift_us=0.0):
        writer._write(event, exact=exact)    # TraceWriter.timeline; exact: numbers only
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from gpudiag.trace.model.timeline import Intervals, Kind, Timeline, union_of
from gpudiag.trace.native.reader import CAT_DEVICE, CAT_INPUT, HOST_PID

# a window's events per device and kind; past it, the first half stay individual kernels
# (their sizes feed the launch-bound finding) and the rest are written as merged busy runs
# with their kernel count (5 steps x 2000 kernels x 8 GPUs would add ~11 MB per window)
MAX_WINDOW_EVENTS = 5_000
BRIDGE_US = 100.0


def window_events(
    tl: Timeline, device_pid: Callable[[str], int], shift_us: float = 0.0
) -> Iterator[tuple[dict[str, Any], bool]]:
    """Each event with whether it is exact (numbers and plain strings only)."""
    for (device, kind), iv in tl.activity.items():
        pid = device_pid(device)
        tid = list(Kind).index(kind) + 1
        # CPU compute threads nest many events: their union is what the analysis uses.
        # Device kernels stay individual (kernel sizes feed the launch-bound finding).
        m = iv.merged() if device.startswith("CPU") else iv
        counts: list[int] = [1] * len(m)
        if len(m) > MAX_WINDOW_EVENTS:  # a bounded trace: the first kernels one by one
            order = np.argsort(iv.starts, kind="stable")  # (their sizes), the rest as
            s_sorted, e_sorted = iv.starts[order], iv.ends[order]  # busy runs + counts
            cut = MAX_WINDOW_EVENTS // 2
            # launch latency between kernels (< 100 µs, not an idle gap to the
            # analysis either) is bridged, so back-to-back kernels form one run
            rest = union_of(s_sorted[cut:], e_sorted[cut:] + BRIDGE_US)
            rest = Intervals(rest.starts, np.maximum(rest.starts, rest.ends - BRIDGE_US))
            first = np.searchsorted(s_sorted[cut:], rest.starts, side="left")
            counts = [1] * cut + np.diff(np.append(first, len(s_sorted) - cut)).tolist()
            m = Intervals(
                np.concatenate([s_sorted[:cut], rest.starts]),
                np.concatenate([e_sorted[:cut], rest.ends]),
            )
        for k, (s, e) in enumerate(zip(m.starts.tolist(), m.ends.tolist(), strict=True)):
            args: dict[str, Any] = {"device": device}
            if counts[k] != 1:
                args["n"] = int(counts[k])
            yield (
                {
                    "ph": "X",
                    "cat": CAT_DEVICE + kind.value,
                    "name": kind.value,
                    "pid": pid,
                    "tid": tid,
                    "ts": round(s + shift_us, 3),
                    "dur": round(e - s, 3),
                    "args": args,
                },
                True,
            )
    waits = tl.input_wait.merged()
    name = max(tl.input_wait_names, key=lambda n: tl.input_wait_names[n], default="input")
    for s, e in zip(waits.starts.tolist(), waits.ends.tolist(), strict=True):
        yield (
            {
                "ph": "X",
                "cat": CAT_INPUT,
                "name": name,
                "pid": HOST_PID,
                "tid": 2,
                "ts": round(s + shift_us, 3),
                "dur": round(e - s, 3),
            },
            False,
        )
