"""Stream a gpudiag trace to disk while training runs (format: docs/trace-format.md).

Thread-safe (sampler threads and the training thread write concurrently), bounded in memory
(events go to disk at least every ``flush_every`` seconds), and always a readable file: killed
mid-run, it still reads up to its last complete line.

Bounded whatever the run's length: steps are written one by one for the first
``FULL_STEPS`` steps and inside profiler windows (``detail(True)``), and as one aggregate
per ``GROUP_S`` of steps elsewhere; counters likewise at full rate, elsewhere as ``AGG_S``
means (the GIL bursts, already one sample per burst, always at full rate). Measured: a
24-hour run with 8 GPUs stays under 200 MB (benchmarks/long_run.py).

Every event written is also gathered in a ``TimelineBuilder`` (``summary()``): the report at
the end of a run is built from it without reading the trace back, and it is the same as
``gpudiag analyze`` of the file (same events, same builder).

Training never breaks because of the trace: when the disk fills up or the directory is
read-only, the writer says so once (``on_error``), stops writing and counts what it could not
write (``dropped``); the running summary, and so the report, still has every event. (A
directory that vanishes mid-run keeps taking writes: the open file lives until closed.)

    path = claim_path("traces/run-{rank}.json", rank=0)   # never overwrites an existing file
    with TraceWriter(path, Metadata(producer="gpudiag")) as w:
        w.step(0, start_us, end_us)
        w.counter("gpu_util", "GPU 0", ts_us, 97.0)
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from gpudiag.record.claim import claim_path
from gpudiag.record.trace_events import (
    HOST_NAMES,
    counter_event,
    header_event,
    lint_event,
    pipeline_event,
    step_group_event,
    window_event,
)
from gpudiag.record.window_events import window_events
from gpudiag.trace.model.compiles import CompileEvent
from gpudiag.trace.model.timeline import Metadata, RecordedLint, Timeline
from gpudiag.trace.native.reader import (
    CAT_COMPILE,
    CAT_SPAN,
    CAT_STEP,
    DEVICE_PID_BASE,
    HOST_PID,
    META_UPDATE,
    TimelineBuilder,
)

__all__ = ["TraceWriter", "claim_path"]

FULL_STEPS = 2000  # steps written one by one at the start of a run (warm-up, short runs)
GROUP_S = 1.0  # elsewhere, one aggregate event per second of steps
AGG_S = 10.0  # counters outside windows and the first steps: one mean per 10 s
# one sample per GIL burst, memory read a few times a fit (record/memory.py): never aggregated
SPARSE_COUNTERS = ("gil_", "mem_")

WRITE_CHUNK = 1 << 16  # pending bytes that trigger a write even before flush_every


def _dumps(ev: dict[str, Any]) -> str:
    return json.dumps(ev, separators=(",", ":"), default=str, allow_nan=False)


class TraceWriter:
    def __init__(
        self,
        path: str,
        meta: Metadata,
        flush_every: float = 2.0,
        on_error: Callable[[str], None] | None = None,
    ) -> None:
        self.path = path
        self.flush_every = flush_every
        self.on_error = on_error
        self._lock = threading.Lock()
        self._agg_lock = threading.Lock()
        self._first = True
        self._last_flush = time.monotonic()
        self._device_pids: dict[str, int] = {}
        self._pending: list[bytes] = []  # lines not yet written
        self._pending_bytes = 0
        self.dropped = 0  # events the disk did not take (the summary still has them)
        self.failed: str | None = None  # why the disk stopped taking the trace
        self.events = 0
        self.closed = False
        self._fd: int | None = None
        self._builder = TimelineBuilder()
        self._header: dict[str, Any] = {}
        self._steps_seen = 0
        self._detail = False  # a profiler window is open: everything at full resolution
        self._group: list[tuple[float, float, int]] = []  # (start, end, batches) pending
        self._aggs: dict[tuple[str, str], list[float]] = {}  # (name, source) -> [t0, n, Σts, Σv]
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as e:
            self._fail(e)
        line = _dumps(header_event(meta))
        self._header = json.loads(line)["args"]
        self._write_line(line)
        for ev in HOST_NAMES:
            self._write(ev)
        self.flush()

    # ---- low level -------------------------------------------------------------------------
    def _write(self, ev: dict[str, Any], exact: bool = False) -> None:
        """Write one event and gather it for the summary. ``exact``: the event holds only
        numbers and plain strings, so it reads back equal without a JSON round trip."""
        line = _dumps(ev)
        self._write_line(line, ev if exact else json.loads(line))

    def _write_line(
        self, line: str, parsed: dict[str, Any] | None = None, step: tuple[Any, ...] | None = None
    ) -> None:
        with self._lock:
            if self.closed:
                return
            if parsed is not None:  # gathered in file order
                self._builder.add(parsed)
            elif step is not None:
                self._builder.add_step(*step)
            # each event ends its line, so a reader tailing the file never waits on one
            data = (("[\n" if self._first else ",") + line + "\n").encode("utf-8", "replace")
            self._first = False
            self.events += 1
            self._add(data)
            if (
                self._pending_bytes >= WRITE_CHUNK
                or time.monotonic() - self._last_flush >= self.flush_every
            ):
                self._flush_locked()

    def _add(self, data: bytes) -> None:
        if self.failed is None:
            self._pending.append(data)
            self._pending_bytes += len(data)
        else:
            self.dropped += 1

    def _flush_locked(self) -> None:
        self._last_flush = time.monotonic()
        if self.failed is not None or not self._pending or self._fd is None:
            return
        data = b"".join(self._pending)
        self._pending, self._pending_bytes = [], 0
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError) -> None:
        """Stop writing to disk (the running summary goes on), say so once."""
        if self.failed is not None:
            return
        self.failed = f"{e.strerror or type(e).__name__}" + (
            f" (errno {e.errno})" if e.errno else ""
        )
        self.dropped += len(self._pending)
        self._pending, self._pending_bytes = [], 0
        if self.on_error is not None:
            # a reporting problem must not become a training problem
            with contextlib.suppress(Exception):
                self.on_error(self.failed)

    def flush(self) -> None:
        with self._lock:
            if not self.closed:
                self._flush_locked()

    def close(self) -> None:
        self._flush_group()
        self._flush_aggs()
        with self._lock:
            if self.closed:
                return
            self._add(b"]\n")
            self._flush_locked()
            self.closed = True
            if self._fd is not None:
                try:
                    os.close(self._fd)
                except OSError as e:
                    self._fail(e)
                self._fd = None

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
            self._write(
                {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": device}}
            )
        return pid

    def step(
        self,
        index: int,
        start_us: float,
        end_us: float,
        profiled: bool = False,
        call: tuple[float, float] | None = None,
        batches: int = 1,
        keep: bool = False,
    ) -> None:
        """One training step; ``call`` is the train-function call inside it (start, end);
        ``batches`` > 1 when Keras runs several per call (steps_per_execution). Outside
        windows and after the first ``FULL_STEPS``, steps are gathered into groups, except
        those to ``keep`` one by one (an epoch's first and last: the fit account's)."""
        self._steps_seen += 1
        if not (profiled or keep or self._detail or self._steps_seen <= FULL_STEPS):
            self._group.append((start_us, end_us, batches))
            if end_us - self._group[0][0] >= GROUP_S * 1e6:
                self._flush_group()
            return
        if self._group:
            self._flush_group()
        # on the training thread every step: formatted directly, ~4x cheaper than json.dumps
        ts, dur = f"{start_us:.3f}", f"{end_us - start_us:.3f}"
        extra = ""
        read_call = None
        if call is not None:
            c0, cd = f"{call[0]:.3f}", f"{call[1] - call[0]:.3f}"
            extra = f',"call":[{c0},{cd}]'
            read_call = (float(c0), float(c0) + float(cd))
        if batches > 1:
            extra += f',"batches":{int(batches)}'
        self._write_line(
            f'{{"ph":"X","cat":"{CAT_STEP}","name":"step {int(index)}","pid":{HOST_PID},'
            f'"tid":1,"ts":{ts},"dur":{dur},'
            f'"args":{{"step":{int(index)},"profiled":{"true" if profiled else "false"}'
            f"{extra}}}}}",
            step=(
                int(index),
                float(ts),
                float(ts) + float(dur),
                profiled,
                read_call,
                max(1, int(batches)),
            ),
        )

    def _flush_group(self) -> None:
        """Write the pending steps as one aggregate: span, batches, summed step time,
        per-batch median, p90 and max."""
        group, self._group = self._group, []
        if not group:
            return
        self._write(step_group_event(group), exact=True)

    def detail(self, on: bool) -> None:
        """Full resolution (a profiler window is open) or aggregates (it closed)."""
        if on:
            self._flush_group()
            self._flush_aggs()
        self._detail = on

    def settle(self) -> None:
        """Write out what is gathered but not yet written (a group of steps, counter means),
        so that a summary taken now holds everything so far; recording goes on."""
        self._flush_group()
        self._flush_aggs()
        self.flush()

    def summary(self, path: str) -> Timeline:
        """What was written so far as a Timeline (frozen), built without reading the file:
        equal to ``gpudiag analyze`` of it. Costs the same whatever the run's length."""
        from gpudiag.trace.native.reader import metadata_from

        tl = Timeline(meta=metadata_from(self._header, path))
        with self._lock:
            return self._builder.into(tl).freeze()

    def span(
        self, name: str, start_us: float, end_us: float, cat: str = CAT_SPAN, **args: Any
    ) -> None:
        """A named host span: "fit", "epoch", "evaluation" (or, with ``cat``, gpudiag's own
        time in a hook, another callback's epoch hook: record/fit_clock.py)."""
        self._flush_group()
        self._write(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": HOST_PID,
                "tid": 3,
                "ts": round(start_us, 3),
                "dur": round(end_us - start_us, 3),
                "args": args,
            },
            exact=all(type(v) in (int, float, str, bool) for v in args.values()),
        )

    def compile(self, ev: CompileEvent) -> None:
        """A trace or compilation of the step (``record/compile_watch.py``); never
        aggregated: a run compiles a few times, or few enough that each one matters."""
        self._write(
            {
                "ph": "X",
                "cat": CAT_COMPILE,
                "name": ev.what,
                "pid": HOST_PID,
                "tid": 4,
                "ts": round(ev.start, 3),
                "dur": round(ev.end - ev.start, 3),
                "args": ev.to_args(),
            }
        )

    def counter(self, name: str, source: str, ts_us: float, value: float) -> None:
        if value != value:  # NaN: not measured
            return
        if self._detail or self._steps_seen <= FULL_STEPS or name.startswith(SPARSE_COUNTERS):
            self._counter(name, source, ts_us, value)
            return
        with self._agg_lock:
            agg = self._aggs.setdefault((name, source), [ts_us, 0.0, 0.0, 0.0])
            agg[1] += 1
            agg[2] += ts_us
            agg[3] += value
            due = ts_us - agg[0] >= AGG_S * 1e6
        if due:
            self._flush_aggs(key=(name, source))

    def _counter(self, name: str, source: str, ts_us: float, value: float) -> None:
        self._write(counter_event(name, source, ts_us, value), exact=True)

    def _flush_aggs(self, key: tuple[str, str] | None = None) -> None:
        """Write counter means (one event at the mean time of the samples they stand for)."""
        with self._agg_lock:
            keys = list(self._aggs) if key is None else [key]
            done = [(k, self._aggs.pop(k)) for k in keys if k in self._aggs]
        for (name, source), (_t0, n, sum_ts, sum_v) in done:
            if n:
                self._counter(name, source, sum_ts / n, sum_v / n)

    def finding(self, f: RecordedLint, ts_us: float | None = None) -> None:
        self._write(lint_event(f, ts_us if ts_us is not None else time.time() * 1e6))

    def update_meta(self, **facts: Any) -> None:
        """Facts learnt after the header (replica count, limitations, batch size)."""
        self._write({"ph": "M", "name": META_UPDATE, "pid": 0, "tid": 0, "args": facts})

    def pipeline(self, facts: dict[str, Any]) -> None:
        self._write(pipeline_event(facts, time.time() * 1e6))

    def window(self, start_us: float, end_us: float, what: str) -> None:
        self._write(window_event(start_us, end_us, what))

    def timeline(self, tl: Timeline, shift_us: float = 0.0) -> None:
        """A profiler window's device activity and input waits, moved onto our clock."""
        for ev, exact in window_events(tl, self._device_pid, shift_us):
            self._write(ev, exact=exact)
        if tl.pipeline:
            self.pipeline(tl.pipeline)
