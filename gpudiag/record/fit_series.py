"""Fits in a loop: a process that calls ``fit`` again and again on one model (online or
reinforcement learning, ``fit(epochs=1)`` per batch of new data) is recorded as one series,
so that it gets one account and gpudiag's fixed cost per fit is paid once, not per call.

A fit that begins within ``SERIES_GAP_S`` of the end of the previous fit on the same model
continues a series: from then on each fit's end only pauses the recording (the trace stays
open, the samplers keep running, nothing is diagnosed) and the next fit resumes it. The
series ends when no fit follows for ``IDLE_CLOSE_S``, when a fit of another model begins, or
at interpreter exit; then it is closed like any recording. The first fit of a loop cannot
know a loop follows: it is recorded on its own, the series begins with the second.

    previous = recent(model)           # the last fit of this model, if it ended just now
    series = Series(session, model, path, close=...)
    series.pause()                     # at each fit's end: idle timer armed
    session = claim(model)             # the next fit: the paused session, or None
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

# the next fit on the same model begins within this of the last one's end: a loop (an RL
# episode or an online update between fits takes seconds; a new experiment, minutes)
SERIES_GAP_S = 30.0
# no fit for this long after a pause: the loop is over, the series is closed
IDLE_CLOSE_S = 30.0
IDLE_POLL_S = 1.0  # how often the series' idle check looks (a pause is never timed per fit)

_LOCK = threading.RLock()
_LAST: dict[str, Any] = {}  # "model": weakref of the last fit's model, "ended": monotonic time
_OPEN: Series | None = None  # the paused series, if any


class Series:
    """One series of fits and its open recording.

    Args:
        session: the recording (``record/session.py``), paused between fits.
        model: the model the fits train.
        close: called (once, with the series) to close the recording and show what it must:
            by the idle timer, at exit, or when a fit of another model begins.
    """

    def __init__(self, session: Any, model: Any, close: Callable[[Series], None]) -> None:
        self.session = session
        self.model = weakref.ref(model) if model is not None else (lambda: None)
        self.fits = 1  # fits recorded in this series (the one running counts)
        self.closed = False
        self._close = close
        self.paused_at: float | None = None  # monotonic time of the last pause; None: a fit runs
        self._idle: threading.Thread | None = None  # one idle check per series, not per fit

    def pause(self) -> None:
        """This fit ended: keep the recording for the next one, closed if none comes."""
        global _OPEN
        with _LOCK:
            _remember(self.model())
            if self.closed:
                return
            _OPEN = self
            self.paused_at = time.monotonic()
            if self._idle is None:
                self._idle = threading.Thread(
                    target=self._close_when_idle, name="gpudiag-series", daemon=True
                )
                self._idle.start()

    def _close_when_idle(self) -> None:
        while not self.closed:
            time.sleep(IDLE_POLL_S)
            with _LOCK:  # a fit claiming the series now wins: it is no longer paused
                paused = self.paused_at
                idle = paused is not None and time.monotonic() - paused >= IDLE_CLOSE_S
                taken = idle and self._take()
            if taken:
                self._close(self)

    def close(self) -> None:
        """End the series (idempotent): the recording closed by ``close`` given at start."""
        with _LOCK:
            taken = self._take()
        if taken:
            self._close(self)

    def _take(self) -> bool:
        """Mark the series closed (under ``_LOCK``); False where it already was."""
        global _OPEN
        if self.closed:
            return False
        self.closed = True
        if _OPEN is self:
            _OPEN = None
        return True


def recent(model: Any) -> bool:
    """Whether the last fit of this process trained ``model`` and ended within the gap."""
    with _LOCK:
        ref = _LAST.get("model")
        ended = _LAST.get("ended")
        return (
            ref is not None
            and ended is not None
            and ref() is model
            and time.monotonic() - ended <= SERIES_GAP_S
        )


def claim(model: Any) -> Series | None:
    """The paused series of ``model`` for the fit beginning now; a paused series of another
    model (or one paused too long ago) is closed instead."""
    global _OPEN
    with _LOCK:
        series = _OPEN
        if series is None:
            return None
        if series.model() is model and recent(model):
            _OPEN = None
            series.paused_at = None
            series.fits += 1
            return series
    series.close()
    return None


def ended(model: Any) -> None:
    """A fit of ``model`` ended now (recorded on its own, or closing its series)."""
    with _LOCK:
        _remember(model)


def _remember(model: Any) -> None:
    _LAST["model"] = weakref.ref(model) if model is not None else None
    _LAST["ended"] = time.monotonic()


def close_open() -> None:
    """Close the paused series, if any (at interpreter exit)."""
    series = _OPEN
    if series is not None:
        series.close()


atexit.register(close_open)
