"""The writer's fixed-shape events: the header, the host's track names, a group of steps, a
counter reading, a lint, the input pipeline's facts, a profiler window's span.

header_event(meta)          # the first event: format, version and the run's metadata
step_group_event(group)     # steps outside windows, one event per ``GROUP_S`` of them
counter_event("gpu_util", "GPU 0", ts_us, 97.0)
"""

from __future__ import annotations

from typing import Any

from gpudiag.trace.model.timeline import Metadata, RecordedLint
from gpudiag.trace.native.reader import (
    CAT_FINDING,
    CAT_PIPELINE,
    CAT_STEP_GROUP,
    CAT_WINDOW,
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


def counter_event(name: str, source: str, ts_us: float, value: float) -> dict[str, Any]:
    """One counter reading (``value`` of ``name`` from ``source``) on the host's track."""
    return {
        "ph": "C",
        "name": name,
        "pid": HOST_PID,
        "ts": round(ts_us, 3),
        "args": {source: round(float(value), 4)},
    }


def lint_event(f: RecordedLint, ts_us: float) -> dict[str, Any]:
    """A lint judged before the first step, as a global instant event."""
    return {
        "ph": "i",
        "s": "g",
        "cat": CAT_FINDING,
        "name": f.id,
        "pid": HOST_PID,
        "tid": 1,
        "ts": round(ts_us, 3),
        "args": {"severity": f.severity, "title": f.title, "evidence": f.evidence, "fix": f.fix},
    }


def pipeline_event(facts: dict[str, Any], ts_us: float) -> dict[str, Any]:
    """The input pipeline's facts (its stages, what they run), on the input-wait track."""
    return {
        "ph": "i",
        "s": "g",
        "cat": CAT_PIPELINE,
        "name": "pipeline",
        "pid": HOST_PID,
        "tid": 2,
        "ts": round(ts_us, 3),
        "args": facts,
    }


def window_event(start_us: float, end_us: float, what: str) -> dict[str, Any]:
    """A profiler window's span on the steps' track."""
    return {
        "ph": "X",
        "cat": CAT_WINDOW,
        "name": what,
        "pid": HOST_PID,
        "tid": 1,
        "ts": round(start_us, 3),
        "dur": round(end_us - start_us, 3),
    }
