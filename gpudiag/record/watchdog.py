"""Notice when ``fit`` is left without ``on_train_end``, so no recording thread outlives it.

Keras skips ``on_train_end`` when ``fit`` raises or is interrupted (Ctrl-C). The watchdog
finds ``fit``'s frame on the training thread when training begins and, every 0.25 s, checks
that the frame is still on that thread's stack; when it is gone, it calls ``on_lost`` once.
An ``atexit`` hook does the same at interpreter exit (a script that ends inside ``fit``).
Both hold only a weak reference to the owner, so a dropped callback is never kept alive.

    dog = FitWatchdog(owner=callback, finish=lambda cb: cb.finish_abnormally())
    dog.start()          # from on_train_begin, on the training thread
    dog.cancel()         # the run ended normally
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

POLL_S = 0.25


class FitWatchdog:
    """Calls ``finish(owner)`` once when ``fit`` is left abnormally or the interpreter exits.

    Args:
        owner: the object whose run is watched (held weakly).
        finish: called with the owner when the run was lost; it must be idempotent, since
            the atexit hook may also call it after the run ended normally (then it does
            nothing because the owner says it is no longer running).
        running: tells whether the owner's run is still going.
    """

    def __init__(
        self,
        owner: Any,
        finish: Callable[[Any], None],
        running: Callable[[Any], bool],
    ) -> None:
        self._ref = weakref.ref(owner)
        self._finish = finish
        self._running = running
        self._cancelled = threading.Event()
        self._fit_frame: types.FrameType | None = None
        self._thread_id = 0
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Find ``fit``'s frame on this (the training) thread and start watching it."""
        frame: types.FrameType | None = sys._getframe()
        while frame is not None and frame.f_code.co_name != "fit":
            frame = frame.f_back
        self._fit_frame = frame
        self._thread_id = threading.get_ident()
        atexit.register(_atexit_finish, self._ref, self._finish, self._running)
        if frame is None:
            return
        self.thread = threading.Thread(target=self._watch, name="gpudiag-watchdog", daemon=True)
        self.thread.start()

    def cancel(self) -> None:
        self._cancelled.set()

    def pause(self) -> None:
        """Between two fits of a series: the thread waits, checking nothing."""
        self._fit_frame = None

    def rearm(
        self, owner: Any, running: Callable[[Any], bool], finish: Callable[[Any], None]
    ) -> bool:
        """Watch the fit beginning now with the thread already running (fits in a loop:
        starting a thread per fit costs tens of milliseconds on a busy host). False when
        this watchdog cannot (another owner, its thread gone): start a new one then."""
        if self._ref() is not owner or self.thread is None or not self.thread.is_alive():
            return False
        frame: types.FrameType | None = sys._getframe()
        while frame is not None and frame.f_code.co_name != "fit":
            frame = frame.f_back
        if frame is None:
            return False
        self._running, self._finish = running, finish
        self._thread_id, self._fit_frame = threading.get_ident(), frame
        return True

    def _watch(self) -> None:
        while not self._cancelled.wait(POLL_S):
            if self._fit_frame is None:  # paused between two fits of a series
                continue
            owner = self._ref()
            if owner is None or not self._running(owner):
                return
            if not self.fit_alive():
                if not self._cancelled.is_set():
                    self._finish(owner)
                return
            del owner

    def fit_alive(self) -> bool:
        frame = sys._current_frames().get(self._thread_id)
        while frame is not None:
            if frame is self._fit_frame:
                return True
            frame = frame.f_back
        return False


def _atexit_finish(
    ref: weakref.ReferenceType[Any],
    finish: Callable[[Any], None],
    running: Callable[[Any], bool],
) -> None:
    owner = ref()
    if owner is not None and running(owner):
        with contextlib.suppress(Exception):
            finish(owner)
