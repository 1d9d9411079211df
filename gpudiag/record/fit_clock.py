"""The fit's own clock: gpudiag's time inside the fit's hooks, and the other callbacks' epoch
and batch hooks, timed where Keras lists them. What the fit account
(``analyze/fit_account.py``) splits the fit's time with, so that gpudiag's own work is never
blamed on a user's callback and a user's per-batch work is measured, not guessed.

    clock = FitClock(writer)
    clock.attach(callback_list.callbacks, me=diagnose_callback, model=model,
                 batch_end_sync=True)                             # wraps their hooks
    clock.own("epoch_end", start_us, end_us)                      # gpudiag's own time
    clock.batch_totals()    # {"ModelCheckpoint": {"s": 1.2, "calls": 96, ...}}
    clock.detach()                                                # puts everything back

A user's callback is timed by an instance attribute that wraps its bound hooks (only those
it overrides): the call, its arguments, its result and its exceptions are the callback's
own; ``detach`` removes the wrapper. An epoch hook's call writes one ``gpudiag.callback``
event (docs/trace-format.md), at most ``MAX_CALLBACK_EVENTS`` per fit. A batch hook's calls
are summed per class (two clock reads per call, no event, no device wait: the hooks run on
the training thread inside the step, where Keras already converted the logs for them); the
totals go into the trace header (``batch_callbacks``) at each epoch's end. A batch-end hook
is timed only where Keras calls it on the training thread (not ``async_safe`` callbacks,
which it runs in a thread pool). While a batch hook runs, the model's ``predict`` and
``evaluate`` are counted too (a callback that predicts every few batches pays their set-up
each time): an instance attribute on the model, removed again by ``detach``.
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
BATCH_BEGIN_HOOKS = ("on_train_batch_begin", "on_batch_begin")
BATCH_END_HOOKS = ("on_train_batch_end", "on_batch_end")
MODEL_CALLS = ("predict", "evaluate")  # counted while another callback's batch hook runs
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


def find_callback_list(me: Any, depth: int = 4, skip: int = 2) -> tuple[list[Any], bool] | None:
    """The callbacks of the fit that called ``me`` (the ``CallbackList`` whose loop called
    ``me``'s caller, ``skip`` frames up; a plain method frame, read once), and whether Keras
    calls their batch-end hooks on the training thread (its ``CallbackList`` dispatches them
    to a thread pool only where every user callback is ``async_safe`` or leaves them alone).
    None when not found."""
    frame: FrameType | None
    try:
        frame = sys._getframe(skip)
    except ValueError:
        return None
    for _ in range(depth):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        cbs = getattr(owner, "callbacks", None)
        if isinstance(cbs, list) and any(c is me for c in cbs):
            return cbs, not bool(getattr(owner, "_async_train", False))
        frame = frame.f_back
    return None


class FitClock:
    """gpudiag's own hook time and the other callbacks' hooks: epoch hooks written as they
    happen, batch hooks summed per class."""

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.wrapped: list[tuple[Any, str, Any, Callable[..., Any]]] = []
        self.events = 0
        # per class: seconds, calls, and the model's predict/evaluate calls inside them
        self.batch: dict[str, dict[str, float]] = {}
        self._running: list[str] = []  # classes whose batch hooks run now, innermost last
        self._facts: list[dict[str, Any]] | None = None  # the callbacks' facts last written

    def write_facts(self, facts: list[dict[str, Any]]) -> None:
        """The callbacks' facts into the trace's header, where they differ from the last
        written (each fit of a series passes the same callbacks again)."""
        if facts != self._facts:
            self._facts = facts
            self.writer.update_meta(extra={"callbacks": facts})

    def own(self, hook: str, start_us: float, end_us: float) -> None:
        """gpudiag's own time in one of its hooks (never anybody else's)."""
        self.writer.span(hook, start_us, end_us, cat=CAT_OWN)

    def attach(
        self,
        callbacks: list[Any],
        me: Any,
        model: Any = None,
        batch_end_sync: bool = True,
    ) -> list[dict[str, Any]]:
        """Time the epoch and batch hooks of every callback in ``callbacks`` but ``me``;
        returns their facts (class, settings; ``timed``: an epoch hook of it is timed,
        ``per_batch``: a batch hook). ``batch_end_sync``: Keras calls batch-end hooks on
        the training thread (else they are not timed)."""
        facts = []
        batch_hooks = BATCH_BEGIN_HOOKS + (BATCH_END_HOOKS if batch_end_sync else ())
        for cb in callbacks:
            if cb is me:
                continue
            f = callback_facts(cb)
            for hook in TIMED_HOOKS:
                if _overrides(cb, hook) and self._wrap(cb, hook, self._record):
                    f["timed"] = True
            for hook in batch_hooks:
                if _overrides(cb, hook) and self._wrap(cb, hook, self._add_batch):
                    f["per_batch"] = True
            facts.append(f)
        if model is not None and any(f.get("per_batch") for f in facts):
            for call in MODEL_CALLS:
                self._wrap(model, call, self._model_call, setter=object.__setattr__)
        return facts

    def _wrap(
        self,
        obj: Any,
        hook: str,
        record: Callable[[str, str, float, float], None],
        setter: Callable[[Any, str, Any], None] = setattr,
    ) -> bool:
        original = getattr(obj, hook)
        name = type(obj).__name__
        running = self._running
        batch = record == self._add_batch

        def timed(*args: Any, **kwargs: Any) -> Any:
            if batch and running and running[-1] == name:  # on_train_batch_end -> on_batch_end
                return original(*args, **kwargs)
            if batch:
                running.append(name)
            t0 = now_us()
            try:
                return original(*args, **kwargs)
            finally:
                if batch:
                    running.pop()
                record(name, hook, t0, now_us())

        timed._gpudiag_timed = True  # type: ignore[attr-defined]
        try:
            previous = obj.__dict__.get(hook, _MISSING)
            setter(obj, hook, timed)
        except Exception:  # slots, a property, a frozen object: left untimed
            return False
        self.wrapped.append((obj, hook, previous, timed))
        return True

    def _add_batch(self, name: str, hook: str, start_us: float, end_us: float) -> None:
        """One batch hook's call, summed per class."""
        row = self.batch.setdefault(name, {"s": 0.0, "calls": 0.0})
        row["s"] += (end_us - start_us) / 1e6
        row["calls"] += 1

    def _model_call(self, name: str, hook: str, start_us: float, end_us: float) -> None:
        """The model's predict/evaluate, counted against the batch hook running now."""
        owner = self._running[-1] if self._running else None
        if owner is None:
            return
        row = self.batch.setdefault(owner, {"s": 0.0, "calls": 0.0})
        row[f"{hook}_calls"] = row.get(f"{hook}_calls", 0.0) + 1
        row[f"{hook}_s"] = row.get(f"{hook}_s", 0.0) + (end_us - start_us) / 1e6

    def batch_totals(self) -> dict[str, dict[str, float]]:
        """Each class's batch hooks: seconds, calls, predict/evaluate calls and seconds."""
        return {
            k: {f: round(v, 4) if f.endswith("_s") or f == "s" else int(v) for f, v in row.items()}
            for k, row in self.batch.items()
            if row.get("calls")
        }

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
        self._running.clear()
