"""One background sampler: a daemon thread that reads, converts and emits counter samples.

``read()`` is called every ``interval`` seconds; ``convert(result)`` turns the result into
samples ``(name, source, ts_us, value)``, each handed to ``sink``. Never raises into its
caller: failures are counted and the first few kept in ``errors``. ``drive`` runs several
samplers on one thread (what ``SamplerSet`` does).

    s = Sampler("host", monitor.read, host_samples, sink, interval=0.5).start()
    ...
    s.stop()                     # one last sample, then the thread ends
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

Sink = Callable[[str, str, float, float], None]
Sample = tuple[str, str, float, float]  # (name, source, ts_us, value)
T = TypeVar("T")

_MAX_KEPT_ERRORS = 10


class Sampler(Generic[T]):
    """Calls ``read()`` every ``interval`` s on a daemon thread; emits ``convert(result)``.

    ``observer`` (optional) receives each raw result — the live monitor keeps the latest
    snapshots (process lists, per-core bars) that way, while the counters go through the same
    ``convert`` + ``sink`` path as a recorded trace. ``on_start``/``on_stop`` open and close
    what the sampler reads from (the GIL probe's thread and subprocess). ``final_sample``:
    ``stop()`` takes one last sample, so the tail of a run (the GPU samples buffered since
    the previous read, a last partial GIL window) is not lost.
    """

    def __init__(
        self,
        name: str,
        read: Callable[[], T],
        convert: Callable[[T], Iterable[Sample]],
        sink: Sink | None,
        interval: float = 1.0,
        *,
        observer: Callable[[T], None] | None = None,
        on_start: Callable[[], Any] | None = None,
        on_stop: Callable[[], Any] | None = None,
        description: str = "",
        final_sample: bool = True,
        stop_first: bool = False,
    ) -> None:
        self.name = name
        self.final_sample = final_sample
        self.stop_first = stop_first
        self.interval = float(interval)
        self.description = description or name
        self._read = read
        self._convert = convert
        self._sink = sink
        self._observer = observer
        self._on_start = on_start
        self._on_stop = on_stop
        self.errors: list[str] = []
        self.error_count = 0
        self.reads = 0
        self.samples_emitted = 0
        self.latest: T | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._closed = False
        self._lock = threading.Lock()

    def _error(self, where: str, exc: BaseException) -> None:
        self.error_count += 1
        if len(self.errors) < _MAX_KEPT_ERRORS:
            self.errors.append(f"{self.name} {where}: {type(exc).__name__}: {exc}")

    def sample_once(self) -> T | None:
        """One read + emit on the calling thread. Never raises; None when the read failed."""
        try:
            result = self._read()
        except Exception as exc:
            self._error("read", exc)
            return None
        self.reads += 1
        self.latest = result
        if self._observer is not None:
            try:
                self._observer(result)
            except Exception as exc:
                self._error("observer", exc)
        try:
            samples = list(self._convert(result))
        except Exception as exc:
            self._error("convert", exc)
            return result
        if self._sink is not None:
            for s in samples:
                try:
                    self._sink(*s)
                    self.samples_emitted += 1
                except Exception as exc:
                    self._error("sink", exc)
        return result

    def _run(self) -> None:
        drive([self], self._stop)

    def open(self) -> None:
        """Run ``on_start`` (what ``start`` does before its thread; SamplerSet calls it)."""
        if self._on_start is not None:
            try:
                self._on_start()
            except Exception as exc:
                self._error("start", exc)

    def close(self, final: bool = True) -> None:
        """Last sample (if ``final_sample``) and ``on_stop``; ``stop_first`` samplers (the
        GIL bursts) stop their source first so that its last partial burst is included."""
        if self._closed:
            return
        self._closed = True
        if self.stop_first:
            self._call_on_stop()
        if final and self.final_sample:
            self.sample_once()
        if not self.stop_first:
            self._call_on_stop()

    def _call_on_stop(self) -> None:
        if self._on_stop is not None:
            try:
                self._on_stop()
            except Exception as exc:
                self._error("stop", exc)

    def start(self) -> Sampler[T]:
        """Start the thread (first sample immediately). Idempotent; not restartable."""
        with self._lock:
            if self._thread is not None or self._stopped:
                return self
            self.open()
            self._thread = threading.Thread(
                target=self._run, name=f"gpudiag-sampler-{self.name}", daemon=True
            )
            self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Stop and join the thread (bounded by ``timeout``), then run ``on_stop``.
        Idempotent; never raises."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._stop.set()
            thread = self._thread
        alive = False
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            alive = thread.is_alive()
            if alive:
                self._error("stop", TimeoutError(f"thread still running after {timeout:.1f} s"))
        self.close(final=thread is not None and not alive)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()


def drive(samplers: Sequence[Sampler[Any]], stop: threading.Event) -> None:
    """Sample each sampler every its ``interval`` on the calling thread until ``stop``.
    Samplers due within ``_COALESCE_S`` of each other are read on the same wake-up, so a set
    of samplers costs one thread and one wake-up per period, not one per sampler."""
    if not samplers:
        return
    now = time.monotonic()
    due = [now] * len(samplers)
    while not stop.is_set():
        now = time.monotonic()
        for i, s in enumerate(samplers):
            if due[i] <= now + _COALESCE_S:
                s.sample_once()
                due[i] += s.interval
                if due[i] < now:  # fell behind (slow read): don't burst to catch up
                    due[i] = now + s.interval
        if stop.wait(max(0.0, min(due) - time.monotonic())):
            break


_COALESCE_S = 0.05
