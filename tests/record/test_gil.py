"""GIL probe: a pure-Python thread shows up in-process, not in the reference heartbeat."""

from __future__ import annotations

import contextlib
import gc
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator

import psutil

from gpudiag.record.gil import GilProbe


def _gone(pid: int, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not psutil.pid_exists(pid):
            return True
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@contextlib.contextmanager
def _python_thread_spinning() -> Iterator[None]:
    """A thread running pure Python (it holds the GIL) for the duration of the block."""
    stop = threading.Event()

    def spin() -> None:
        x = 0
        while not stop.is_set():
            x += 1

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join()


def _window(probe: GilProbe, seconds: float):
    t0 = time.monotonic()
    time.sleep(seconds)
    t1 = time.monotonic()
    time.sleep(probe.chunk_s + 0.1)  # let the reference batch for [t0, t1] arrive
    return probe.stats(t0, t1)


def test_busy_python_thread_raises_in_process_lateness_only():
    with GilProbe() as probe:
        deadline = time.monotonic() + 5
        while probe.stats().ref_n == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # the reference subprocess is starting
        idle = _window(probe, 0.8)

        with _python_thread_spinning():
            busy = _window(probe, 0.8)
    assert idle.n > 20 and busy.n > 20 and busy.ref_n > 20
    # idle ≈ 0.1 ms, busy ≈ the 5 ms switch interval: margins are wide on purpose
    assert busy.p95_ms > 2.0, (idle, busy)
    assert busy.p95_ms > idle.p95_ms + 1.0, (idle, busy)
    assert busy.ref_p95_ms < busy.p95_ms / 2, busy  # other process: no GIL to wait for
    assert busy.excess_p95_ms is not None and busy.excess_p95_ms > 1.0


def test_read_window_and_stop_leave_nothing_behind():
    probe = GilProbe(window_s=0.5).start()
    time.sleep(0.3)
    pid = probe.reference_pid
    assert pid is not None and psutil.pid_exists(pid)
    w = probe.read()
    assert w.window_s == 0.5 and w.n > 10 and w.p50_ms is not None
    probe.stop()
    probe.stop()
    assert not probe.running and probe.reference_pid is None
    assert _gone(pid)
    assert not [t for t in threading.enumerate() if t.name.startswith("gpudiag-gil")]


def test_garbage_collected_probe_ends_its_subprocess():
    probe = GilProbe().start()
    pid = probe.reference_pid
    assert pid is not None
    del probe
    gc.collect()
    assert _gone(pid)


def test_interpreter_exit_ends_subprocess():
    code = textwrap.dedent(
        """
        from gpudiag.record.gil import GilProbe
        p = GilProbe().start()
        print(p.reference_pid, flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert _gone(int(out.stdout.strip()))


def test_without_reference():
    with GilProbe(reference=False) as probe:
        time.sleep(0.2)
        w = probe.read()
    assert w.n > 5 and w.ref_n == 0 and w.ref_p95_ms is None and w.excess_p95_ms is None
    assert probe.reference_reason


def test_reference_failures_are_reported(monkeypatch):
    with GilProbe() as probe:
        pid = probe.reference_pid
        psutil.Process(pid).kill()
        deadline = time.monotonic() + 5
        while probe.reference_reason is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "exited" in (probe.reference_reason or "")
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    with GilProbe() as probe:
        assert "not started" in (probe.reference_reason or "")
        assert probe.running  # the in-process probe still works


def test_bursts_measure_only_when_asked_and_see_a_busy_thread():
    with GilProbe(burst_s=0.8, period_s=3600) as probe:
        time.sleep(0.3)
        assert probe.stats().n == 0 and probe.stats().ref_n == 0  # nothing wakes between bursts
        with _python_thread_spinning():
            probe.request_burst()
            deadline = time.monotonic() + 10
            bursts = []
            while not bursts and time.monotonic() < deadline:
                time.sleep(0.1)
                bursts = probe.take()
        time.sleep(probe.chunk_s + 0.1)
        n_after = probe.stats().n
        time.sleep(0.3)
        assert probe.stats().n == n_after  # asleep again after the burst
        pid = probe.reference_pid
    assert len(bursts) == 1, bursts
    (busy,) = bursts
    assert busy.n > 10 and busy.ref_n > 10, busy
    # the typical wake-up shows it (the tail also moves with the machine's load)
    assert busy.p50_ms > 2.0 and busy.ref_p50_ms < busy.p50_ms / 2, busy
    assert busy.end_wall_us > 0
    assert pid is not None and _gone(pid)


def test_a_burst_cut_short_by_stop_is_still_reported():
    probe = GilProbe(burst_s=30, period_s=3600).start()
    probe.request_burst()
    time.sleep(0.5)
    probe.stop()
    (w,) = probe.take()
    assert w.n > 10 and w.window_s < 5
