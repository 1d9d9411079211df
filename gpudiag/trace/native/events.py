"""gpudiag trace events into Timeline data: the format's names, metadata and the builder.

What the events of a gpudiag trace mean (docs/trace-format.md): the writer
(``record/writer.py``) names its events with these constants and feeds each one to a
``TimelineBuilder`` as it writes it; the reader (``reader.py``) feeds the same
builder from a file; the follower (``follow.py``) checks each line with ``validate_event``.

    b = TimelineBuilder()
    for ev in events:            # everything after the header event
        b.add(ev)
    tl = b.into(Timeline(meta=metadata_from(header_args, path)), last=True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gpudiag.trace.model.compiles import CompileEvent, Compiles, shapes_from
from gpudiag.trace.model.sink import (
    MAX_KEYS,
    STEP_WEIGHT,
    IntervalBudget,
    IntervalSink,
    SinkTable,
    Totals,
)
from gpudiag.trace.model.timeline import Kind, Metadata, RecordedLint, StepBuckets, Timeline

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
CAT_SPAN = "gpudiag.span"  # name: "fit" | "epoch" | "evaluation"
CAT_OWN = "gpudiag.own"  # gpudiag's own time in a hook of the fit (name: the hook)
CAT_CALLBACK = "gpudiag.callback"  # another callback's epoch hook (name: its class)
# Timeline.spans keys of the fit account (analyze/fit_account.py)
SPAN_OWN = "gpudiag"
SPAN_CALLBACK = "callback:"  # + the callback's class
CAT_STEP_GROUP = "gpudiag.steps"  # steps outside windows, aggregated
CAT_COMPILE = "gpudiag.compile"  # a trace or compilation of the step (model/compiles.py)
HOST_PID = 1
DEVICE_PID_BASE = 100
MAX_FINDINGS = 1000  # recorded findings and metadata updates kept per file


_META_FIELDS = (
    "producer",
    "devices",
    "device_type",
    "replicas",
    "rank",
    "world_size",
    "batch_size",
    "framework",
    "hostname",
    "run_id",
    "limitations",
    "extra",
    "config",
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


_DEVICE_KINDS = {CAT_DEVICE + k.value: k for k in Kind}  # cat -> Kind, without a lookup by value


def _num(v: Any) -> float:
    """A finite JSON number; anything else (a string "high", NaN, a bool) is a ValueError."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        raise ValueError(f"expected a finite number, got {str(v)[:20]!r}")
    return float(v)


def validate_event(ev: dict[str, Any]) -> None:
    """Raise ValueError/TypeError/KeyError if ``fill_timeline`` could not take ``ev``: lets a
    follower drop one bad line instead of failing on it at every later frame."""
    ph = ev.get("ph")
    args = ev.get("args")
    if args is not None and not isinstance(args, dict):
        raise TypeError("args is not an object")
    args = args or {}
    if ph in ("X", "C"):
        _num(ev["ts"])
    if ph == "X":
        _num(ev.get("dur", 0.0))
        cat = str(ev.get("cat", ""))
        if cat == CAT_STEP:
            int(args.get("step", 0))
            call = args.get("call")
            if isinstance(call, list) and len(call) == 2:
                _num(call[0]), _num(call[1])
            int(args.get("batches", 1))
        elif cat == CAT_STEP_GROUP:
            int(args["batches"])
            for key in ("busy", "p50", "p90", "max"):
                _num(args[key])
        elif cat.startswith(CAT_DEVICE):
            Kind(cat[len(CAT_DEVICE) :])
            str(args["device"])
            int(args.get("n", 1))
    elif ph == "C":
        str(ev["name"])
        for value in args.values():
            if value is not None:
                _num(value)
    elif ph in ("i", "I", "M") and ev.get("cat") == CAT_FINDING:
        str(ev["name"])
        dict(args.get("evidence") or {})
    elif ph in ("i", "I", "M") and ev.get("name") == META_UPDATE:
        _update_meta(Metadata(producer="check"), args)


def fill_timeline(tl: Timeline, events: Iterable[dict[str, Any]]) -> None:
    """Add gpudiag events (everything after the header) to ``tl``."""
    b = TimelineBuilder()
    for ev in events:
        b.add(ev)
    b.into(tl, last=True)


class TimelineBuilder:
    """Gathers gpudiag events one at a time into what a Timeline is made of.

    The one place events become Timeline data: ``gpudiag analyze`` feeds it the events of a
    file; TraceWriter feeds it every event it writes, as it writes it, so the report at the
    end of a run costs the same whatever the run's length (it never reads the trace back)
    and is the same as ``gpudiag analyze`` of the file. Intervals go to bounded sinks
    (``model/sink.py``); every other table is capped, so no file can grow it without bound.
    """

    def __init__(self) -> None:
        self.budget = IntervalBudget()
        # index, profiled, call start, call end, batches
        self.steps = self.budget.sink(mergeable=False, columns="qbddq", weight=STEP_WEIGHT)
        # batches, busy, p50, p90, max of steps outside profiled windows
        self.groups = self.budget.sink(mergeable=False, columns="qdddd")
        self.dev: SinkTable[tuple[str, Kind]] = SinkTable(self.budget)
        self.inputs = self.budget.sink()
        self.input_names = Totals()
        # (name, source): ts, ts and the value
        self.counters: SinkTable[tuple[str, str]] = SinkTable(self.budget, False, "d")
        self.kernels: dict[str, int] = {}
        self.spans: SinkTable[str] = SinkTable(self.budget, mergeable=False)
        self.findings: list[RecordedLint] = []
        self.pipeline: dict[str, Any] = {}
        self.meta_updates: list[dict[str, Any]] = []
        self.compiles = Compiles()

    def add_step(
        self,
        index: int,
        ts: float,
        end: float,
        profiled: bool,
        call: tuple[float, float] | None,
        batches: int,
    ) -> None:
        c0, c1 = call if call is not None else (math.nan, math.nan)
        self.steps.add(ts, end, index, profiled, c0, c1, batches)

    def add(self, ev: dict[str, Any]) -> None:
        ph = ev.get("ph")
        cat = ev.get("cat", "")
        if ph == "X":
            ts = ev["ts"]
            if type(ts) is not float or ts - ts != 0.0:  # the common case: a finite float
                ts = _num(ts)
            dur = ev.get("dur", 0.0)
            if type(dur) is not float or dur - dur != 0.0:
                dur = _num(dur)
            end = ts + dur
            args = ev.get("args") or {}
            kind = _DEVICE_KINDS.get(cat)
            if kind is not None or cat.startswith(CAT_DEVICE):
                if kind is None:
                    kind = Kind(cat[len(CAT_DEVICE) :])  # ValueError: not a kind
                device = args["device"]
                if type(device) is not str:
                    device = str(device)
                self.dev.add((device, kind), ts, end)
                if kind is Kind.COMPUTE and (
                    device in self.kernels or len(self.kernels) < MAX_KEYS
                ):
                    self.kernels[device] = self.kernels.get(device, 0) + int(args.get("n", 1))
            elif cat == CAT_STEP:
                call = args.get("call")  # [start, duration] of the train-function call
                self.add_step(
                    int(args.get("step", len(self.steps))),
                    ts,
                    end,
                    bool(args.get("profiled", False)),
                    (_num(call[0]), _num(call[0]) + _num(call[1]))
                    if isinstance(call, list) and len(call) == 2
                    else None,
                    max(1, int(args.get("batches", 1))),
                )
            elif cat == CAT_INPUT:
                if self.inputs.add(ts, end):
                    self.input_names.add(str(ev.get("name", "input")), end - ts)
            elif cat == CAT_STEP_GROUP:
                self.groups.add(
                    ts,
                    end,
                    int(args["batches"]),
                    _num(args["busy"]),
                    _num(args["p50"]),
                    _num(args["p90"]),
                    _num(args["max"]),
                )
            elif cat == CAT_SPAN:
                self.spans.add(str(ev.get("name")), ts, end)
            elif cat == CAT_OWN:
                self.spans.add(SPAN_OWN, ts, end)
            elif cat == CAT_CALLBACK:
                self.spans.add(SPAN_CALLBACK + str(ev.get("name")), ts, end)
            elif cat == CAT_WINDOW:
                self.spans.add("profile window", ts, end)
            elif cat == CAT_COMPILE:
                self.compiles.add(
                    CompileEvent(
                        ts,
                        end,
                        str(ev.get("name", "")),
                        str(args.get("kind", "compile")),
                        str(args.get("source", "")),
                        shapes_from(args.get("shapes")),
                    )
                )
        elif ph == "C":
            ts = _num(ev["ts"])
            for source, value in (ev.get("args") or {}).items():
                if value is None:
                    continue
                series = self.counters.get((str(ev["name"]), str(source)))
                if series is not None:
                    series.add(ts, ts, _num(value))
        elif ph in ("i", "I", "M"):
            args = ev.get("args") or {}
            if cat == CAT_FINDING:
                if len(self.findings) < MAX_FINDINGS:
                    self.findings.append(
                        RecordedLint(
                            id=str(ev["name"]),
                            severity=str(args.get("severity", "moderate")),
                            title=str(args.get("title", ev["name"])),
                            evidence=dict(args.get("evidence") or {}),
                            fix=str(args.get("fix", "")),
                        )
                    )
            elif cat == CAT_PIPELINE:
                if len(self.pipeline) < MAX_KEYS:
                    self.pipeline.update(args)
            elif ev.get("name") == META_UPDATE and len(self.meta_updates) < MAX_FINDINGS:
                self.meta_updates.append(args)

    def into(self, tl: Timeline, last: bool = False) -> Timeline:
        """Add everything gathered to ``tl`` (not frozen); returns it. ``last``: nothing
        will be added afterwards, so the data is handed over instead of copied."""

        def cols(sink: IntervalSink) -> tuple[np.ndarray, ...]:
            if last:
                return sink.take()
            return (*sink.arrays(), *(sink.column(i) for i in range(len(sink.columns))))

        tl.findings.extend(self.findings)
        tl.compiles.extend(self.compiles)
        tl.pipeline.update(self.pipeline)
        for args in self.meta_updates:
            _update_meta(tl.meta, args)
        for name, sink in self.spans.sinks.items():
            tl.spans.setdefault(name, []).extend(zip(*_lists(sink), strict=True))
        if len(self.steps):
            s, e, index, profiled, call_s, call_e, batches = cols(self.steps)
            tl.add_steps(
                index.astype(np.int64),
                s,
                e,
                profiled.astype(bool),
                batches=batches.astype(np.int64),
                call_bounds=(call_s, call_e),
            )
        if len(self.groups):
            s, e, batches, *stats = cols(self.groups)
            tl.step_buckets = StepBuckets(s, e, batches.astype(np.int64), *stats)
        for (device, kind), sink in self.dev.sinks.items():
            s, e = cols(sink)
            tl.add_activity(device, kind, s, e)
        tl.kernel_counts.update(self.kernels)
        if len(self.inputs):
            waits = cols(self.inputs)
            tl.add_input_wait(waits[0], waits[1], name_totals=self.input_names)
        for (name, source), series in self.counters.sinks.items():
            ts, _, values = cols(series)
            tl.add_counter(name, source, ts, values)
        self.budget.finish(tl)
        return tl


def _lists(sink: IntervalSink) -> tuple[list[float], list[float]]:
    return sink.starts.tolist(), sink.ends.tolist()
