"""Decode finished profiler windows on one background thread, into the trace being written.

Decoding a profile takes tenths of a second to seconds of CPU: never on the training
thread. Windows are decoded one after another, at a low OS priority (on Linux a thread has
its own nice value, so the decode yields the cores to training), and never while the GIL
probe measures (decoding holds the GIL and would read as GIL pressure).

    decoder = WindowDecoder(writer, gil=samplers.gil, on_cost=schedule.add_cost)
    decoder.submit(window)       # from the training thread, when a window is done
    decoder.close()              # at the end of the run: waits for what was submitted
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from gpudiag.record.profiler import ProfilerWindow
from gpudiag.record.window_facts import WindowFacts
from gpudiag.record.writer import TraceWriter

# what a profile's device plane says of the GPU, kept in the trace's configuration
GPU_FACTS = ("gpu_model", "compute_capability", "vendor")


class WindowDecoder:
    """Args:
    writer: where each decoded window goes (its events, device type, limitations).
    gil: the GIL probe (``wait_idle``), or None.
    on_cost: told each window's measured cost in seconds (start + stop + decode), for the
        window schedule's budget.
    """

    def __init__(
        self,
        writer: TraceWriter,
        gil: Any = None,
        on_cost: Callable[[float], None] | None = None,
    ) -> None:
        self.writer = writer
        self.gil = gil
        self.on_cost = on_cost
        self.facts: WindowFacts | None = None  # kernel time and copied bytes, summed
        self._queue: queue.Queue[ProfilerWindow | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    def submit(self, window: ProfilerWindow) -> None:
        self._queue.put(window)
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="gpudiag-profile-decode", daemon=True
            )
            self._thread.start()

    def close(self, timeout: float = 60.0) -> None:
        """Decode what was submitted, then stop the thread (waits at most ``timeout``)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=timeout)

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait (at most ``timeout``) until every window submitted so far is decoded: a
        diagnosis taken while the recording goes on (fits in a loop) holds them."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)

    def _loop(self) -> None:
        with contextlib.suppress(Exception):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)
        while True:
            window = self._queue.get()
            try:
                if window is None:
                    return
                burst_s = getattr(self.gil, "burst_s", None)
                if burst_s:  # wait at most two bursts for the probe to be idle
                    self.gil.wait_idle(timeout=2 * burst_s)
                with contextlib.suppress(Exception):  # never let a decode failure escape
                    self.decode(window)
            finally:
                self._queue.task_done()

    def decode(self, window: ProfilerWindow) -> None:
        """Decode one window into the writer (or note why it could not be)."""
        writer = self.writer
        try:
            tl = window.collect()
        except Exception as e:  # decoding must never end with a traceback of its own
            window.problem = window.problem or (
                f"profile could not be recorded ({type(e).__name__}: {e})"
            )
            tl = None
        if self.on_cost is not None:
            self.on_cost(window.start_cost_s + window.stop_cost_s + window.decode_cost_s)
        if tl is not None:
            if tl.meta.device_type:
                writer.update_meta(device_type=tl.meta.device_type)
            gpu = {k: v for k, v in tl.meta.config.to_dict().items() if k in GPU_FACTS}
            if gpu:  # the device plane names the GPU: remedies follow its capability
                writer.update_meta(config=gpu)
            if tl.meta.limitations:  # what the profile itself could not show
                writer.update_meta(limitations=tl.meta.limitations)
            writer.timeline(tl)
            if self.facts is not None:
                self.facts.add(tl)
                writer.update_meta(extra=self.facts.extra())
            writer.window(float(tl.steps.start.min()), float(tl.steps.end.max()), "profiler window")
        elif window.problem:
            writer.update_meta(limitations=[window.problem])
        writer.flush()
