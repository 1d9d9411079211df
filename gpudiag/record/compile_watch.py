"""Counting the step's compilations while ``fit`` runs: the base every backend's watch
starts from, and what they share (the shapes of a call's inputs, slow calls).

Each Keras backend offers something else (docs/method.md, "Compilation"): JAX reports every
trace, lowering and compilation to ``jax.monitoring`` listeners (``compile_jax.py``);
TensorFlow counts the traces of its ``tf.function``\\s and tells Python nothing of XLA's
compilations, which show as train-function calls far slower than the steady ones
(``compile_tf.py``); ``torch.compile`` counts its graphs (``compile_torch.py``). The backend's
adapter makes its watch (``RecordBackend.compile_watch``); ``CallTimer`` calls
``before_call``/``after_call`` around each train-function call, so a compilation is known
with the shapes of the batch that caused it; each one goes to the trace as it is found.

    watch = backend.compile_watch(model, writer.compile)    # None: nothing to count
    watch.start(); ...; watch.stop()                         # stop writes what is left

A watch never breaks training: every fault is caught, and the first one is kept in
``problem`` (the session records it as a limitation).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gpudiag.trace.model.compiles import MAX_LEAVES, MAX_RANK, CompileEvent, Shapes

if TYPE_CHECKING:
    from gpudiag.record.writer import TraceWriter

Emit = Callable[[CompileEvent], None]


def leaf_shapes(value: Any, limit: int = MAX_LEAVES) -> Shapes | None:
    """The shapes of the arrays in a batch (nested tuples, lists, dicts), at most ``limit``
    of them; a dimension the framework left open is None. None when nothing has a shape."""
    out: Shapes = []
    stack = [value]
    while stack and len(out) < limit:
        v = stack.pop(0)
        if isinstance(v, dict):
            stack[:0] = list(v.values())
        elif isinstance(v, tuple | list):
            stack[:0] = list(v)
        elif v is not None and hasattr(v, "shape"):
            with contextlib.suppress(Exception):
                dims = list(v.shape)[:MAX_RANK]
                out.append([None if d is None else int(d) for d in dims])
    return out or None


class CompileWatch:
    """The base: counts nothing. Subclasses override ``start``, ``call_shapes``,
    ``after_call`` and ``stop`` as their framework allows."""

    source = ""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self.shapes: Shapes | None = None  # the inputs of the call under way
        self.problem: str | None = None
        self.emitted = 0

    def start(self) -> None:
        """Begin listening (called when training begins)."""

    def call_shapes(self, args: tuple[Any, ...]) -> Shapes | None:
        """The shapes of the step's inputs among the train function's arguments."""
        return None

    def before_call(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Read the call's shapes; returns the arguments to call with (a watch may wrap
        an iterator argument to see the batches it yields)."""
        try:
            self.shapes = self.call_shapes(args)
        except Exception as e:
            self.fault(e)
        return args

    def after_call(self, t0_us: float, t1_us: float) -> None:
        """The train-function call took [t0_us, t1_us] (wall clock, µs)."""
        self.shapes = None

    def stop(self) -> None:
        """Stop listening and write what is still held (called before the trace closes)."""

    def emit(self, ev: CompileEvent) -> None:
        try:
            self._emit(ev)
            self.emitted += 1
        except Exception as e:
            self.fault(e)

    def fault(self, e: BaseException) -> None:
        if self.problem is None:
            self.problem = (
                f"compilations not counted from then on ({self.source}: {type(e).__name__}: {e})"
            )


class PeekingIterator:
    """An iterator handing on another's items, telling ``watch`` the shapes of each one
    (Keras's JAX train function pulls its batch from an iterator inside the call)."""

    def __init__(self, it: Any, watch: CompileWatch) -> None:
        self._it = it
        self._watch = watch

    def __iter__(self) -> PeekingIterator:
        return self

    def __next__(self) -> Any:
        value = next(self._it)
        with contextlib.suppress(Exception):
            self._watch.shapes = leaf_shapes(value)
        return value


def start_watch(
    make: Callable[[Emit], CompileWatch | None], writer: TraceWriter
) -> CompileWatch | None:
    """The watch ``make`` gives (a backend's ``compile_watch``) writing to ``writer``,
    started; None where there is none or it cannot start (said in the trace: the run is
    recorded all the same)."""
    try:
        watch = make(writer.compile)
        if watch is not None:
            watch.start()
        return watch
    except Exception as e:
        writer.update_meta(limitations=[f"compilations not counted ({type(e).__name__}: {e})"])
        return None


def now_us() -> float:
    return time.time() * 1e6


# A call at least SLOW_FACTOR times the run's typical call (its 10th percentile) and at
# least SLOW_MIN_S long compiled: a step of the same shape does not take 10x its steady time
# unless it waits for something, and the compile calls measured here took 100-2500x.
SLOW_FACTOR = 10.0
SLOW_MIN_S = 0.05
SLOW_CANDIDATES = 5000  # slow calls kept until the run ends (the rest are counted)
_BINS_PER_DECADE = 20
_MIN_LOG = -7  # 0.1 µs


class SlowCalls:
    """Train-function calls far slower than the run's typical call, judged when the run
    ends (the first epoch of a run whose shapes change may compile at every step, so no
    running median would do). Bounded: a log-scale histogram of every call's duration and
    the calls longer than ``SLOW_MIN_S``."""

    def __init__(self) -> None:
        self.hist = [0] * (_BINS_PER_DECADE * 10)
        self.calls = 0
        self.candidates: list[tuple[float, float]] = []
        self.skipped = 0

    def add(self, t0_us: float, t1_us: float) -> None:
        dur_s = max(1e-7, (t1_us - t0_us) / 1e6)
        b = int((math.log10(dur_s) - _MIN_LOG) * _BINS_PER_DECADE)
        self.hist[min(max(b, 0), len(self.hist) - 1)] += 1
        self.calls += 1
        if dur_s >= SLOW_MIN_S:
            if len(self.candidates) < SLOW_CANDIDATES:
                self.candidates.append((t0_us, t1_us))
            else:
                self.skipped += 1

    def typical_s(self, q: float = 0.10) -> float | None:
        """The ``q`` quantile of the call durations (upper edge of its bin)."""
        if not self.calls:
            return None
        want = q * self.calls
        seen = 0
        for i, n in enumerate(self.hist):
            seen += n
            if seen >= want and n:
                return float(10 ** (_MIN_LOG + (i + 1) / _BINS_PER_DECADE))
        return None

    def slow(self) -> list[tuple[float, float]]:
        """The calls that compiled, by their duration against the typical call."""
        typical = self.typical_s()
        if typical is None:
            return []
        floor = max(SLOW_MIN_S, SLOW_FACTOR * typical) * 1e6
        return [(a, b) for a, b in self.candidates if b - a >= floor]
