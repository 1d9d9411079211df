"""Tail a gpudiag trace while DiagnoseCallback writes it, keeping a bounded rolling view.

Each ``poll()`` reads only the bytes added since the last one (a partial last line waits for
the next poll), at most ``MAX_READ`` of them, so a frame is drawn soon whatever the writer
does; a tail more than ``MAX_BEHIND`` behind the writer skips ahead to its last ``MAX_READ``
and says how much it skipped. Kept: the header and the first ``MAX_META_EVENTS`` metadata
updates and findings, the latest ``MAX_WINDOW_EVENTS`` events of the profiler windows (the
one being written and the last complete ones), and the last ``window_s`` seconds of steps
and counters (at most ``MAX_ROLLING``) — so memory stays flat however long training runs,
even when a profiler window never closes (a 57 MB stream of one open window took 417 MB).

    tail = TraceTail("gpudiag-trace-….json")
    if tail.poll():
        tl = tail.timeline()      # a Timeline the analyzers take as they take any other
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.native.reader import (
    CAT_DEVICE,
    CAT_FINDING,
    CAT_INPUT,
    CAT_PIPELINE,
    CAT_SPAN,
    CAT_STEP,
    CAT_STEP_GROUP,
    CAT_WINDOW,
    MAX_LINE,
    META_EVENT,
    META_UPDATE,
    fill_timeline,
    metadata_from,
    parse_line,
    validate_event,
)
from gpudiag.trace.source.event_check import check_event

# Events of the profiler windows held: about 500 bytes each as parsed, so ~25 MB, and a
# frame's diagnosis of them well under a second (benchmarks/follow_memory.py).
MAX_WINDOW_EVENTS = 50_000
MAX_ROLLING = 100_000  # steps and counters of the last window_s: 30 s of 3,000 steps/s
MAX_META_EVENTS = 1_000  # as the file's reader: the callback writes a handful
MAX_READ = 2 << 20  # bytes read per poll (~20,000 events): a burst takes several frames
MAX_BEHIND = 32 << 20  # further behind the writer than this, the tail skips ahead
KEEP_WINDOWS = 3


class NotGpudiagTrace(ValueError):
    """The followed file is not a gpudiag trace."""


class TraceTail:
    def __init__(self, path: str, window_s: float = 30.0) -> None:
        self.path = path
        self.window_us = window_s * 1e6
        self._reset()

    def _reset(self) -> None:
        self.header: dict[str, Any] | None = None
        self.meta_events: list[dict[str, Any]] = []
        # steps and counters, time-bounded
        self.rolling: deque[dict[str, Any]] = deque(maxlen=MAX_ROLLING)
        # the window being written (device, input, steps): its latest events
        self.profile: deque[dict[str, Any]] = deque(maxlen=MAX_WINDOW_EVENTS)
        # the last few complete profiler windows: the live verdict follows the run
        self.windows: deque[list[dict[str, Any]]] = deque(maxlen=KEEP_WINDOWS)
        self.skipped = 0  # bytes skipped to keep up with the writer
        self.latest_us = 0.0
        self.closed = False  # the closing bracket was seen: the run ended
        self.bad_lines = 0  # malformed or wrongly typed lines, skipped
        self._offset = 0
        self._partial = b""
        self._overlong = False  # inside a line longer than MAX_LINE: skip to its newline
        self._inode: int | None = None

    @property
    def exists(self) -> bool:
        return os.path.exists(self.path)

    def poll(self) -> bool:
        """Read what was appended; True if anything new arrived."""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if self._inode is not None and (st.st_ino != self._inode or st.st_size < self._offset):
            self._reset()  # the file was replaced: a new run
        self._inode = st.st_ino
        if st.st_size <= self._offset:
            return False
        if self.header is not None and st.st_size - self._offset > MAX_BEHIND:
            ahead = st.st_size - MAX_READ  # the latest events; the line cut is skipped
            self.skipped += ahead - self._offset
            self._offset, self._partial, self._overlong = ahead, b"", True
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read(min(st.st_size - self._offset, MAX_READ))
        except OSError:
            return False
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # incomplete until its newline arrives
        if self._overlong and lines:
            lines.pop(0)  # the rest of an overlong line
            self._overlong = False
        if len(self._partial) > MAX_LINE:  # a flood without newlines: drop, count once
            self._partial = b""
            if not self._overlong:
                self.bad_lines += 1
            self._overlong = True
        if self._partial.strip() == b"]":
            lines.append(self._partial)
            self._partial = b""
        new = False
        for raw in lines:
            if raw.strip() == b"]":
                self.closed = True
                continue
            try:
                ev = parse_line(raw)
                if ev is None:
                    continue
                if check_event(ev, self.path) is None:
                    raise ValueError("impossible times")
                validate_event(ev)
            except (ValueError, TypeError, KeyError, OverflowError, TraceError):
                self.bad_lines += 1  # one bad line must not freeze the panel
                continue
            self._keep(ev)
            new = True
        self._prune()
        return new

    def _keep(self, ev: dict[str, Any]) -> None:
        name = ev.get("name")
        cat = str(ev.get("cat", ""))
        if self.header is None:
            if name != META_EVENT:
                raise NotGpudiagTrace(f"{self.path}: not a gpudiag trace (no gpudiag.metadata)")
            self.header = ev.get("args") or {}
            return
        ts = ev.get("ts")
        if isinstance(ts, int | float):
            self.latest_us = max(self.latest_us, float(ts) + float(ev.get("dur", 0) or 0))
        if name == META_UPDATE or cat in (CAT_FINDING, CAT_PIPELINE, CAT_SPAN):
            if len(self.meta_events) < MAX_META_EVENTS:
                self.meta_events.append(ev)
        elif cat == CAT_WINDOW:  # a window's events are complete: keep the last few windows
            self.profile.append(ev)
            self.windows.append(list(self.profile))
            self.profile.clear()
            self._bound_windows()
        elif _in_window(ev, cat):
            self.profile.append(ev)
        elif cat in (CAT_STEP, CAT_STEP_GROUP) or ev.get("ph") == "C":
            self.rolling.append(ev)

    def _bound_windows(self) -> None:
        """The complete windows hold at most ``MAX_WINDOW_EVENTS`` events together: the
        oldest windows go first."""
        while len(self.windows) > 1 and sum(map(len, self.windows)) > MAX_WINDOW_EVENTS:
            self.windows.popleft()

    def _prune(self) -> None:
        horizon = self.latest_us - self.window_us
        while self.rolling and float(self.rolling[0].get("ts", 0)) < horizon:
            self.rolling.popleft()

    def timeline(self) -> Timeline | None:
        """The rolling view as a Timeline (None until the header has arrived)."""
        if self.header is None:
            return None
        tl = Timeline(meta=metadata_from(self.header, self.path))
        done = [ev for w in self.windows for ev in w]
        fill_timeline(tl, [*self.meta_events, *done, *self.profile, *self.rolling])
        return tl.freeze()

    def recent_steps(self, seconds: float = 10.0) -> list[tuple[float, float]]:
        """(start, end) µs of steps that ended in the last ``seconds``."""
        horizon = self.latest_us - seconds * 1e6
        out = []
        for ev in [*self.rolling, *(e for w in self.windows for e in w), *self.profile]:
            cat = ev.get("cat")
            ts, dur = float(ev["ts"]), float(ev.get("dur", 0))
            if ts < horizon:
                continue
            if cat == CAT_STEP:
                out.append((ts, ts + dur))
            elif cat == CAT_STEP_GROUP:  # aggregated steps: n steps of the group's median
                args = ev.get("args") or {}
                n = max(1, int(args.get("steps", 1)))
                p50 = float(args.get("p50", dur / n))
                out += [(ts + k * dur / n, ts + k * dur / n + p50) for k in range(n)]
        return sorted(out)


def _in_window(ev: dict[str, Any], cat: str) -> bool:
    """A profiler window's event: device activity, an input wait, a profiled step."""
    if cat.startswith(CAT_DEVICE) or cat == CAT_INPUT:
        return True
    return cat == CAT_STEP and bool((ev.get("args") or {}).get("profiled"))
