"""The tf.data pipeline as a TensorFlow profile shows it: its stages and where their time goes.

tf.data traces each stage's ``GetNext`` as an event named by the stage's place in the graph
(``Iterator::Model::ParallelMapV2::Zip[0]::FlatMap``); nested on one thread, a stage's own
(self) time is its duration less that of the stages it called. The stage with the most
self time is where the input time goes (the input remedies target it, not merely the first
map seen). A ``Prefetch`` or parallel stage whose self time is large is waiting for its
producer, which runs in a background thread the profile may not trace.

    stages = PipelineStages()
    stages.add(tid, name, args, ts, end)     # every tf.data event
    stages.into(timeline.pipeline)           # -> pipeline["stage_self_us"]
"""

from __future__ import annotations

import re
from typing import Any

from gpudiag.trace.source.chrome import MAX_NAME

MAX_STAGE_EVENTS = 100_000  # tf.data events kept for self time (a few per step per stage)
MAX_STAGES_SHOWN = 12  # stages kept in the report, by self time
INDEX_RE = re.compile(r"\[\d+\]")


def _stage_name(name: str, args: Any) -> str | None:
    long_name = args.get("long_name") if isinstance(args, dict) else None
    full = long_name if isinstance(long_name, str) else name
    if not full.startswith("Iterator::"):
        return None
    return INDEX_RE.sub("", full[:MAX_NAME])


class PipelineStages:
    """tf.data stage events per thread, reduced to self time per stage at the end."""

    def __init__(self) -> None:
        self.events: dict[Any, list[tuple[float, float, str]]] = {}
        self.count = 0

    def add(self, tid: Any, name: str, args: Any, ts: float, end: float) -> None:
        stage = _stage_name(name, args)
        if stage is None or self.count >= MAX_STAGE_EVENTS:
            return
        self.events.setdefault(tid, []).append((ts, end, stage))
        self.count += 1

    def self_times(self) -> dict[str, float]:
        """Self time (µs) per stage: its events' durations less their nested stages'."""
        total: dict[str, float] = {}
        for events in self.events.values():
            events.sort(key=lambda e: (e[0], -e[1]))
            stack: list[list[Any]] = []  # [end, stage, self]
            for ts, end, stage in events:
                while stack and stack[-1][0] <= ts:
                    done = stack.pop()
                    total[done[1]] = total.get(done[1], 0.0) + max(0.0, done[2])
                if stack and end <= stack[-1][0]:
                    stack[-1][2] -= end - ts
                stack.append([end, stage, end - ts])
            for done in stack:
                total[done[1]] = total.get(done[1], 0.0) + max(0.0, done[2])
        return total

    def into(self, pipeline: dict[str, Any]) -> None:
        times = self.self_times()
        if times:
            top = sorted(times.items(), key=lambda kv: -kv[1])[:MAX_STAGES_SHOWN]
            pipeline["stage_self_us"] = {k: round(v, 1) for k, v in top}


def note_pipeline(pipeline: dict[str, Any], name: str, args: Any) -> None:
    """Facts about the tf.data graph: sequential map, generator source, Python functions."""
    if name == "PyFunc" or name == "EagerPyFunc":
        pipeline["py_function"] = True
    if not isinstance(args, dict):
        return
    long_name = args.get("long_name")
    if not isinstance(long_name, str) or not long_name.startswith("Iterator::"):
        return
    long_name = long_name[:MAX_NAME]
    parts = long_name.split("::")
    chain = pipeline.setdefault("iterator_chains", [])
    if long_name not in chain and len(chain) < 20:
        chain.append(long_name)
    if "Generator" in parts:
        pipeline["generator"] = True
    if "Map" in parts or (parts[-1] == "MapAndBatch" and str(args.get("parallelism")) == "1"):
        pipeline["sequential_map"] = True
