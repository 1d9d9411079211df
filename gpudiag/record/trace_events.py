"""The writer's fixed-shape events: the header, the host's track names, a group of steps.

header_event(meta)          # the first event: format, version and the run's metadata
step_group_event(group)     # steps outside windows, one event per ``GROUP_S`` of them
"""

from __future__ import annotations

from typing import Any

from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.native.reader import (
    CAT_STEP_GROUP,
    FORMAT_NAME,
    FORMAT_VERSION,
    HOST_PID,
    META_EVENT,
)

HOST_NAMES: tuple[dict[str, Any], ...] = (
    {
        "ph": "M",
        "name": "process_name",
        "pid": HOST_PID,
        "tid": 0,
        "args": {"name": "host (gpudiag)"},
    },
    {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": 1, "args": {"name": "steps"}},
    {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": 2, "args": {"name": "input wait"}},
    {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": 4, "args": {"name": "compilation"}},
)


def header_event(meta: Metadata) -> dict[str, Any]:
    header = {k: v for k, v in meta.__dict__.items() if k != "source"}
    header["config"] = meta.config.to_dict()
    return {
        "ph": "M",
        "name": META_EVENT,
        "pid": 0,
        "tid": 0,
        "args": {"format": FORMAT_NAME, "version": FORMAT_VERSION, **header},
    }


def step_group_event(group: list[tuple[float, float, int]]) -> dict[str, Any]:
    """Pending steps ``(start, end, batches)`` as one aggregate: span, batches, summed step
    time, per-batch median, p90 and max."""
    per = sorted((e - s) / b for s, e, b in group)
    n = len(per)
    return {
        "ph": "X",
        "cat": CAT_STEP_GROUP,
        "name": f"{n} steps",
        "pid": HOST_PID,
        "tid": 1,
        "ts": round(group[0][0], 3),
        "dur": round(group[-1][1] - group[0][0], 3),
        "args": {
            "steps": n,
            "batches": sum(b for _, _, b in group),
            "busy": round(sum(e - s for s, e, _ in group), 3),
            "p50": round(per[n // 2], 3),
            "p90": round(per[min(n - 1, (9 * n) // 10)], 3),
            "max": round(per[-1], 3),
        },
    }
