"""How many devices of one timeline the per-device analyses look at. Pure.

Per-device shares, idle gaps and the in-process straggler test each cost a row per device
per profiled step, so a trace of D devices and S steps costs D x S, and a small trace can
make both large: 255 KB of Kineto JSON, one kernel per step on each of 2,000 devices (each
step on another device) did not finish in 180 s. A timeline is analysed over its busiest
devices, at most ``MAX_DEVICES`` and at most ``MAX_DEVICE_STEPS`` devices x steps; the
others are left out and the report says how many, and what share of the device time they
held. Real traces are far inside: a host has 1 to 16 devices, and a trace of S profiled
steps on D devices holds at least D x S intervals, so the interval bound (2 million) keeps
a real one's D x S under it.

    tl = within_device_budget(tl)     # the same timeline, or one over fewer devices
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpudiag.analyze.breakdown import profiled_steps
from gpudiag.trace.model.timeline import Intervals, Timeline

MAX_DEVICES = 1024  # 64x the largest host; a TPU slice read as one trace has 256 chips
MAX_DEVICE_STEPS = 4_000_000  # rows of the per-device analyses: ~2 s of numpy, 32 MB a table


def device_limit(tl: Timeline) -> int:
    """The most devices ``tl``'s per-device analyses may cover."""
    steps = max(1, int(profiled_steps(tl).size))
    return max(1, min(MAX_DEVICES, MAX_DEVICE_STEPS // steps))


def within_device_budget(tl: Timeline) -> Timeline:
    """``tl`` itself when its devices fit, else a copy over its busiest ``device_limit``
    devices (by time busy), with a limitation line saying what was left out."""
    devices = tl.devices
    limit = device_limit(tl)
    if len(devices) <= limit:
        return tl
    busy = {d: 0.0 for d in devices}
    for (device, _), iv in tl.activity.items():
        busy[device] += _length(iv)
    kept = set(sorted(devices, key=lambda d: -busy[d])[:limit])
    total = sum(busy.values())
    left = sum(v for d, v in busy.items() if d not in kept)
    share = f"{100 * left / total:.0f}%" if total > 0 else "none"
    note = (
        f"{len(devices):,} devices: the per-device analysis covers the {limit:,} busiest; "
        f"the other {len(devices) - limit:,} are left out ({share} of the device time; "
        f"a bound of {MAX_DEVICES:,} devices and {MAX_DEVICE_STEPS:,} devices x steps)"
    )
    meta = dataclasses.replace(
        tl.meta,
        devices=[d for d in tl.meta.devices if d in kept],
        limitations=[*tl.meta.limitations, note],
    )
    return dataclasses.replace(
        tl,
        meta=meta,
        activity={k: v for k, v in tl.activity.items() if k[0] in kept},
        kernel_counts={k: v for k, v in tl.kernel_counts.items() if k in kept},
    )


def _length(iv: Intervals) -> float:
    return float(np.sum(iv.ends - iv.starts)) if len(iv) else 0.0
