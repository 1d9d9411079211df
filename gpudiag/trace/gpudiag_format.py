"""gpudiag's own trace format: streamed Chrome Trace Event JSON (see docs/trace-format.md).

One event per line in a JSON array, written as ``[`` then ``{first}`` then ``,{next}`` lines
and a closing ``]``. Perfetto and chrome://tracing open it (the array format allows the
closing bracket to be missing), and a file cut off mid-write (training killed) still reads up
to its last complete line.

    timelines = read_gpudiag(raw_bytes, "run.gpudiag.json")
"""

from __future__ import annotations

import json
from array import array
from typing import Any

import numpy as np

from gpudiag.trace.chrome import loads
from gpudiag.trace.errors import TraceError
from gpudiag.trace.timeline import Kind, Metadata, RecordedFinding, StepBuckets, Timeline

FORMAT_NAME = "gpudiag-trace"
FORMAT_VERSION = 1
META_EVENT = "gpudiag.metadata"  # first event: run facts (Metadata fields)
META_UPDATE = "gpudiag.metadata.update"  # later facts (replicas once known, limitations)
CAT_STEP = "step"
CAT_INPUT = "input"
CAT_DEVICE = "device."  # + Kind value: device.compute, device.h2d, ...
CAT_FINDING = "gpudiag.finding"
CAT_PIPELINE = "gpudiag.pipeline"
CAT_WINDOW = "gpudiag.profile_window"
CAT_SPAN = "gpudiag.span"  # name: "epoch" | "evaluation"
CAT_STEP_GROUP = "gpudiag.steps"  # steps outside windows, aggregated
HOST_PID = 1
DEVICE_PID_BASE = 100


def parse_line(line: str) -> dict[str, Any] | None:
    """One line of a gpudiag stream as an event; None for brackets and blank lines.
    Raises ValueError for a line that is not a complete event."""
    s = line.strip()
    if s in ("", "[", "]"):
        return None
    if s.startswith(","):
        s = s[1:]
    if s.endswith("]"):
        s = s[:-1]
    ev = loads(s)
    if not isinstance(ev, dict):
        raise ValueError("not a trace event object")
    return ev


def parse_stream(raw: bytes, path: str) -> tuple[list[dict[str, Any]], bool]:
    """Events of a gpudiag stream and whether its tail was cut off.

    Fast path: the whole file is valid JSON. A truncated file is re-read up to its last
    complete line; a bad line before the last one is corruption, not truncation.
    """
    try:
        events = loads(raw)
        if isinstance(events, list):
            return events, False
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        pass
    text = raw.decode("utf-8", errors="replace")
    lines = text.split("\n")
    events = []
    truncated = False
    for lineno, line in enumerate(lines, 1):
        try:
            ev = parse_line(line)
        except ValueError:  # JSONDecodeError included
            if all(not rest.strip() for rest in lines[lineno:]):
                truncated = True  # the last line was being written when the run died
                break
            raise TraceError(path, f"corrupt gpudiag trace at line {lineno}") from None
        if ev is not None:
            events.append(ev)
    return events, truncated


def read_gpudiag(raw: bytes, path: str) -> list[Timeline]:
    events, truncated = parse_stream(raw, path)
    if not events or events[0].get("name") != META_EVENT:
        raise TraceError(path, "not a gpudiag trace (no gpudiag.metadata header)")
    header = events[0].get("args") or {}
    if header.get("format") != FORMAT_NAME:
        raise TraceError(path, "gpudiag.metadata header names another format")
    if int(header.get("version", 0)) > FORMAT_VERSION:
        raise TraceError(
            path, f"trace format version {header.get('version')} is newer than this gpudiag"
        )
    tl = Timeline(meta=metadata_from(header, path))
    if truncated:
        tl.meta.limitations.append(
            "trace file ends mid-event (the run was killed); read up to its last complete event"
        )
    try:
        fill_timeline(tl, events[1:])
    except (KeyError, TypeError, ValueError) as e:
        raise TraceError(path, f"malformed gpudiag event ({type(e).__name__}: {e})") from None
    return [tl.freeze()]


_META_FIELDS = (
    "producer", "devices", "device_type", "replicas", "rank", "world_size", "batch_size",
    "framework", "hostname", "run_id", "limitations", "extra", "config",
)


def metadata_from(args: dict[str, Any], path: str) -> Metadata:
    """Metadata from the header event's args."""
    meta = Metadata(producer="gpudiag", source=path)
    _update_meta(meta, args)
    return meta


def _update_meta(meta: Metadata, args: dict[str, Any]) -> None:
    for key in _META_FIELDS:
        if key not in args or args[key] is None:
            continue
        value = args[key]
        if key == "limitations":
            meta.limitations.extend(str(x) for x in value if str(x) not in meta.limitations)
        elif key == "devices":
            meta.devices.extend(str(x) for x in value if str(x) not in meta.devices)
        elif key == "extra":
            meta.extra.update(dict(value))
        elif key == "config":
            meta.config.update(dict(value))
        elif key in ("replicas", "rank", "world_size", "batch_size"):
            setattr(meta, key, int(value))
        else:
            setattr(meta, key, str(value))


def fill_timeline(tl: Timeline, events: list[dict[str, Any]]) -> None:
    """Add gpudiag events (everything after the header) to ``tl``."""
    b = TimelineBuilder()
    for ev in events:
        b.add(ev)
    b.into(tl)


class TimelineBuilder:
    """Gathers gpudiag events one at a time into what a Timeline is made of.

    The one place events become Timeline data: ``gpudiag analyze`` feeds it the events of a
    file; TraceWriter feeds it every event it writes, as it writes it, so the report at the
    end of a run costs the same whatever the run's length (it never reads the trace back)
    and is the same as ``gpudiag analyze`` of the file.
    """

    def __init__(self) -> None:
        self.step_idx: list[int] = []
        self.step_s: list[float] = []
        self.step_e: list[float] = []
        self.step_p: list[bool] = []
        self.step_c: list[tuple[float, float] | None] = []
        self.step_b: list[int] = []
        self.groups: list[tuple[float, ...]] = []
        self.dev: dict[tuple[str, Kind], tuple[array[float], array[float]]] = {}
        self.in_s: list[float] = []
        self.in_e: list[float] = []
        self.in_n: list[str] = []
        self.counters: dict[tuple[str, str], tuple[array[float], array[float]]] = {}
        self.kernels: dict[str, int] = {}
        self.spans: dict[str, list[tuple[float, float]]] = {}
        self.findings: list[RecordedFinding] = []
        self.pipeline: dict[str, Any] = {}
        self.meta_updates: list[dict[str, Any]] = []

    def add_step(self, index: int, ts: float, end: float, profiled: bool,
                 call: tuple[float, float] | None, batches: int) -> None:
        self.step_idx.append(index)
        self.step_s.append(ts)
        self.step_e.append(end)
        self.step_p.append(profiled)
        self.step_c.append(call)
        self.step_b.append(batches)

    def add(self, ev: dict[str, Any]) -> None:
        ph = ev.get("ph")
        cat = ev.get("cat", "")
        if ph == "X":
            ts = float(ev["ts"])
            end = ts + float(ev.get("dur", 0.0))
            args = ev.get("args") or {}
            if cat == CAT_STEP:
                call = args.get("call")  # [start, duration] of the train-function call
                self.add_step(int(args.get("step", len(self.step_idx))), ts, end,
                              bool(args.get("profiled", False)),
                              (float(call[0]), float(call[0]) + float(call[1]))
                              if isinstance(call, list) and len(call) == 2 else None,
                              max(1, int(args.get("batches", 1))))
            elif cat == CAT_STEP_GROUP:
                self.groups.append((ts, end, int(args["batches"]), float(args["busy"]),
                                    float(args["p50"]), float(args["p90"]), float(args["max"])))
            elif cat == CAT_SPAN:
                self.spans.setdefault(str(ev.get("name")), []).append((ts, end))
            elif cat == CAT_WINDOW:
                self.spans.setdefault("profile window", []).append((ts, end))
            elif cat.startswith(CAT_DEVICE):
                kind = Kind(cat[len(CAT_DEVICE):])
                device = str(args["device"])
                lists = self.dev.setdefault((device, kind), (array("d"), array("d")))
                lists[0].append(ts)
                lists[1].append(end)
                if kind is Kind.COMPUTE:
                    self.kernels[device] = self.kernels.get(device, 0) + int(args.get("n", 1))
            elif cat == CAT_INPUT:
                self.in_s.append(ts)
                self.in_e.append(end)
                self.in_n.append(str(ev.get("name", "input")))
        elif ph == "C":
            ts = float(ev["ts"])
            for source, value in (ev.get("args") or {}).items():
                if value is None:
                    continue
                series = self.counters.setdefault((str(ev["name"]), str(source)),
                                                  (array("d"), array("d")))
                series[0].append(ts)
                series[1].append(float(value))
        elif ph in ("i", "I", "M"):
            args = ev.get("args") or {}
            if cat == CAT_FINDING:
                self.findings.append(
                    RecordedFinding(
                        id=str(ev["name"]),
                        severity=str(args.get("severity", "moderate")),
                        title=str(args.get("title", ev["name"])),
                        evidence=dict(args.get("evidence") or {}),
                        fix=str(args.get("fix", "")),
                    )
                )
            elif cat == CAT_PIPELINE:
                self.pipeline.update(args)
            elif ev.get("name") == META_UPDATE:
                self.meta_updates.append(args)

    def into(self, tl: Timeline) -> Timeline:
        """Add everything gathered to ``tl`` (not frozen); returns it."""
        tl.findings.extend(self.findings)
        tl.pipeline.update(self.pipeline)
        for args in self.meta_updates:
            _update_meta(tl.meta, args)
        for name, spans in self.spans.items():
            tl.spans.setdefault(name, []).extend(spans)
        if self.step_idx:
            tl.add_steps(self.step_idx, self.step_s, self.step_e, self.step_p, self.step_c,
                         batches=self.step_b)
        if self.groups:
            a = np.array(self.groups, dtype=np.float64)
            tl.step_buckets = StepBuckets(a[:, 0], a[:, 1], a[:, 2].astype(np.int64),
                                          a[:, 3], a[:, 4], a[:, 5], a[:, 6])
        for (device, kind), (s, e) in self.dev.items():
            tl.add_activity(device, kind, np.frombuffer(s).copy(), np.frombuffer(e).copy())
        tl.kernel_counts.update(self.kernels)
        if self.in_s:
            tl.add_input_wait(self.in_s, self.in_e, self.in_n)
        for (name, source), (ts_list, values) in self.counters.items():
            tl.add_counter(name, source, np.frombuffer(ts_list).copy(),
                           np.frombuffer(values).copy())
        return tl
