"""A TPU (or any stream-less device)'s "XLA Ops" line: the device's activity, read apart.

line = XlaLine(budget, kernel_cache)
line.add(name, ts, end, args, collectives)   # for every event of the line
line.into(timeline, device, facts, collectives)
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from gpudiag.trace.model.sink import MAX_KEYS, IntervalBudget, SinkTable
from gpudiag.trace.model.timeline import Kind, Timeline
from gpudiag.trace.names.comm import Comm, async_phase, classify_op, is_copy
from gpudiag.trace.names.facts import RunFacts, is_training_name
from gpudiag.trace.names.name_scan import NameCache
from gpudiag.trace.source.chrome import MAX_NAME


class XlaLine:
    """One device's "XLA Ops" line, kept apart until the end of the file: it is the device's
    activity only when the device has no stream lines (TPU; on GPUs it repeats them).

    Async collectives run from their ``*-start`` to their ``*-done``; the halves pair up in
    time order, so they are kept (times and which collective) to be sorted at the end. All
    other ops are summed as they come."""

    def __init__(self, budget: IntervalBudget, kernel_cache: NameCache) -> None:
        self.ops: SinkTable[Kind] = SinkTable(budget)
        self.halves = budget.sink(mergeable=False, columns="qb")  # collective, done?
        self.facts = RunFacts(_kernel_cache=kernel_cache)
        self.count = 0  # compute ops
        self.first_scope = (math.inf, "")  # earliest training scope: (ts, text)
        self.scopes_seen = False

    def add(
        self, name: str, ts: float, end: float, args: Any, collectives: dict[Comm, int]
    ) -> None:
        category = ""
        if isinstance(args, dict):
            self._scope(ts, args)
            cat = args.get("hlo_category")
            category = cat if isinstance(cat, str) else ""
        if is_copy(name, category):  # copy-start/copy-done: data moves, nothing computes
            self.ops.add(Kind.COPY, ts, end)
            return
        comm = classify_op(name, category)
        if comm is None:
            long_name = args.get("long_name") if isinstance(args, dict) else None
            long_name = long_name[:MAX_NAME] if isinstance(long_name, str) else ""
            self.facts.kernel(name, end - ts, long_name)
            self.count += 1
            self.ops.add(Kind.COMPUTE, ts, end)
            return
        phase = async_phase(name)
        if phase is not None:
            which = collectives.get(comm)
            if which is None and len(collectives) < MAX_KEYS:
                which = collectives[comm] = len(collectives)
            if which is not None:
                self.halves.add(ts, end, which, phase == "done")
                return
        self.facts.comm(comm.library, end - ts)
        self.ops.add(Kind.COLLECTIVE, ts, end)

    def _scope(self, ts: float, args: dict[str, Any]) -> None:
        """Training evidence in an op's scope: the earliest op's, as if read in time order."""
        scope = args.get("tf_op")
        if isinstance(scope, str):
            self.scopes_seen = True
        else:
            scope = args.get("long_name") or args.get("kernel_name")
        if isinstance(scope, str) and ts < self.first_scope[0] and is_training_name(scope):
            self.first_scope = (ts, scope[:80])

    def into(
        self, tl: Timeline, device: str, facts: RunFacts, collectives: dict[Comm, int]
    ) -> None:
        """Add the line to ``tl`` as the device's activity, and its facts to ``facts``."""
        if not facts.training_evidence and self.first_scope[1]:
            facts.training_evidence = self.first_scope[1]
        facts.scopes_seen = facts.scopes_seen or self.scopes_seen
        absorb(facts, self.facts)
        library = {i: comm.library for comm, i in collectives.items()}
        starts, ends = self.halves.arrays()
        which = self.halves.column(0)
        done = self.halves.column(1)
        pending: dict[int, deque[tuple[float, float]]] = {}
        pairs: tuple[list[float], list[float]] = ([], [])
        for i in np.argsort(starts, kind="stable"):
            c, ts, end = int(which[i]), float(starts[i]), float(ends[i])
            if not done[i]:
                pending.setdefault(c, deque()).append((ts, end))
                continue
            if pending.get(c):
                ts = pending[c].popleft()[0]
            pairs[0].append(ts)
            pairs[1].append(end)
            facts.comm(library[c], end - ts)
        for c, issued in pending.items():  # issued, never awaited in the profile
            for ts, end in issued:
                pairs[0].append(ts)
                pairs[1].append(end)
                facts.comm(library[c], end - ts)
        for kind in (Kind.COMPUTE, Kind.COLLECTIVE, Kind.COPY):
            sink = self.ops.sinks.get(kind)
            if sink is not None:
                tl.add_activity(device, kind, *sink.arrays())
            if kind is Kind.COLLECTIVE and pairs[0]:
                tl.add_activity(device, kind, *pairs)
        tl.kernel_counts[device] = self.count


def absorb(facts: RunFacts, part: RunFacts) -> None:
    """Add the kernel and communication sums of ``part`` to ``facts``."""
    facts.kernel_us += part.kernel_us
    facts.tensor_core_us += part.tensor_core_us
    facts.compiled_us += part.compiled_us
    facts.layout_us += part.layout_us
    for label, us in part.precision_us.items():
        facts.precision_us[label] = facts.precision_us.get(label, 0.0) + us
    for library, us in part.comm_us.items():
        facts.comm(library, us)
