"""XSpace (``.xplane.pb``) -> the trace-viewer event dicts xprof's ``trace_viewer`` makes.

xprof converts an XSpace in C++ (``tsl/profiler/convert/xplane_to_trace_events.cc``), then
its Python ``TraceEventsJsonStream`` turns the result into Chrome trace events. The same
mapping is done here, one event at a time, straight from the protobuf messages of
``schema.py`` (the protobuf runtime decodes; nothing is parsed by hand):

- one process per plane: the host plane ``/host:CPU`` is pid 701, device planes (GPU, else
  TPU, else custom) pid ``1 + plane.id``; ``process_name`` and ``process_sort_index`` first;
- one thread per line: tid is the line's display id (else its id) as uint32, named by its
  display name (else name); "Async XLA Ops" lines are left out, as xprof does;
- ``X`` events with ``ts``/``dur`` in µs (``i`` instants where the duration is 0), named by
  the event's display name (``long_name`` then holds the name) or its ``step_name`` stat;
  ``args`` the metadata's stats then the event's, as strings (``ref_value`` resolved to the
  name it points at), xprof's internal ones (``_p``, ``_c``, ``_r``, ``flops``...) left out;
  memory (de)allocation and tf.data produce/consume events left out, as xprof does.

Where this differs from xprof, on purpose (docs/formats.md):

- events with impossible times are dropped and counted (``dropped``): a negative duration or
  offset, either over a day, a time beyond int64 picoseconds. xprof converts them to
  uint64, so -1 ps became a 213-day kernel;
- no event cap: xprof keeps the 5,000,000 earliest events, gpudiag's interval bound applies;
- a device plane of id 700 would take the host's pid 701 (xprof's pids hold 500 devices and
  200 custom planes): it gets the next free pid instead;
- an XSpace the profiler left ungrouped (TensorFlow since 2.5, JAX) xprof first groups:
  the step names of root events, the threadpool regions (``prep.py``) and the GPU
  "Steps" lines (``steps.py``) are redone; the group-id/flow args and the other derived
  device lines ("XLA Modules", "Framework Ops", ...) are not (``modules_not_derived`` says
  when the XLA Modules line would have held events).

The file is decoded with each line left serialized (``XSpaceLines``) and a line's events are
decoded when they are wanted: the decoded events of only one line are held at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.source.limits import XSpaceBounds
from gpudiag.trace.tf.xspace.args import INTERNAL_EVENTS, STEP_NAME, add_stats, lazy_args
from gpudiag.trace.tf.xspace.counts import XSpaceShape, xspace_shape
from gpudiag.trace.tf.xspace.lines import parse_line
from gpudiag.trace.tf.xspace.prep import (
    REGION,
    Grouping,
    StepNames,
    is_grouped,
    may_group,
    region_ids,
    regions,
)
from gpudiag.trace.tf.xspace.schema import XSpaceLines
from gpudiag.trace.tf.xspace.steps import CORRELATION_ID, STEPS_LINE, STEPS_TID, StepDeriver

HOST_PLANE = "/host:CPU"
HLO_MODULE = "hlo_module"  # the stat of GPU events xprof derives its "XLA Modules" line from
GPU_PREFIX = "/device:GPU:"
DEVICE_PREFIXES = (GPU_PREFIX, "/device:TPU:", "/device:CUSTOM:")  # the first that has any
FIRST_DEVICE_ID = 1  # xprof's trace_utils.h: devices 1..500, custom planes 501..700
HOST_DEVICE_ID = 701
ASYNC_XLA_OPS = "Async XLA Ops"
PS_PER_US = 1_000_000.0
# A profiling session lasts seconds to minutes; an event lasting, or starting, more than a
# day into its line is a corrupt or wrapped value (-1 ps read as uint64 is 213 days).
MAX_DURATION_PS = 86_400 * 10**12
MAX_PS = 2**63 - 1  # xprof computes times in int64 ps: beyond it, its own figures wrap
UINT32 = 0xFFFF_FFFF
Hook = Callable[[int, int, "int | None"], None]  # (start ps, duration ps, correlation id)


@dataclass
class PlaneInfo:
    """What the names need of one plane, read before any event."""

    index: int  # in the XSpace
    device_id: int
    name: str
    lines: list[tuple[int, str]]  # (resource id, display name) per line, in order


@dataclass
class XSpaceEvents:
    """The trace-viewer events of one XSpace file, made anew on each iteration."""

    path: str
    space: Any = field(repr=False)  # XSpaceLines: metadata decoded, each line serialized
    converted: list[PlaneInfo]  # the planes xprof converts: host first, then devices
    grouped: bool = True  # by the profiler: xprof converts it as it is
    step_names: StepNames = field(default_factory=dict)  # what xprof's grouping names
    deriver: StepDeriver | None = None  # the GPU "Steps" lines xprof derives, if ungrouped
    modules_not_derived: bool = False  # GPU events of XLA modules xprof would make a line of
    dropped: int = 0  # events with impossible times, counted by the last full pass
    timed: int = 0  # X events the last full pass gave

    def metadata(self) -> Iterator[dict[str, Any]]:
        """The process and thread names, sorted by pid then tid, as xprof writes them."""
        devices: dict[int, tuple[str, dict[int, str]]] = {}
        for info in self.converted:
            _, resources = devices.get(info.device_id, ("", {}))
            resources.update(info.lines)
            devices[info.device_id] = (info.name, resources)
        for did in sorted(devices):
            name, resources = devices[did]
            if name:
                yield {"ph": "M", "pid": did, "name": "process_name", "args": {"name": name}}
            yield {"ph": "M", "pid": did, "name": "process_sort_index", "args": {"sort_index": did}}
            for rid in sorted(resources):
                if resources[rid]:
                    yield {
                        "ph": "M",
                        "pid": did,
                        "tid": rid,
                        "name": "thread_name",
                        "args": {"name": resources[rid]},
                    }
                yield {
                    "ph": "M",
                    "pid": did,
                    "tid": rid,
                    "name": "thread_sort_index",
                    "args": {"sort_index": rid},
                }

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self.metadata()
        if self.deriver is not None:
            self.deriver.reset()  # a pass given up (a reader's first) left some behind
        dropped = timed = 0
        for info in self.converted:
            plane = self.space.planes[info.index]
            counter = [0]
            names = {li: n for (pi, li), n in self.step_names.items() if pi == info.index}
            hook = None
            if self.deriver is not None:
                host = info.device_id == HOST_DEVICE_ID
                hook = self.deriver.host_event if host else self.deriver.device_event
            events = _plane_events(
                plane, info.device_id, counter, names, not self.grouped, self.path, hook
            )
            if hook is not None and info.device_id != HOST_DEVICE_ID:
                events = chain(events, self._steps(info.device_id, counter))
            for ev in events:
                timed += ev["ph"] == "X"
                yield ev
            dropped += counter[0]
        self.dropped, self.timed = dropped, timed

    def _steps(self, did: int, dropped: list[int]) -> Iterator[dict[str, Any]]:
        """The plane's derived "Steps" events, once its other events have been read."""
        assert self.deriver is not None
        for start, end, name in self.deriver.steps():
            ev = _event(did, STEPS_TID, name, start, end - start)
            if ev is None:
                dropped[0] += 1
                continue
            ev["args"] = {STEP_NAME: name}
            yield ev


def _line_resource(line: Any) -> tuple[int, str]:
    return (line.display_id or line.id) & UINT32, line.display_name or line.name


def _plane_events(
    plane: Any,
    did: int,
    dropped: list[int],
    step_names: dict[int, dict[int, str]],
    prep: bool,
    path: str,
    hook: Hook | None = None,
) -> Iterator[dict[str, Any]]:
    """The events of one plane, in line order then event order, as xprof makes them; one
    line decoded at a time. ``hook`` is told each event's times and correlation id."""
    stat_names = {k: m.name for k, m in plane.stat_metadata.items()}
    step_stat = next((k for k, name in stat_names.items() if name == STEP_NAME), None)
    if hook is not None:
        corr = next((k for k, name in stat_names.items() if name == CORRELATION_ID), None)
        watch = (corr, hook)
    metas: dict[int, _Meta | None] = {}
    marks = region_ids(plane) if prep else None
    for li, raw in enumerate(plane.lines):
        line = parse_line(raw, path)
        del raw
        tid, line_name = _line_resource(line)
        if line_name == ASYNC_XLA_OPS:
            continue
        events = _line_events(
            plane,
            line,
            did,
            tid,
            metas,
            stat_names,
            dropped,
            step_names.get(li),
            step_stat,
            watch if hook is not None else None,
        )
        spans = regions(marks, line) if marks is not None else []
        if not spans:
            yield from events
            continue
        out = list(events)  # xprof sorts the line once it holds the regions
        for start, end in spans:
            out += _line_events_of([(REGION, start, end - start)], did, tid, dropped)
        out.sort(key=lambda e: (e["ts"], -e.get("dur", 0.0)))
        yield from out


def _line_events_of(
    spans: list[tuple[str, int, int]], did: int, tid: int, dropped: list[int]
) -> list[dict[str, Any]]:
    """Events made from (name, start ps, duration ps), without args."""
    out = []
    for name, ts_ps, dur_ps in spans:
        ev = _event(did, tid, name, ts_ps, dur_ps)
        if ev is None:
            dropped[0] += 1
        else:
            out.append(ev)
    return out


def _event(did: int, tid: int, name: str, ts_ps: int, dur_ps: int) -> dict[str, Any] | None:
    """The trace-viewer event, or None when its times are impossible."""
    if not (0 <= dur_ps <= MAX_DURATION_PS and 0 <= ts_ps <= MAX_PS - dur_ps):
        return None
    out: dict[str, Any] = {"pid": did, "tid": tid, "name": name, "ts": ts_ps / PS_PER_US}
    if dur_ps:
        out["ph"] = "X"
        out["dur"] = dur_ps / PS_PER_US
    else:
        out["ph"] = "i"
        out["s"] = "t"
    return out


def _line_events(
    plane: Any,
    line: Any,
    did: int,
    tid: int,
    metas: dict[int, _Meta | None],
    stat_names: dict[int, str],
    dropped: list[int],
    step_names: dict[int, str] | None,
    step_stat: int | None,
    watch: tuple[int | None, Hook] | None = None,
) -> Iterator[dict[str, Any]]:
    """The events of one line (the loop every event goes through: kept to locals);
    ``step_stat`` is the plane's ``step_name`` stat id."""
    base_ps = line.timestamp_ns * 1000
    max_dur, max_ps, per_us, lazy = MAX_DURATION_PS, MAX_PS, PS_PER_US, lazy_args
    for ei, ev in enumerate(line.events):
        mid = ev.metadata_id
        meta = metas[mid] if mid in metas else metas.setdefault(mid, _meta(plane, mid, stat_names))
        if meta is None:  # an event xprof leaves out
            continue
        offset, dur = ev.offset_ps, ev.duration_ps
        ts = base_ps + offset
        if not (0 <= offset <= max_dur and 0 <= dur <= max_dur and 0 <= ts <= max_ps - dur):
            dropped[0] += 1
            continue
        name, base = meta
        if dur:
            out = {"pid": did, "tid": tid, "name": name, "ts": ts / per_us, "ph": "X"}
            out["dur"] = dur / per_us
        else:
            out = {"pid": did, "tid": tid, "name": name, "ts": ts / per_us, "ph": "i", "s": "t"}
        stats = ev.stats
        if watch is not None:
            corr_id, hook = watch
            value = next(
                (st.int64_value or st.uint64_value for st in stats if st.metadata_id == corr_id),
                None,
            )
            hook(ts, dur, value)
        # grouping appends step_name after the event's other stats: the last is looked at
        if step_stat is not None and stats and stats[-1].metadata_id == step_stat:
            args = dict(base)
            out["name"] = add_stats(stats, stat_names, args)
            out["args"] = args
        elif base or stats:  # stats all internal: xprof writes no args, here they are empty
            out["args"] = lazy(base, stats, stat_names)
        if step_names is not None and ei in step_names:
            out["name"] = step_names[ei]
            out["args"] = args = dict(out.get("args") or {})
            args[STEP_NAME] = step_names[ei]
        yield out


_Meta = tuple[str, dict[str, str]]  # the event's name in the viewer, its metadata's args


def _meta(plane: Any, mid: int, stat_names: dict[int, str]) -> _Meta | None:
    """An event metadata as xprof shows it; None for the internal events it leaves out."""
    md = plane.event_metadata.get(mid)
    name = md.name if md is not None else ""
    if name in INTERNAL_EVENTS:
        return None
    if md is None:
        return name, {}
    args: dict[str, str] = {}
    shown = name
    if md.display_name:
        shown = md.display_name
        args["long_name"] = name
    step = add_stats(md.stats, stat_names, args)
    return step if step is not None else shown, args


def open_xspace(
    path: str,
    bounds: XSpaceBounds | None = None,
    refusal: Callable[[XSpaceShape, XSpaceBounds], str] | None = None,
) -> XSpaceEvents:
    """Decode the file's metadata, lines left serialized, and the names xprof shows. With
    ``bounds``, an XSpace holding more is refused first, in ``refusal``'s words."""
    with open(path, "rb") as f:
        raw = f.read()
    if bounds is not None:
        shape = xspace_shape(raw, bounds)
        if shape.over is not None:
            why = refusal(shape, bounds) if refusal else f"an XSpace of too many {shape.over}"
            raise TraceError(path, why)
    space = XSpaceLines()
    try:
        space.ParseFromString(raw)
    except Exception as e:  # protobuf's DecodeError
        raise TraceError(path, f"not a profiler trace: not an XSpace protobuf ({e})") from None
    del raw
    grouping = Grouping()
    heads = [_head(i, plane, path, grouping) for i, plane in enumerate(space.planes)]
    host = next((h for h in heads if h.name == HOST_PLANE), None)
    converted: list[PlaneInfo] = []
    if host is not None:
        converted.append(PlaneInfo(host.index, HOST_DEVICE_ID, host.name, host.lines))
    for prefix in DEVICE_PREFIXES:
        devices = [h for h in heads if h.name.startswith(prefix)]
        if devices:
            pids = [(FIRST_DEVICE_ID + h.id) & UINT32 for h in devices]
            spare = max(pids) + 1
            for h, pid in zip(devices, pids, strict=True):
                if host is not None and pid == HOST_DEVICE_ID:  # plane id 700: xprof's clash
                    pid = spare = max(spare, HOST_DEVICE_ID + 1)
                    spare += 1
                converted.append(PlaneInfo(h.index, pid, h.name, h.lines))
            break
    if not converted:
        raise TraceError(
            path, "not a profiler trace: a protobuf without the host or device planes of an XSpace"
        )
    grouped = any(h.grouped for h in heads)
    deriver = None
    if not grouped and any(h.name.startswith(GPU_PREFIX) for h in heads):
        deriver = StepDeriver(grouping.groups())
        for info in converted:
            if info.name.startswith(GPU_PREFIX):
                info.lines.append((STEPS_TID, STEPS_LINE))
    gpus = [space.planes[h.index] for h in heads if h.name.startswith(GPU_PREFIX)]
    return XSpaceEvents(
        path,
        space,
        converted,
        grouped=grouped,
        step_names={} if grouped else grouping.step_names(),
        deriver=deriver,
        modules_not_derived=not grouped
        and any(m.name == HLO_MODULE for p in gpus for m in p.stat_metadata.values()),
    )


@dataclass
class _Head:
    index: int
    name: str
    id: int
    lines: list[tuple[int, str]]
    grouped: bool


def _head(index: int, plane: Any, path: str, grouping: Grouping) -> _Head:
    """A plane's names; a plane that may hold root events of an ungrouped XSpace is read
    for them, a line at a time."""
    lines = [_line_resource(parse_line(raw, path, head=True)) for raw in plane.lines]
    grouped = is_grouped(plane)
    if not grouped and may_group(plane):
        grouping.add_plane(index, plane, (parse_line(raw, path) for raw in plane.lines))
    return _Head(index, plane.name, plane.id, lines, grouped)
