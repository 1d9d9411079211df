"""Times each call of ``model.train_function`` itself, wrapping it once per fit.

A step measured between DiagnoseCallback's own batch hooks misses what other callbacks do
before or after it; the call interval does not depend on callback order.

    calls = CallTimer(model, wait=backend.wait_for, completion=backend.completion)
    ...                                   # fit calls model.train_function
    calls.take()                          # (start_us, end_us) of the last call, or None
    calls.restore()                       # the original train_function back
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpudiag.record.compile_watch import CompileWatch


class CallTimer:
    """Wraps ``model.train_function`` to time the call itself.

    A step measured between DiagnoseCallback's own batch hooks misses what other callbacks
    do before or after it; the call interval (plus batch-begin to next batch-begin for the
    whole cycle) does not depend on callback order. ~1 µs per step.

    ``wait``: called with the call's result while ``sync`` is set (inside profiler windows):
    on a backend that dispatches steps asynchronously, it waits for the device, so a
    profiled step's markers hold its device work (``RecordBackend.wait_for``; False where
    it did not wait).
    ``completion``: otherwise called with the result, without blocking, for a function that
    waits for it (``RecordBackend.completion``), kept in ``done`` for the step's record.
    ``watch``: told of each call's arguments and span, to count the step's compilations
    with the shapes that caused them (``record/compile_watch.py``).
    """

    def __init__(
        self,
        model: Any,
        wait: Callable[[Any], bool] | None = None,
        completion: Callable[[Any], Callable[[], Any] | None] | None = None,
        watch: CompileWatch | None = None,
    ) -> None:
        self.model = model
        self.last: tuple[float, float] | None = None
        self.done: Callable[[], Any] | None = None  # waits for the last call's device work
        self.sync = False
        self._original: Any = None
        fn = getattr(model, "train_function", None)
        if fn is None or getattr(fn, "_gpudiag_timed", False):
            return
        import time

        clock = time.time

        def timed(*args: Any, **kwargs: Any) -> Any:
            if watch is not None:
                args = watch.before_call(args)
            t0 = clock()
            try:
                out = fn(*args, **kwargs)
                waited = False
                if self.sync and wait is not None:
                    with contextlib.suppress(Exception):
                        waited = wait(out)
                if not waited and completion is not None:
                    self.done = None
                    with contextlib.suppress(Exception):
                        self.done = completion(out)
                return out
            finally:
                self.last = (t0 * 1e6, clock() * 1e6)
                if watch is not None:
                    watch.after_call(*self.last)

        timed._gpudiag_timed = True  # type: ignore[attr-defined]
        timed._gpudiag_original = fn  # type: ignore[attr-defined]
        self._original = fn
        with contextlib.suppress(Exception):
            model.train_function = timed

    def take(self) -> tuple[float, float] | None:
        out, self.last = self.last, None
        return out

    def take_done(self) -> Callable[[], Any] | None:
        out, self.done = self.done, None
        return out

    def restore(self) -> None:
        if self._original is not None:
            with contextlib.suppress(Exception):
                self.model.train_function = self._original
            self._original = None
