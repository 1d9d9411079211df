"""Stream a gpudiag trace to disk while training runs (format: docs/trace-format.md).

Thread-safe (sampler threads and the training thread write concurrently), bounded in memory
(events go to the OS buffer, flushed at least every ``flush_every`` seconds), and always a
readable file: killed mid-run, it still reads up to its last complete line.

    with TraceWriter("run.gpudiag.json", Metadata(producer="gpudiag")) as w:
        w.step(0, start_us, end_us)
        w.counter("gpu_util", "GPU 0", ts_us, 97.0)
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from gpudiag.trace.gpudiag_format import (
    CAT_DEVICE,
    CAT_FINDING,
    CAT_INPUT,
    CAT_PIPELINE,
    CAT_STEP,
    CAT_WINDOW,
    DEVICE_PID_BASE,
    FORMAT_NAME,
    FORMAT_VERSION,
    HOST_PID,
    META_EVENT,
    META_UPDATE,
)
from gpudiag.trace.timeline import Kind, Metadata, RecordedFinding, Timeline


def _dumps(ev: dict[str, Any]) -> str:
    return json.dumps(ev, separators=(",", ":"), default=str, allow_nan=False)


class TraceWriter:
    def __init__(self, path: str, meta: Metadata, flush_every: float = 2.0) -> None:
        self.path = path
        self.flush_every = flush_every
        self._lock = threading.Lock()
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        self._f = open(path, "w", encoding="utf-8", buffering=1 << 16)  # noqa: SIM115
        self._first = True
        self._last_flush = time.monotonic()
        self._device_pids: dict[str, int] = {}
        self.events = 0
        self.closed = False
        header = {k: v for k, v in meta.__dict__.items() if k != "source"}
        self._write({"ph": "M", "name": META_EVENT, "pid": 0, "tid": 0,
                     "args": {"format": FORMAT_NAME, "version": FORMAT_VERSION, **header}})
        self._write({"ph": "M", "name": "process_name", "pid": HOST_PID, "tid": 0,
                     "args": {"name": "host (gpudiag)"}})
        self._write({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": 1,
                     "args": {"name": "steps"}})
        self._write({"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": 2,
                     "args": {"name": "input wait"}})
        self.flush()

    # ---- low level -------------------------------------------------------------------------
    def _write(self, ev: dict[str, Any]) -> None:
        self._write_line(_dumps(ev))

    def _write_line(self, line: str) -> None:
        with self._lock:
            if self.closed:
                return
            # each event ends its line, so a reader tailing the file never waits on one
            self._f.write(("[\n" if self._first else ",") + line + "\n")
            self._first = False
            self.events += 1
            if time.monotonic() - self._last_flush >= self.flush_every:
                self._flush_locked()

    def _flush_locked(self) -> None:
        self._f.flush()
        self._last_flush = time.monotonic()

    def flush(self) -> None:
        with self._lock:
            if not self.closed:
                self._flush_locked()

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self._f.write("]\n")
            self._f.close()
            self.closed = True

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- events ----------------------------------------------------------------------------
    def _device_pid(self, device: str) -> int:
        pid = self._device_pids.get(device)
        if pid is None:
            pid = DEVICE_PID_BASE + len(self._device_pids)
            self._device_pids[device] = pid
            self._write({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                         "args": {"name": device}})
        return pid

    def step(self, index: int, start_us: float, end_us: float, profiled: bool = False) -> None:
        # on the training thread every step: formatted directly, ~4x cheaper than json.dumps
        self._write_line(
            f'{{"ph":"X","cat":"{CAT_STEP}","name":"step {int(index)}","pid":{HOST_PID},'
            f'"tid":1,"ts":{start_us:.3f},"dur":{end_us - start_us:.3f},'
            f'"args":{{"step":{int(index)},"profiled":{"true" if profiled else "false"}}}}}')

    def counter(self, name: str, source: str, ts_us: float, value: float) -> None:
        if value != value:  # NaN: not measured
            return
        self._write({"ph": "C", "name": name, "pid": HOST_PID, "ts": round(ts_us, 3),
                     "args": {source: round(float(value), 4)}})

    def finding(self, f: RecordedFinding, ts_us: float | None = None) -> None:
        self._write({"ph": "i", "s": "g", "cat": CAT_FINDING, "name": f.id, "pid": HOST_PID,
                     "tid": 1, "ts": round(ts_us if ts_us is not None else time.time() * 1e6, 3),
                     "args": {"severity": f.severity, "title": f.title,
                              "evidence": f.evidence, "fix": f.fix}})

    def update_meta(self, **facts: Any) -> None:
        """Facts learnt after the header (replica count, limitations, batch size)."""
        self._write({"ph": "M", "name": META_UPDATE, "pid": 0, "tid": 0, "args": facts})

    def pipeline(self, facts: dict[str, Any]) -> None:
        self._write({"ph": "i", "s": "g", "cat": CAT_PIPELINE, "name": "pipeline",
                     "pid": HOST_PID, "tid": 2, "ts": round(time.time() * 1e6, 3),
                     "args": facts})

    def window(self, start_us: float, end_us: float, what: str) -> None:
        self._write({"ph": "X", "cat": CAT_WINDOW, "name": what, "pid": HOST_PID, "tid": 1,
                     "ts": round(start_us, 3), "dur": round(end_us - start_us, 3)})

    def timeline(self, tl: Timeline, shift_us: float = 0.0) -> None:
        """A profiler window's device activity and input waits, moved onto our clock."""
        for (device, kind), iv in tl.activity.items():
            pid = self._device_pid(device)
            tid = list(Kind).index(kind) + 1
            # CPU compute threads nest many events: their union is what the analysis uses.
            # Device kernels stay individual (kernel sizes feed the launch-bound finding).
            m = iv.merged() if device.startswith("CPU") else iv
            for s, e in zip(m.starts.tolist(), m.ends.tolist(), strict=True):
                self._write({"ph": "X", "cat": CAT_DEVICE + kind.value, "name": kind.value,
                             "pid": pid, "tid": tid, "ts": round(s + shift_us, 3),
                             "dur": round(e - s, 3), "args": {"device": device}})
        waits = tl.input_wait.merged()
        name = max(tl.input_wait_names, key=lambda n: tl.input_wait_names[n], default="input")
        for s, e in zip(waits.starts.tolist(), waits.ends.tolist(), strict=True):
            self._write({"ph": "X", "cat": CAT_INPUT, "name": name, "pid": HOST_PID, "tid": 2,
                         "ts": round(s + shift_us, 3), "dur": round(e - s, 3)})
        if tl.pipeline:
            self.pipeline(tl.pipeline)
