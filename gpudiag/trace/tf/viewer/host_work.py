"""Two kinds of host work a TensorFlow / JAX profile shows on its host lines: compilations,
and TensorFlow ops run eagerly, one by one, on the training thread.

**Compilations.** JAX marks each XLA compilation on the calling thread
(``backend_compile_and_load``, ``backend_compile`` in older versions); XLA's backends mark
theirs on the compiling thread (``CpuCompiler::RunBackend``, ``GpuCompiler::RunBackend``),
which is how TensorFlow's ``jit_compile`` shows. The caller's span is kept where there is one
(the backend's nests in it); the shapes are not in the profile.

**Eager ops.** ``run_eagerly=True`` (or a custom loop without ``tf.function``) executes each
op from Python: ``EagerLocalExecute: MatMul`` on the training thread, no ``tf_Compute``
thread at all, where a compiled step shows one ``EagerLocalExecute: __inference_…`` call.
On a CPU-only profile these ops are the device's work (``EAGER_OPS_PER_STEP`` or more a
step: a compiled step runs two or three, Keras's optional-value bookkeeping).

    work = HostWork(budget.sink())
    if is_host_work(name):
        work.add(name, ts, end)             # a host event, on any thread
    work.into(timeline, cpu_ops, steps, cpu_only)   # once the pass is done
"""

from __future__ import annotations

from gpudiag.trace.model.compiles import CompileEvent
from gpudiag.trace.model.sink import IntervalSink, SinkTable
from gpudiag.trace.model.timeline import Timeline

CALLER_COMPILES = ("backend_compile_and_load", "backend_compile")
BACKEND_COMPILE_SUFFIX = "Compiler::RunBackend"
EAGER_PREFIX = "EagerLocalExecute: "
# a compiled Keras step runs 2-3 eager ops (OptionalHasValue, OptionalGetValue); a small
# MLP run eagerly ran ~200 a step (measured): 20 tells them apart with room on both sides
EAGER_OPS_PER_STEP = 20
MAX_EAGER_NAMES = 64


# ops of the iterator (input wait, counted as such) and Keras's optional-value bookkeeping
NOT_WORK = ("_", "Iterator", "Optional")


def is_host_work(name: str) -> bool:
    """Whether ``add`` wants the event (asked once per name: the answer is cached)."""
    return (
        name in CALLER_COMPILES
        or name.endswith(BACKEND_COMPILE_SUFFIX)
        or (name.startswith(EAGER_PREFIX) and not name[len(EAGER_PREFIX) :].startswith(NOT_WORK))
    )


class HostWork:
    def __init__(self, sink: IntervalSink) -> None:
        self.caller: list[CompileEvent] = []
        self.backend: list[CompileEvent] = []
        self.eager = sink  # the eager ops' spans
        self.eager_ops = 0

    def add(self, name: str, ts: float, end: float) -> None:
        if name.startswith(EAGER_PREFIX):
            self.eager_ops += 1
            self.eager.add(ts, end)
        elif name in CALLER_COMPILES:
            self.caller.append(CompileEvent(ts, end, name, "compile", "profile"))
        else:
            self.backend.append(CompileEvent(ts, end, name, "compile", "profile"))

    def into(self, tl: Timeline, cpu_ops: SinkTable[int], steps: int, cpu_only: bool) -> None:
        """The compilations into ``tl``; on an eager CPU-only run, the eager ops into the
        first replica's ops (the device), and the run said to be eager."""
        for ev in self.caller or self.backend:
            tl.compiles.add(ev)
        if not self.eager_run(steps):
            return
        tl.meta.config.update({"run_eagerly": True})
        tl.meta.extra["eager_ops_per_step"] = round(self.eager_ops / steps, 1)
        if cpu_only:
            ops = cpu_ops.get(0)
            if ops is not None:
                for s, e in zip(*(a.tolist() for a in self.eager.arrays()), strict=True):
                    ops.add(s, e)
            tl.meta.limitations.append(
                "eager run: device time is the busy time of the ops run one by one on the "
                "training thread"
            )

    def eager_run(self, steps: int) -> bool:
        return steps > 0 and self.eager_ops >= EAGER_OPS_PER_STEP * steps
