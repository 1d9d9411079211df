"""The GIL probe's threads and its reference heartbeat process (used by ``record/gil.py``).

``probe_loop`` measures continuously, ``burst_loop`` only in bursts; ``reader_loop`` reads
the heartbeat subprocess's lateness lines; ``shutdown`` ends them all. They share a
``Shared`` state, deliberately not the ``GilProbe`` itself, so the probe can be
garbage-collected (its finalizer calls ``shutdown``) while they run.
"""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections import deque

# The reference heartbeat: same loop as the probe thread, lateness sent in batches (one line
# per `chunk` seconds: "monotonic_ts:lateness_ms ...") so the parent does little work. It
# ignores SIGINT (Ctrl-C in the terminal must not print its traceback) and exits when the pipe
# breaks or its parent changes.
# With a third argument "burst" it runs only when asked: it blocks reading a duration (s)
# from stdin, runs the loop that long, and blocks again (no CPU between bursts).
REFERENCE_CODE = r"""
import os, signal, sys, time
try:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
except Exception:
    pass
iv = float(sys.argv[1]); chunk = float(sys.argv[2]); ppid = os.getppid()
bursts = len(sys.argv) > 3 and sys.argv[3] == "burst"
out = sys.stdout; buf = []
pc = time.perf_counter; mono = time.monotonic; sleep = time.sleep
def send():
    global buf
    if os.getppid() != ppid:
        raise SystemExit
    try:
        out.write(" ".join(buf) + "\n"); out.flush()
    except (OSError, ValueError):
        raise SystemExit
    buf = []
while True:
    if bursts:
        line = sys.stdin.readline()
        if not line:
            break
        try:
            until = mono() + float(line)
        except ValueError:
            continue
    else:
        until = float("inf")
    last = mono()
    while True:
        t0 = pc(); sleep(iv); late = (pc() - t0 - iv) * 1e3
        now = mono()
        buf.append("%.4f:%.3f" % (now, late))
        if now >= until:
            send()
            break
        if now - last >= chunk:
            send()
            last = now
"""


class Shared:
    """State shared by the probe thread, the reader thread and the finalizer — deliberately
    not the GilProbe itself, so that the probe can be garbage-collected while they run."""

    def __init__(self, maxlen: int) -> None:
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.local: deque[tuple[float, float]] = deque(maxlen=maxlen)
        self.ref: deque[tuple[float, float]] = deque(maxlen=maxlen)
        self.proc: subprocess.Popen[bytes] | None = None
        self.threads: list[threading.Thread] = []
        # bursts: a request wakes the probe thread; finished bursts wait for take()
        self.wake = threading.Event()
        self.idle = threading.Event()  # set while no burst runs
        self.idle.set()
        self.burst_until = 0.0
        self.done: deque[tuple[float, float, float]] = deque(maxlen=1000)  # (t0, t1, wall_us)


def probe_loop(shared: Shared, interval: float) -> None:
    pc, mono, sleep = time.perf_counter, time.monotonic, time.sleep
    local, lock, stop = shared.local, shared.lock, shared.stop
    while not stop.is_set():
        t0 = pc()
        sleep(interval)
        late = (pc() - t0 - interval) * 1e3
        with lock:
            local.append((mono(), late))


def burst_loop(shared: Shared, interval: float, burst_s: float, period_s: float) -> None:
    """Sleep until a burst is due (every ``period_s``, or on request), probe for ``burst_s``
    (longer if a request extends it), record the burst, wait again."""
    pc, mono, sleep = time.perf_counter, time.monotonic, time.sleep
    local, lock, stop = shared.local, shared.lock, shared.stop
    next_due = mono() + period_s
    while not stop.is_set():
        shared.wake.wait(max(0.0, next_due - mono()))
        shared.wake.clear()
        if stop.is_set():
            break
        start = mono()
        shared.idle.clear()
        with lock:
            shared.burst_until = max(shared.burst_until, start + burst_s)
            until = shared.burst_until
        tell_reference(shared, until - start)
        while not stop.is_set():
            t0 = pc()
            sleep(interval)
            late = (pc() - t0 - interval) * 1e3
            now = mono()
            with lock:
                local.append((now, late))
                if now >= shared.burst_until:
                    break
        end = mono()
        with lock:
            shared.done.append((start, end, time.time() * 1e6))
            shared.burst_until = 0.0
        shared.idle.set()
        next_due = start + period_s


def tell_reference(shared: Shared, seconds: float) -> None:
    proc = shared.proc
    if proc is None or proc.stdin is None:
        return
    with contextlib.suppress(OSError, ValueError):
        proc.stdin.write(b"%.3f\n" % seconds)
        proc.stdin.flush()


def reader_loop(shared: Shared, proc: subprocess.Popen[bytes]) -> None:
    stream = proc.stdout
    if stream is None:
        return
    try:
        for raw in stream:
            pairs = []
            for item in raw.split():
                ts, _, late = item.partition(b":")
                try:
                    pairs.append((float(ts), float(late)))
                except ValueError:
                    continue
            with shared.lock:
                shared.ref.extend(pairs)
    except (OSError, ValueError):
        pass  # pipe closed under us by stop()


def shutdown(shared: Shared, timeout: float = 2.0) -> None:
    """End the reference subprocess and the threads. Safe to call more than once."""
    shared.stop.set()
    shared.wake.set()  # a burst-mode probe waiting for its next burst
    proc, shared.proc = shared.proc, None
    if proc is not None:
        try:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=timeout)
        except Exception:
            pass
        finally:
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    with contextlib.suppress(Exception):
                        pipe.close()
    current = threading.current_thread()
    for t in shared.threads:
        if t is not current and t.is_alive():
            t.join(timeout)
