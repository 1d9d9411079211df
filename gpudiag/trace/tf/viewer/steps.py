"""A TensorFlow step as the device says it is, begun where the host began it.

TensorFlow dispatches asynchronously: the host's ``train_function`` (or ``train N`` marker)
returns while the GPU still runs the step's kernels, so a step cut at the host's return is
0.44-0.53x of the device's own ``Steps`` line on real Keras GPU profiles, and every share of
it is inflated. xprof takes the device step (``StepDetails::StepTime``: the device marker,
unless the host's encloses it). Here each device step (merged over devices by its number)
begins at the host step that dispatched it, the last host step that started before it and
after the previous step ended, and ends where the later of the two ends.

    nums, starts, ends = align_device_steps((host_nums, host_starts, host_ends), device_steps)
"""

from __future__ import annotations

import numpy as np

from gpudiag.trace.model.sink import IntervalSink
from gpudiag.trace.model.timeline import Intervals, union_of

# gaps between host events shorter than this are bridged: untraced time is about stretches
# of a fifth of a step, and a busy host thread then takes a few spans, not one per op (the
# figure can only come out lower, never higher: a bridged gap counts as traced)
HOST_BRIDGE_US = 100.0

Steps3 = tuple[np.ndarray, np.ndarray, np.ndarray]


def host_spans(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """Traced host activity as few spans: the union, gaps under ``HOST_BRIDGE_US`` closed."""
    if not starts.size:
        return Intervals()
    u = union_of(starts, ends + HOST_BRIDGE_US)
    return Intervals(u.starts, np.maximum(u.starts, u.ends - HOST_BRIDGE_US))


def _merged_device_steps(device_steps: dict[str, IntervalSink]) -> Steps3:
    """One step per step number over all devices: first start to last end."""
    nums = np.concatenate([s.column(0).astype(np.int64) for s in device_steps.values()])
    starts = np.concatenate([s.arrays()[0] for s in device_steps.values()])
    ends = np.concatenate([s.arrays()[1] for s in device_steps.values()])
    keys, inverse = np.unique(nums, return_inverse=True)
    lo = np.full(keys.size, np.inf)
    hi = np.full(keys.size, -np.inf)
    np.minimum.at(lo, inverse, starts)
    np.maximum.at(hi, inverse, ends)
    order = np.argsort(lo, kind="stable")
    return keys[order], lo[order], hi[order]


def align_device_steps(host: Steps3 | None, device_steps: dict[str, IntervalSink]) -> Steps3:
    """Device steps, each begun by the host step that dispatched it (when there is one) and
    numbered as the host numbers it (``train N`` markers are the batch numbers the callback
    matches its own clock with); a device step no host step began keeps a number after
    them."""
    nums, starts, ends = _merged_device_steps(device_steps)
    if host is None or not host[1].size:
        return nums, starts, ends
    order = np.argsort(host[1], kind="stable")
    h_num, h_start, h_end = host[0][order], host[1][order], host[2][order]
    begin = starts.copy()
    end = ends.copy()
    number = np.full(nums.size, -1, dtype=np.int64)
    prev_end = -np.inf
    used = -1
    for i in range(nums.size):
        j = int(np.searchsorted(h_start, starts[i], side="right")) - 1
        if j > used:  # a host step not yet matched, dispatched before the device began
            begin[i] = h_start[j]
            end[i] = max(end[i], h_end[j])
            number[i] = h_num[j]
            used = j
        begin[i] = max(begin[i], prev_end)
        prev_end = end[i]
    free = number < 0
    if free.any():
        first = int(number.max()) + 1
        number[free] = np.arange(first, first + int(free.sum()))
    return number, begin, end
