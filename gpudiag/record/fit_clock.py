"""The fit's own clock: gpudiag's time inside the fit's hooks, and the other callbacks' epoch
hooks, timed where Keras lists them. What the fit account (``analyze/fit_account.py``) splits
the time between epochs with, so that gpudiag's own work is never blamed on a user's callback.

    clock = FitClock(writer)
    clock.attach(callback_list.callbacks, me=diagnose_callback)   # wraps their epoch hooks
    clock.own("epoch_end", start_us, end_us)                      # gpudiag's own time
    clock.detach()                                                # puts the hooks back

A user's callback is timed by an instance attribute that wraps its bound ``on_epoch_begin`` /
``on_epoch_end`` (only those it overrides): the call, its arguments, its result and its
exceptions are the callback's own; ``detach`` removes the wrapper. Each call writes one
``gpudiag.callback`` event (docs/trace-format.md), at most ``MAX_CALLBACK_EVENTS`` per fit.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from gpudiag.record.writer import TraceWriter
from gpudiag.trace.native.reader import CAT_CALLBACK, CAT_OWN

TIMED_HOOKS = ("on_epoch_begin", "on_epoch_end")
MAX_CALLBACK_EVENTS = 20_000  # a fit of 5,000 epochs with two timed callbacks
_MISSING = object()


def now_us() -> float:
    return time.time() * 1e6


def _overrides(cb: Any, hook: str) -> bool:
    """Keras marks its base class's empty hooks (``@default``); a wrapper never wraps twice."""
    method = getattr(cb, hook, None)
    return callable(method) and not getattr(method, "_is_default", False)


def callback_facts(cb: Any) -> dict[str, Any]:
    """One callback's class and the settings its remedies are chosen against."""
    out: dict[str, Any] = {"class": type(cb).__name__}
    for key in (
        "save_weights_only",
        "save_freq",
        "save_best_only",
        "histogram_freq",
        "write_images",
        "update_freq",
        "write_graph",
    ):
        value = getattr(cb, key, None)
        if isinstance(value, bool | int | str):
            out[key] = value
    return out


def find_callbacks(me: Any, depth: int = 4) -> list[Any] | None:
    """The callbacks of the fit that called ``me``: the ``CallbackList`` whose loop is the
    caller of ``on_train_begin`` (a plain method frame, read once). None when not found."""
    frame: FrameType | None
    try:
        frame = sys._getframe(2)
    except ValueError:
        return None
    for _ in range(depth):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        cbs = getattr(owner, "callbacks", None)
        if isinstance(cbs, list) and any(c is me for c in cbs):
            return cbs
        frame = frame.f_back
    return None


class FitClock:
    """gpudiag's own hook time and the other callbacks' epoch hooks, written as they happen."""

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.wrapped: list[tuple[Any, str, Any, Callable[..., Any]]] = []
        self.events = 0

    def own(self, hook: str, start_us: float, end_us: float) -> None:
        """gpudiag's own time in one of its hooks (never anybody else's)."""
        self.writer.span(hook, start_us, end_us, cat=CAT_OWN)

    def attach(self, callbacks: list[Any], me: Any) -> list[dict[str, Any]]:
        """Time the epoch hooks of every callback in ``callbacks`` but ``me``; returns their
        facts (class, settings; ``timed``: whether a hook of it is timed)."""
        facts = []
        for cb in callbacks:
            if cb is me:
                continue
            f = callback_facts(cb)
            for hook in TIMED_HOOKS:
                if _overrides(cb, hook) and self._wrap(cb, hook):
                    f["timed"] = True
            facts.append(f)
        return facts

    def _wrap(self, cb: Any, hook: str) -> bool:
        original = getattr(cb, hook)
        name = type(cb).__name__
        clock = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = now_us()
            try:
                return original(*args, **kwargs)
            finally:
                clock._record(name, hook, t0, now_us())

        timed._gpudiag_timed = True  # type: ignore[attr-defined]
        try:
            previous = cb.__dict__.get(hook, _MISSING)
            setattr(cb, hook, timed)
        except Exception:  # slots, a property, a frozen object: left untimed
            return False
        self.wrapped.append((cb, hook, previous, timed))
        return True

    def _record(self, name: str, hook: str, start_us: float, end_us: float) -> None:
        if self.events >= MAX_CALLBACK_EVENTS:
            return
        self.events += 1
        with contextlib.suppress(Exception):  # timing must never break the user's callback
            self.writer.span(name, start_us, end_us, cat=CAT_CALLBACK, hook=hook)

    def detach(self) -> None:
        """Put every wrapped hook back as it was (idempotent)."""
        wrapped, self.wrapped = self.wrapped, []
        for cb, hook, previous, timed in wrapped:
            with contextlib.suppress(Exception):
                if cb.__dict__.get(hook) is not timed:
                    continue  # replaced by someone else since: theirs now
                if previous is _MISSING:
                    del cb.__dict__[hook]
                else:
                    cb.__dict__[hook] = previous
