"""The end of a fit, and ``fit`` in a loop, for ``DiagnoseCallback``: the fits of a series
share one recording (``record/fit_series.py``), and a diagnosis nobody asks for is never
made (no report wanted, no HTML page, no TensorBoard to write to: ``cb.diagnosis`` makes it
when read).

The callback's part of it: the second fit of a loop starts a series; each fit of the series
then pauses the recording at its end and the next resumes it (a few milliseconds each,
nothing diagnosed); ``cb.diagnosis`` diagnoses what was recorded so far when read; the
series' report prints when it ends (no fit for ``IDLE_CLOSE_S``, another model's fit, or
exit) where a report is wanted. A callback made anew for each fit joins the series too.

    class DiagnoseCallback(SeriesHooks, ...):
        ...
        if not self._resume(): self._begin()     # on_train_begin
        self._pause() if self._series else self._finish(False)   # on_train_end
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

from gpudiag.record import fit_series
from gpudiag.record.fit_series import IDLE_CLOSE_S, Series
from gpudiag.record.profiler import TINY_FIT_STEPS
from gpudiag.record.watchdog import FitWatchdog


class SeriesHooks:
    """What ``DiagnoseCallback`` does for fits in a loop (its attributes are the callback's)."""

    model: Any
    params: dict[str, Any]
    trace_path: str | None
    lints: Any
    quiet: bool
    report: bool | None
    _session: Any
    _say: Any
    _lock: Any
    _run_token: int
    _watchdog: FitWatchdog | None
    _lost: Any  # the callback's: fit left without on_train_end
    html: str | None
    rank_info: Any
    overhead: dict[str, float]
    _tensorboard: list[Any]

    def _init_series(self) -> None:
        self._series: Series | None = None
        self._diagnosis: Any = None
        self._pending: Any = None  # a finished fit's summary, diagnosed when asked

    # ---- the diagnosis, made when asked ----------------------------------------------------
    @property
    def diagnosis(self) -> Any:
        """The run's ``Diagnosis``: of this fit, or of the series so far."""
        series = self._series
        if series is not None:
            return _series_diagnosis(series)
        if self._pending is not None:
            summary, self._pending = self._pending, None
            from gpudiag.analyze import diagnose

            self._diagnosis = diagnose([summary], lints=self.lints.findings)
        return self._diagnosis

    @diagnosis.setter
    def diagnosis(self, value: Any) -> None:
        self._diagnosis, self._pending = value, None

    def _show_end(self, summary: Any, path: str, abnormal: bool, t0: float) -> None:
        """A recording closed: diagnose and show it where something shows it, else keep the
        summary for ``diagnosis``; a series closed early keeps it for the series."""
        from gpudiag.show import run_end

        fit_series.ended(self.model)
        series, self._series = self._series, None
        if series is not None:  # a fit of a series left abnormally: the series ends here
            series.owner["summary"] = summary  # type: ignore[attr-defined]
            series.session = None
            series.close()
        wanted = self._report_wanted() and not self._say.quiet
        if not (wanted or self.html or self._tensorboard):
            self._pending, self._diagnosis = summary, None
            self.overhead["end_s"] = time.perf_counter() - t0
            if abnormal:
                run_end.stopped_early(path, self._say)
            return
        from gpudiag.analyze import diagnose

        self.diagnosis = diagnose([summary], lints=self.lints.findings)
        steps = (self.params or {}).get("steps")
        end = run_end.RunEnd(
            self.diagnosis,
            path,
            html=self.html,
            wanted=wanted,
            rank=self.rank_info,
            forced=self.report is not None,
            steps_per_epoch=steps if isinstance(steps, int) else None,
        )
        run_end.share(end, self._say, self._tensorboard)
        self.overhead["end_s"] = time.perf_counter() - t0
        if abnormal:
            run_end.stopped_early(path, self._say)
        else:
            run_end.report(end, self._say)

    # ---- the series ----------------------------------------------------------------------
    def _report_wanted(self) -> bool:
        if self.report is not None:
            return bool(self.report)
        return (self.params or {}).get("verbose", 1) != 0

    def _fit_steps(self) -> int | None:
        p = self.params or {}
        steps, epochs = p.get("steps"), p.get("epochs")
        return steps * epochs if isinstance(steps, int) and isinstance(epochs, int) else None

    def _tiny(self) -> bool:
        n = self._fit_steps()
        return n is not None and n < TINY_FIT_STEPS

    def _start_series(self, session: Any) -> None:
        """The fit beginning now follows one of the same model: a series from here on."""
        series = Series(session, self.model, close=_close_series)
        series.owner = {  # type: ignore[attr-defined]
            "lints": self.lints,
            "say": self._say,
            "report": self._report_wanted(),
            "path": str(self.trace_path),
            "diagnosis": None,
            "summary": None,
            "made_at": -1,
            "watchdog": None,  # one watchdog thread for the series' fits
        }
        self._series = series
        if self._report_wanted():
            self._say(
                f"gpudiag: fit called again on this model: the fits from here on are recorded "
                f"as one series in {self.trace_path} (one account, gpudiag's cost paid once); "
                f"its report prints when the loop ends (no fit for {IDLE_CLOSE_S:.0f} s, or "
                "at exit), cb.diagnosis has it at any time"
            )

    def _resume(self) -> bool:
        """Continue the paused series of this model, if there is one."""
        series = fit_series.claim(self.model)
        if series is None or series.session is None:
            return False
        self._series = series
        self._session = session = series.session
        self.trace_path = series.owner["path"]  # type: ignore[attr-defined]
        self.lints = series.owner["lints"]  # type: ignore[attr-defined]
        session.resume(windows=not self._tiny())
        token = self._run_token
        running = lambda cb: cb._session is not None and cb._run_token == token  # noqa: E731
        finish = lambda cb: cb._lost(token)  # noqa: E731
        dog = series.owner.get("watchdog")  # type: ignore[attr-defined]
        if dog is None or not dog.rearm(self, running, finish):
            if dog is not None:
                dog.cancel()
            dog = FitWatchdog(self, finish=finish, running=running)
            dog.start()
            series.owner["watchdog"] = dog  # type: ignore[attr-defined]
        self._watchdog = dog
        return True

    def _pause(self) -> None:
        """This fit of the series ended: the recording stays open for the next."""
        session, self._session = self._session, None
        series = self._series
        dog, self._watchdog = self._watchdog, None
        if session is None or series is None:
            if dog is not None:
                dog.cancel()
            return
        if dog is not None:  # kept for the next fit of the series (closed with it)
            dog.pause()
            series.owner["watchdog"] = dog  # type: ignore[attr-defined]
        try:
            session.fit_config({"fits": series.fits})
            session.pause()
        except Exception as e:  # gpudiag must never break training
            self._say(f"gpudiag: could not pause the recording ({type(e).__name__}: {e})")
        series.pause()


_DIAGNOSING = threading.Lock()


def _series_diagnosis(series: Series) -> Any:
    """The series' diagnosis: of what is recorded so far while it is open, cached until the
    next fit ends."""
    own = series.owner  # type: ignore[attr-defined]
    with _DIAGNOSING:
        if own["diagnosis"] is not None and own["made_at"] == (series.fits, series.closed):
            return own["diagnosis"]
        summary = own["summary"]
        if summary is None and series.session is not None:
            with contextlib.suppress(Exception):
                summary = series.session.snapshot()
        if summary is None:
            return own["diagnosis"]
        from gpudiag.analyze import diagnose

        own["diagnosis"] = diagnose([summary], lints=own["lints"].findings)
        own["made_at"] = (series.fits, series.closed)
        return own["diagnosis"]


def _close_series(series: Series) -> None:
    """The loop is over: close the recording, and show the report where one is wanted."""
    own = series.owner  # type: ignore[attr-defined]
    session, series.session = series.session, None
    dog = own.get("watchdog")
    if dog is not None:
        dog.cancel()
    if session is None:
        return
    say = own["say"]
    try:
        own["summary"] = session.finish(abnormal=False)
        if own["report"] and not say.quiet:
            from gpudiag.show import run_end

            d = _series_diagnosis(series)
            path = own["path"]
            run_end.report(run_end.RunEnd(d, path, wanted=True), say)
            if not os.path.exists(path):
                say(f"gpudiag: {path} vanished during the run")
    except Exception as e:
        say(f"gpudiag: could not finish the series' diagnosis ({type(e).__name__}: {e})")
    finally:
        session.teardown()
