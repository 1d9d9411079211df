"""TensorFlow: the train function's traces, and XLA's compilations seen in the call time.

What TensorFlow tells Python: each ``tf.function`` counts its traces
(``experimental_get_tracing_count``); Keras's train function holds two
(``multi_step_on_iterator`` and, inside it, ``one_step_on_data``, which carries
``jit_compile``). A call during which the count grew traced (and, under ``jit_compile=True``,
compiled with XLA). XLA compiles again for every new input shape without tracing again
(Keras traces with ``reduce_retracing``, so the shapes are left open) and tells Python
nothing of it (its counters are C++ metrics): those calls are found by their duration,
far slower than the run's typical call (``SlowCalls``), when the run ends. The shapes are
the input signature the function was traced for, an open dimension None (TensorFlow's
train function takes the iterator, not the batch).

    watch = TfCompileWatch(writer.compile, model, jit=True)
"""

from __future__ import annotations

from typing import Any

from gpudiag.record.compile_watch import CompileWatch, SlowCalls, leaf_shapes
from gpudiag.trace.model.compiles import CompileEvent, Shapes

MAX_DEPTH = 4  # closures searched for the tf.functions inside Keras's train function


def tf_functions(fn: Any, depth: int = 0, seen: set[int] | None = None) -> list[Any]:
    """The ``tf.function``\\s in ``fn`` and the closures it holds (Keras wraps them)."""
    seen = set() if seen is None else seen
    if fn is None or id(fn) in seen or depth > MAX_DEPTH:
        return []
    seen.add(id(fn))
    fn = getattr(fn, "_gpudiag_original", fn)  # CallTimer's wrapper
    out = [fn] if hasattr(fn, "experimental_get_tracing_count") else []
    inner = getattr(fn, "_python_function", None) or fn
    for cell in getattr(inner, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(value):
            out += tf_functions(value, depth + 1, seen)
    return out


def tracing_count(functions: list[Any]) -> int:
    return sum(int(f.experimental_get_tracing_count()) for f in functions)


class TfCompileWatch(CompileWatch):
    source = "tf.tracing"

    def __init__(self, emit: Any, model: Any, jit: bool) -> None:
        super().__init__(emit)
        self.model = model
        self.jit = jit
        self.functions: list[Any] | None = None
        self.traces = 0
        self.slow = SlowCalls()
        self.signature: Shapes | None = None
        self.what = "train_function"
        self.traced_calls: set[float] = set()

    def call_shapes(self, args: tuple[Any, ...]) -> Shapes | None:
        if self.signature is None and args:  # the iterator's element spec: open dims None
            self.signature = leaf_shapes(getattr(args[0], "element_spec", None))
        return self.signature

    def _functions(self) -> list[Any]:
        if self.functions is None:
            found = tf_functions(getattr(self.model, "train_function", None))
            self.functions = found
            names = [getattr(f, "__name__", "") or getattr(f, "_name", "") for f in found]
            self.what = next((n for n in reversed(names) if n), self.what)
        return self.functions

    def after_call(self, t0_us: float, t1_us: float) -> None:
        try:
            if self.jit:
                self.slow.add(t0_us, t1_us)
            functions = self._functions()
            if not functions:
                return
            count = tracing_count(functions)
            if count > self.traces:
                self.traces = count
                self.traced_calls.add(t0_us)
                kind = "compile" if self.jit else "trace"
                self.emit(CompileEvent(t0_us, t1_us, self.what, kind, self.source, self.shapes))
        except Exception as e:
            self.fault(e)
        finally:
            self.shapes = None

    def stop(self) -> None:
        """XLA's compilations without a trace: the calls far slower than the typical one."""
        if not self.jit:
            return
        for t0, t1 in self.slow.slow():
            if t0 not in self.traced_calls:
                self.emit(CompileEvent(t0, t1, self.what, "compile", "call-time", self.signature))
        self.slow = SlowCalls()
