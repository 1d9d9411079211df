"""Where a TensorFlow profile's device time lives: CPU replicas, worker devices.

add_cpu_replicas(tl, ops_by_replica, shards, collectives)   # CPU-only profile
timelines = split_by_device(base, device_steps, budget)    # multi-worker xplane
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpudiag.trace.model.sink import IntervalBudget, IntervalSink, SinkTable
from gpudiag.trace.model.steps_infer import ensure_steps
from gpudiag.trace.model.timeline import Intervals, Kind, Metadata, Timeline, union_of
from gpudiag.trace.names.comm import classify
from gpudiag.trace.names.facts import RunFacts


def add_cpu_replicas(
    tl: Timeline, ops: SinkTable[int], shards: IntervalSink, coll: IntervalSink
) -> None:
    """CPU-only profile: each replica's own op stream is its device.

    Replicas share the same cores, so the union of all compute threads would hide one
    replica's wait in the all-reduce behind another's work. Ops carry their replica in
    ``long_name`` (``replica_N/…``; replica 0 unprefixed). Each all-reduce participant
    (one CollectiveReduceV2 event) is given to the free replica whose own work ended last
    before it: the one whose gradients just became ready.
    """
    replicas = max(ops.sinks, default=0) + 1
    tl.meta.replicas = tl.meta.replicas or (replicas if replicas > 1 else None)
    coll_s, coll_e = coll.arrays()
    if replicas == 1:
        op_s, op_e = ops.sinks[0].arrays() if ops.sinks else (np.zeros(0), np.zeros(0))
        shard_s, shard_e = shards.arrays()
        tl.add_activity(
            "CPU", Kind.COMPUTE, np.concatenate([op_s, shard_s]), np.concatenate([op_e, shard_e])
        )
        if coll_s.size:
            tl.add_activity("CPU", Kind.COLLECTIVE, coll_s, coll_e)
        tl.meta.limitations.append(
            "CPU-only profile: device time is the busy time of the framework's op threads"
        )
        return
    names = [f"CPU replica {r}" for r in range(replicas)]
    merged = {
        r: union_of(*ops.sinks[r].arrays()) if r in ops.sinks else Intervals()
        for r in range(replicas)
    }
    busy_until = [-np.inf] * replicas
    assigned: list[tuple[list[float], list[float]]] = [([], []) for _ in range(replicas)]
    order = np.lexsort((coll_e, coll_s))
    for s, e in zip(coll_s[order].tolist(), coll_e[order].tolist(), strict=True):
        free = [r for r in range(replicas) if busy_until[r] <= s] or list(range(replicas))

        def last_work_end(r: int, s: float = s) -> float:
            m = merged[r]
            i = int(np.searchsorted(m.ends, s, side="right"))
            return float(m.ends[i - 1]) if i else -np.inf

        r = max(free, key=last_work_end)
        assigned[r][0].append(s)
        assigned[r][1].append(e)
        busy_until[r] = e
    for r, name in enumerate(names):
        m = merged[r]
        tl.add_activity(name, Kind.COMPUTE, m.starts, m.ends)
        if assigned[r][0]:
            tl.add_activity(name, Kind.COLLECTIVE, *assigned[r])
    tl.meta.limitations.append(
        f"CPU-only profile with {replicas} replicas on shared cores: each replica's device "
        "time is the busy time of its own ops"
    )


def split_by_device(
    base: Timeline, device_steps: SinkTable[str], budget: IntervalBudget
) -> list[Timeline]:
    """Devices with their own step line (multi-worker xplanes) become one Timeline each."""
    out = []
    for device in sorted((d for d, s in device_steps.sinks.items() if len(s)), key=device_order):
        tl = Timeline(
            meta=Metadata(
                **{
                    **base.meta.__dict__,
                    "devices": [],
                    "limitations": list(base.meta.limitations),
                    "extra": {**base.meta.extra, "worker_device": device},
                }
            )
        )
        for (d, kind), iv in base.activity.items():
            if d == device:
                tl.add_activity(d, kind, iv.starts, iv.ends)
        if device in base.kernel_counts:
            tl.kernel_counts[device] = base.kernel_counts[device]
        steps = device_steps.sinks[device]
        starts, ends = steps.arrays()
        tl.add_steps(steps.column(0).astype(np.int64), starts, ends)
        clipped = base.input_wait.clip(float(starts.min()), float(ends.max()))
        tl.input_wait = Intervals(clipped.starts, clipped.ends)
        tl.input_wait_names = dict(base.input_wait_names)
        tl.pipeline = dict(base.pipeline)
        budget.finish(tl)
        out.append(ensure_steps(tl.freeze()))  # records that steps came from markers
    return out


def device_order(device: str) -> tuple[str, int]:
    kind, _, num = device.partition(" ")
    return (kind, int(num) if num.isdigit() else 0)


def device_facts(facts: RunFacts, kind: Kind, name: str, dur: float, args: Any) -> None:
    """Precision, communication library and training evidence of one device event."""
    if kind is Kind.COLLECTIVE:
        comm = classify(name)
        facts.comm(comm.library if comm else "other", dur)
    elif kind is Kind.COMPUTE:
        facts.kernel(name, dur, op=args.get("tf_op") if isinstance(args, dict) else None)
    if isinstance(args, dict) and not facts.training_evidence:
        scope = args.get("tf_op")  # training evidence in the op's scope (gradient_tape/...)
        if isinstance(scope, str):
            facts.scopes_seen = True
        else:
            # TF 2.3-2.5 GPU kernels name their op in "annotation" / "level 0"
            scope = (
                args.get("long_name")
                or args.get("kernel_name")
                or args.get("annotation")
                or args.get("level 0")
            )
        if isinstance(scope, str):
            facts.scope(scope)
