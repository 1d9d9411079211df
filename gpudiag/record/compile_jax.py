"""JAX: every trace, lowering and compilation, as ``jax.monitoring`` reports it.

JAX records each phase of a ``jit`` cache miss as a monitoring event with the function's
name: ``/jax/core/compile/jaxpr_trace_duration`` (tracing Python into a jaxpr),
``…/jaxpr_to_mlir_module_duration`` (lowering) and ``…/backend_compile_duration`` (XLA
compiling). A listener registered for the run receives their start and end (time-span
listeners; the duration listener, ending now, on versions without them); the shapes are
those of the batch the train function was called with at that moment (``state, data``).

    watch = JaxCompileWatch(writer.compile)
    watch.start()        # registers the listener
    watch.stop()         # unregisters it
"""

from __future__ import annotations

import contextlib
from typing import Any

from gpudiag.record.compile_watch import CompileWatch, PeekingIterator, leaf_shapes, now_us
from gpudiag.trace.model.compiles import CompileEvent, Shapes

PREFIX = "/jax/core/compile/"
EVENT_KINDS = {
    PREFIX + "jaxpr_trace_duration": "trace",
    PREFIX + "jaxpr_to_mlir_module_duration": "lower",
    PREFIX + "backend_compile_duration": "compile",
}


class JaxCompileWatch(CompileWatch):
    source = "jax.monitoring"

    def __init__(self, emit: Any) -> None:
        super().__init__(emit)
        self._registered: tuple[Any, Any] | None = None

    def start(self) -> None:
        import jax.monitoring as jm

        span = getattr(jm, "register_event_time_span_listener", None)
        if span is not None:
            jm.register_event_time_span_listener(self._on_span)
            self._registered = (jm.unregister_event_time_span_listener, self._on_span)
        else:  # older JAX: durations only, the span ending now
            jm.register_event_duration_secs_listener(self._on_duration)
            self._registered = (
                getattr(jm, "unregister_event_duration_listener", None),
                self._on_duration,
            )

    def before_call(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        # Keras's JAX train function: (state, iterator) in fit, (state, data) elsewhere
        self.shapes = None
        if len(args) > 1 and hasattr(args[1], "__next__"):
            return (args[0], PeekingIterator(args[1], self), *args[2:])
        return super().before_call(args)

    def call_shapes(self, args: tuple[Any, ...]) -> Shapes | None:
        return leaf_shapes(args[1]) if len(args) > 1 else None

    def _on_span(self, event: str, start_time: float, end_time: float, **kw: str | int) -> None:
        kind = EVENT_KINDS.get(event)
        if kind is not None:
            self._add(kind, start_time * 1e6, end_time * 1e6, kw)

    def _on_duration(self, event: str, duration_secs: float, **kw: str | int) -> None:
        kind = EVENT_KINDS.get(event)
        if kind is not None:
            end = now_us()
            self._add(kind, end - duration_secs * 1e6, end, kw)

    def _add(self, kind: str, start_us: float, end_us: float, kw: dict[str, str | int]) -> None:
        what = str(kw.get("fun_name", "") or "jit")[:120]
        self.emit(CompileEvent(start_us, end_us, what, kind, self.source, self.shapes))

    def stop(self) -> None:
        registered, self._registered = self._registered, None
        if registered is None or registered[0] is None:
            return
        # already removed where the program cleared JAX's listeners itself
        with contextlib.suppress(Exception):
            registered[0](registered[1])
