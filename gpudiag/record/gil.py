"""GIL-pressure probe: is the training process's Python thread starving its other threads?

A daemon thread sleeps 5 ms again and again and records how late it wakes up. A thread that
wants the GIL back waits for the holder to release it, which a pure-Python holder does only
every ``sys.getswitchinterval()`` (5 ms), so lateness near 5 ms means GIL contention; near
0.1 ms means none. Lateness also grows when the machine's CPUs are oversubscribed, so a small
subprocess runs the same loop outside this process's GIL and reports its own lateness as a
reference: in-process high + reference low = GIL pressure; both high = CPU contention.

Example::

    from gpudiag.record.gil import GilProbe

    with GilProbe() as probe:  # starts the thread and the reference subprocess
        model.fit(...)
        w = probe.read()  # the last window (1 s by default)
        print(w.p95_ms, w.ref_p95_ms)  # in-process vs reference lateness tail, ms

Inside Keras ``fit`` the signal is in the p95 tail, not the median: the GIL-bound stretches
are short and frequent. The subprocess ends on ``stop()``, on garbage collection of the
probe, at interpreter exit, and by itself when its parent disappears.

Waking every 5 ms for a whole run is not free: the probe thread and the heartbeat process
compete with TensorFlow's threads for the cores (measured: several % slower steps on 2
cores). ``GilProbe(burst_s=0.5, period_s=10)`` measures in bursts instead: between bursts the
probe thread waits on an event and the heartbeat process blocks reading its stdin, so neither
wakes. A burst runs every ``period_s`` and whenever ``request_burst()`` asks (DiagnoseCallback
asks at each profiler window); each finished burst is one ``GilWindow`` from ``take()``::

    probe = GilProbe(burst_s=0.5, period_s=10.0).start()
    probe.request_burst()
    ...
    for w in probe.take():  # finished bursts since the last take()
        print(w.end_ts, w.p95_ms, w.ref_p95_ms)
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from gpudiag.record.gil_threads import (
    REFERENCE_CODE,
    Shared,
    burst_loop,
    probe_loop,
    reader_loop,
    shutdown,
)

__all__ = ["GilProbe", "GilWindow"]


@dataclass(frozen=True)
class GilWindow:
    """Lateness statistics (ms) over one window; ``None`` where there were no samples."""

    window_s: float
    n: int
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None
    ref_n: int
    ref_p50_ms: float | None
    ref_p95_ms: float | None
    end_ts: float = 0.0  # time.monotonic() at the window's end (bursts)
    end_wall_us: float = 0.0  # the same instant on the wall clock, µs (bursts)

    @property
    def excess_p95_ms(self) -> float | None:
        """In-process p95 minus reference p95: the part CPU contention does not explain."""
        if self.p95_ms is None or self.ref_p95_ms is None:
            return None
        return self.p95_ms - self.ref_p95_ms


def _quantile(sorted_vals: Sequence[float], q: float) -> float | None:
    if not sorted_vals:
        return None
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


class GilProbe:
    """In-process lateness probe plus out-of-process reference heartbeat.

    ``interval_s``: the probe's sleep (5 ms). ``window_s``: default window of ``read()``.
    ``reference``: start the subprocess (off: only in-process lateness is measured).
    ``keep_s``: how much history is kept for ``stats()``. ``burst_s``/``period_s``: probe
    only in bursts of ``burst_s`` every ``period_s`` (and on ``request_burst()``); None:
    continuously.
    """

    def __init__(
        self,
        interval_s: float = 0.005,
        window_s: float = 1.0,
        reference: bool = True,
        keep_s: float = 30.0,
        chunk_s: float = 0.25,
        burst_s: float | None = None,
        period_s: float = 10.0,
    ) -> None:
        self.interval_s = interval_s
        self.window_s = window_s
        self.reference = reference
        self.chunk_s = chunk_s
        self.burst_s = burst_s
        self.period_s = period_s
        self._reference_reason: str | None = None if reference else "reference heartbeat disabled"
        self._maxlen = max(100, int(keep_s / interval_s))
        self._shared: Shared | None = None
        self._finalizer: weakref.finalize | None = None

    # ---- lifetime --------------------------------------------------------------------------
    def start(self) -> GilProbe:
        """Start the probe thread and the reference subprocess (no-op if running)."""
        if self._shared is not None and not self._shared.stop.is_set():
            return self
        shared = Shared(self._maxlen)
        self._shared = shared
        # runs on stop(), when the probe is collected, and at interpreter exit
        self._finalizer = weakref.finalize(self, shutdown, shared)
        if self.burst_s is None:
            target, args = probe_loop, (shared, self.interval_s)
        else:
            target = burst_loop  # type: ignore[assignment]
            args = (shared, self.interval_s, self.burst_s, self.period_s)  # type: ignore[assignment]
        probe = threading.Thread(target=target, args=args, name="gpudiag-gil-probe", daemon=True)
        shared.threads.append(probe)
        probe.start()
        if self.reference:
            self._start_reference(shared)
        return self

    def _start_reference(self, shared: Shared) -> None:
        try:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    REFERENCE_CODE,
                    repr(self.interval_s),
                    repr(self.chunk_s),
                    *(["burst"] if self.burst_s is not None else []),
                ],
                stdin=subprocess.PIPE if self.burst_s is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                close_fds=True,
            )
        except Exception as exc:
            self._reference_reason = f"reference heartbeat not started: {type(exc).__name__}: {exc}"
            return
        shared.proc = proc
        reader = threading.Thread(
            target=reader_loop, args=(shared, proc), name="gpudiag-gil-reference", daemon=True
        )
        shared.threads.append(reader)
        reader.start()
        self._reference_reason = None

    def request_burst(self, seconds: float | None = None) -> None:
        """Probe now for at least ``seconds`` (default ``burst_s``); extends a running burst.
        Burst mode only; returns at once."""
        shared = self._shared
        if shared is None or self.burst_s is None or shared.stop.is_set():
            return
        with shared.lock:
            if shared.burst_until:  # running: extend it (the reference keeps its length)
                shared.burst_until = max(shared.burst_until, time.monotonic() + (seconds or 0))
                return
            shared.burst_until = time.monotonic() + (seconds or self.burst_s)
        shared.wake.set()

    def end_burst(self) -> None:
        """End a running burst now (what follows, e.g. the end of training, is not what the
        burst is meant to measure)."""
        shared = self._shared
        if shared is not None:
            with shared.lock:
                if shared.burst_until:
                    shared.burst_until = time.monotonic()

    def wait_idle(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until no burst runs; True if none does."""
        shared = self._shared
        return True if shared is None else shared.idle.wait(timeout)

    def take(self) -> list[GilWindow]:
        """Statistics of each burst finished since the last call (burst mode)."""
        shared = self._shared
        if shared is None:
            return []
        with shared.lock:
            done = list(shared.done)
            shared.done.clear()
        out = []
        for t0, t1, wall_us in done:
            w = self.stats(t0, t1)
            out.append(
                GilWindow(
                    t1 - t0,
                    w.n,
                    w.p50_ms,
                    w.p95_ms,
                    w.max_ms,
                    w.ref_n,
                    w.ref_p50_ms,
                    w.ref_p95_ms,
                    t1,
                    wall_us,
                )
            )
        return out

    def stop(self) -> None:
        """Stop the thread and end the subprocess; idempotent. In burst mode a burst in
        progress ends here and is still returned by ``take()``."""
        shared = self._shared
        if shared is not None and self.burst_s is not None and not shared.stop.is_set():
            with shared.lock:
                running = bool(shared.burst_until)
            if running:
                self.end_burst()
                time.sleep(self.chunk_s + 0.05)  # the reference's last chunk for this burst
        if self._finalizer is not None:
            self._finalizer()  # runs shutdown at most once

    close = stop

    def __enter__(self) -> GilProbe:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._shared is not None and not self._shared.stop.is_set()

    @property
    def reference_reason(self) -> str | None:
        """Why there is no reference heartbeat (disabled, failed to start, exited); else None."""
        if self._reference_reason is not None:
            return self._reference_reason
        shared = self._shared
        proc = shared.proc if shared is not None else None
        if proc is not None and proc.poll() is not None:
            return f"reference heartbeat exited with code {proc.returncode}"
        return None

    @property
    def reference_pid(self) -> int | None:
        """Pid of the reference subprocess while it runs (tests check it is gone)."""
        shared = self._shared
        proc = shared.proc if shared is not None else None
        return proc.pid if proc is not None else None

    # ---- reading ---------------------------------------------------------------------------
    def stats(self, since: float | None = None, until: float | None = None) -> GilWindow:
        """Lateness over [since, until] in ``time.monotonic()`` seconds (default: all kept)."""
        shared = self._shared
        if shared is None:
            return GilWindow(0.0, 0, None, None, None, 0, None, None)
        lo = -float("inf") if since is None else since
        hi = float("inf") if until is None else until
        with shared.lock:
            local = sorted(v for t, v in shared.local if lo <= t <= hi)
            ref = sorted(v for t, v in shared.ref if lo <= t <= hi)
        span = (hi - lo) if since is not None and until is not None else 0.0
        return GilWindow(
            window_s=span,
            n=len(local),
            p50_ms=_quantile(local, 0.5),
            p95_ms=_quantile(local, 0.95),
            max_ms=local[-1] if local else None,
            ref_n=len(ref),
            ref_p50_ms=_quantile(ref, 0.5),
            ref_p95_ms=_quantile(ref, 0.95),
        )

    def read(self, window_s: float | None = None) -> GilWindow:
        """Statistics over the last ``window_s`` seconds (default: ``self.window_s``)."""
        w = self.window_s if window_s is None else window_s
        now = time.monotonic()
        out = self.stats(since=now - w, until=now)
        return GilWindow(
            w, out.n, out.p50_ms, out.p95_ms, out.max_ms, out.ref_n, out.ref_p50_ms, out.ref_p95_ms
        )
