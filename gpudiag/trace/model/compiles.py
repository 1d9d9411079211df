"""Compilations of a run: when the framework traced, lowered or compiled a step, and for
which input shapes. One list per Timeline, filled by the recorder (gpudiag traces,
``record/compile_watch.py``) or by a reader from the compile spans a profiler wrote.

    tl.compiles.add(CompileEvent(t0, t1, "jit(train_step)", "compile", "jax.monitoring",
                                 shapes=[[32, 137], [32]]))
    tl.compiles.count("compile"), tl.compiles.seconds()

``kind`` is what the span is: ``compile`` (the backend compiling a program: XLA, Inductor),
``trace`` (the framework tracing Python into a graph: a tf.function trace, a JAX jaxpr),
``lower`` (JAX lowering to MLIR). ``source`` says how it was counted (docs/method.md,
"Compilation"): ``jax.monitoring``, ``tf.tracing``, ``call-time`` (inferred from a
train-function call far slower than the steady ones), ``torch.dynamo``, ``profile``.
``shapes``: the shapes of the step's inputs when it was compiled (None where unknown; a
dimension None where the framework left it open).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpudiag.trace.model.intervals import union_of

KINDS = ("compile", "trace", "lower")
MAX_COMPILES = 20_000  # compile spans kept per timeline (an eager JAX run compiles primitives)
MAX_LEAVES = 8  # input arrays whose shapes are kept per compile
MAX_RANK = 8  # dimensions kept per shape

Shapes = list[list[int | None]]


@dataclass
class CompileEvent:
    start: float  # µs, the timeline's clock
    end: float
    what: str  # the function compiled: "jit(train_step)", "__inference_one_step_on_data"
    kind: str = "compile"  # one of KINDS
    source: str = ""
    shapes: Shapes | None = None

    def to_args(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "source": self.source}
        if self.shapes is not None:
            out["shapes"] = self.shapes
        return out


def shapes_from(value: Any) -> Shapes | None:
    """Shapes as read back from JSON: a list of lists of ints or nulls; None otherwise."""
    if not isinstance(value, list):
        return None
    out: Shapes = []
    for shape in value[:MAX_LEAVES]:
        if not isinstance(shape, list):
            return None
        dims: list[int | None] = []
        for d in shape[:MAX_RANK]:
            if d is None or (isinstance(d, int) and not isinstance(d, bool)):
                dims.append(d)
            else:
                return None
        out.append(dims)
    return out


@dataclass
class Compiles:
    """The compile spans of one timeline, capped at ``MAX_COMPILES`` (``dropped`` counts
    the rest; their time is still summed in ``dropped_s``)."""

    events: list[CompileEvent] = field(default_factory=list)
    dropped: int = 0
    dropped_s: float = 0.0

    def add(self, ev: CompileEvent) -> None:
        if ev.kind not in KINDS or not ev.end >= ev.start:
            return
        if len(self.events) < MAX_COMPILES:
            self.events.append(ev)
        else:
            self.dropped += 1
            self.dropped_s += (ev.end - ev.start) / 1e6

    def extend(self, other: Compiles) -> None:
        for ev in other.events:
            self.add(ev)
        self.dropped += other.dropped
        self.dropped_s += other.dropped_s

    def __len__(self) -> int:
        return len(self.events)

    def count(self, kind: str = "compile") -> int:
        return sum(1 for ev in self.events if ev.kind == kind)

    def seconds(self) -> float:
        """Time spent tracing, lowering and compiling: the union of the spans (JAX's
        phases nest inside one another), plus what was dropped."""
        if not self.events:
            return self.dropped_s
        s = np.array([ev.start for ev in self.events])
        e = np.array([ev.end for ev in self.events])
        return union_of(s, e).total() / 1e6 + self.dropped_s

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """Start and end of every span (µs), in time order."""
        evs = sorted(self.events, key=lambda ev: ev.start)
        return np.array([ev.start for ev in evs]), np.array([ev.end for ev in evs])
