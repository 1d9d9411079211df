"""What the device and host did over each profiled window, binned for drawing. Pure.

    strips = activity_strips(timelines, labels, per_step_rows)
    strips[0]["windows"][0]["devices"][0]["compute"]   # busy fraction per bin, 0..1

A window is a run of consecutive profiled steps. Each is cut into ``BINS`` equal bins; per
bin and device, the fraction of time the device computed, ran collectives or copied; the
fraction the host waited for input; the steps' edges; and host CPU samples inside the window.
Sizes are bounded whatever the trace (ranks, windows, devices, bins and points are capped),
so the HTML report and the JSON stay small.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpudiag.analyze.breakdown import CATEGORIES, profiled_steps, row_dicts
from gpudiag.trace.model.timeline import COPY_KINDS, Intervals, Kind, Timeline, union_many

BINS = 160
MAX_RANKS = 8
MAX_WINDOWS = 3
MAX_DEVICES = 8
MAX_STEPS = 64
MAX_POINTS = 200


def coverage(iv: Intervals, edges: np.ndarray) -> np.ndarray:
    """Fraction of each bin [edges[i], edges[i+1]) covered by the intervals."""
    width = np.diff(edges)
    frac = np.diff(iv.covered_until(edges)) / np.where(width > 0, width, 1.0)
    return np.clip(frac, 0.0, 1.0)


def _windows(tl: Timeline) -> list[np.ndarray]:
    """Runs of consecutive profiled steps (indices into ``tl.steps``)."""
    idx = profiled_steps(tl)
    if not idx.size:
        return []
    cuts = np.nonzero(np.diff(idx) > 1)[0] + 1
    return np.split(idx, cuts)[:MAX_WINDOWS]


def _r(a: np.ndarray) -> list[float]:
    return [round(float(x), 3) for x in a]


def _window(tl: Timeline, idx: np.ndarray) -> dict[str, Any]:
    lo = float(tl.steps.start[idx[0]])
    hi = float(tl.steps.end[idx[-1]])
    edges = np.linspace(lo, hi, BINS + 1)
    devices = []
    for dev in tl.devices[:MAX_DEVICES]:
        devices.append(
            {
                "device": dev,
                "compute": _r(coverage(tl.device_activity(dev, Kind.COMPUTE), edges)),
                "sync": _r(coverage(tl.device_activity(dev, Kind.COLLECTIVE), edges)),
                "transfer": _r(
                    coverage(union_many([tl.device_activity(dev, k) for k in COPY_KINDS]), edges)
                ),
            }
        )
    steps = [
        {
            "index": int(tl.steps.index[i]),
            "start_ms": round((float(tl.steps.start[i]) - lo) / 1000.0, 3),
            "end_ms": round((float(tl.steps.end[i]) - lo) / 1000.0, 3),
        }
        for i in idx[:MAX_STEPS]
    ]
    cpu = []
    for c in tl.counter("cpu_total")[:1]:
        inside = (c.ts >= lo) & (c.ts <= hi)
        ts, vals = c.ts[inside][:MAX_POINTS], c.values[inside][:MAX_POINTS]
        cpu = [
            [round((float(t) - lo) / 1000.0, 3), round(float(v), 1)]
            for t, v in zip(ts, vals, strict=True)
        ]
    return {
        "duration_ms": round((hi - lo) / 1000.0, 3),
        "bins": BINS,
        "devices": devices,
        "input_wait": _r(coverage(tl.input_wait, edges)),
        "steps": steps,
        "cpu_total_pct": cpu,
        "first_step": int(tl.steps.index[idx[0]]),
        "last_step": int(tl.steps.index[idx[-1]]),
        "median_step_ms": round(
            float(np.median(tl.steps.end[idx] - tl.steps.start[idx])) / 1000.0, 3
        ),
    }


def _window_shares(tl: Timeline, idx: np.ndarray, rows: np.ndarray) -> dict[str, float]:
    """The window's breakdown: its steps' shares weighted by step duration."""
    if not len(rows) or len(rows) != idx.size:
        return {}
    dur = (tl.steps.end[idx] - tl.steps.start[idx]).astype(float)
    total = float(dur.sum()) or 1.0
    mean = (rows * dur[:, None]).sum(axis=0) / total
    return {k: round(float(v), 4) for k, v in zip(CATEGORIES, mean, strict=True)}


def activity_strips(
    timelines: list[Timeline], labels: list[str], per_step: list[np.ndarray]
) -> list[dict[str, Any]]:
    """Per rank (the first ``MAX_RANKS``): its profiled windows, binned, and its per-step
    breakdown rows (``per_step[i]``, as the breakdown computed them)."""
    out = []
    for tl, label, rows in list(zip(timelines, labels, per_step, strict=True))[:MAX_RANKS]:
        windows = []
        offset = 0  # per-step rows follow the profiled steps in order
        for idx in _windows(tl):
            win = _window(tl, idx)
            win["shares"] = _window_shares(tl, idx, rows[offset : offset + idx.size])
            offset += idx.size
            windows.append(win)
        if not windows:
            continue
        out.append(
            {
                "rank": label,
                "windows": windows,
                "per_step": [
                    {k: round(v, 4) for k, v in row.items()} for row in row_dicts(rows, MAX_STEPS)
                ],
            }
        )
    return out
