"""XSpace (``.xplane.pb``) -> the trace-viewer event dicts xprof's ``trace_viewer`` makes.

xprof converts an XSpace in C++ (``tsl/profiler/convert/xplane_to_trace_events.cc``), then
its Python ``TraceEventsJsonStream`` turns the result into Chrome trace events. The same
mapping is done here, one event at a time, straight from the protobuf messages of
``xspace_schema`` (the protobuf runtime decodes; nothing is parsed by hand):

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
  offset, a duration over a day, a time beyond int64 picoseconds. xprof converts them to
  uint64, so -1 ps became a 213-day kernel;
- no event cap: xprof keeps the 5,000,000 earliest events, gpudiag's interval bound applies;
- an XSpace the profiler left ungrouped (TensorFlow since 2.5, JAX) xprof first groups:
  the step names of root events and the threadpool regions are redone (``xspace_prep``),
  the group-id/flow args and the device lines derived from the groups ("Steps", "XLA
  Modules", ...) are not (``ungrouped_devices`` says when those lines would have mattered).

Each plane is kept as its serialized bytes and decoded when its events are wanted, so the
decoded messages of only one plane are held at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.xspace_prep import REGION, Grouping, StepNames, is_grouped, region_ids, regions
from gpudiag.trace.xspace_schema import XPlane, XSpacePlanes

HOST_PLANE = "/host:CPU"
DEVICE_PREFIXES = ("/device:GPU:", "/device:TPU:", "/device:CUSTOM:")  # the first that has any
FIRST_DEVICE_ID = 1  # xprof's trace_utils.h: devices 1..500, custom planes 501..700
HOST_DEVICE_ID = 701
ASYNC_XLA_OPS = "Async XLA Ops"
# xprof's IsInternalEvent / IsInternalStat (tsl/profiler/utils/xplane_schema.cc)
INTERNAL_EVENTS = frozenset(
    {
        "MemoryAllocation",
        "MemoryDeallocation",
        "PrefetchProduce",
        "PrefetchConsume",
        "ParallelInterleaveProduce",
        "ParallelInterleaveConsume",
        "ParallelInterleaveInitializeInput",
        "ParallelMapProduce",
        "ParallelMapConsume",
        "MapAndBatchProduce",
        "MapAndBatchConsume",
        "ParseExampleProduce",
        "ParseExampleConsume",
    }
)
INTERNAL_STATS = frozenset({"_pt", "_p", "_ct", "_c", "_r", "flops", "program_id", "symbol_id"})
STEP_NAME = "step_name"
PS_PER_US = 1_000_000.0
# A profiling session lasts seconds to minutes; an event of more than a day is a corrupt or
# wrapped value (-1 ps read as uint64 is 213 days).
MAX_DURATION_PS = 86_400 * 10**12
MAX_PS = 2**63 - 1  # xprof computes times in int64 ps: beyond it, its own figures wrap
UINT32 = 0xFFFF_FFFF


@dataclass
class PlaneInfo:
    """What the names need of one plane, read before any event."""

    index: int  # in the XSpace
    device_id: int
    name: str
    lines: list[tuple[int, str]]  # (resource id, display name) per line, in order
    events: int


@dataclass
class XSpaceEvents:
    """The trace-viewer events of one XSpace file, made anew on each iteration."""

    path: str
    planes: list[bytes] = field(repr=False)  # every plane, serialized
    converted: list[PlaneInfo]  # the planes xprof converts: host first, then devices
    grouped: bool = True  # by the profiler: xprof converts it as it is
    step_names: StepNames = field(default_factory=dict)  # what xprof's grouping names
    ungrouped_devices: bool = False  # device events xprof would group and derive lines from
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
        dropped = timed = 0
        for info in self.converted:
            plane = _parse_plane(self.planes[info.index], self.path)
            counter = [0]
            names = {li: n for (pi, li), n in self.step_names.items() if pi == info.index}
            for ev in _plane_events(plane, info.device_id, counter, names, not self.grouped):
                timed += ev["ph"] == "X"
                yield ev
            dropped += counter[0]
        self.dropped, self.timed = dropped, timed


def _parse_plane(raw: bytes, path: str) -> Any:
    plane = XPlane()
    try:
        plane.ParseFromString(raw)
    except Exception as e:  # protobuf's DecodeError
        raise TraceError(
            path, f"not a profiler trace: a protobuf whose planes do not decode ({e})"
        ) from None
    return plane


def _line_resource(line: Any) -> tuple[int, str]:
    return (line.display_id or line.id) & UINT32, line.display_name or line.name


def _plane_events(
    plane: Any, did: int, dropped: list[int], step_names: dict[int, dict[int, str]], prep: bool
) -> Iterator[dict[str, Any]]:
    """The events of one plane, in line order then event order, as xprof makes them."""
    stat_names = {k: m.name for k, m in plane.stat_metadata.items()}
    metas: dict[int, _Meta | None] = {}
    marks = region_ids(plane) if prep else None
    for li, line in enumerate(plane.lines):
        tid, line_name = _line_resource(line)
        if line_name == ASYNC_XLA_OPS:
            continue
        events = _line_events(plane, line, did, tid, metas, stat_names, dropped, step_names.get(li))
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
) -> Iterator[dict[str, Any]]:
    base_ps = line.timestamp_ns * 1000
    for ei, ev in enumerate(line.events):
        mid = ev.metadata_id
        if mid in metas:
            meta = metas[mid]
        else:
            meta = metas[mid] = _meta(plane, mid, stat_names)
        if meta is None:  # an event xprof leaves out
            continue
        out = _event(did, tid, meta.name, base_ps + ev.offset_ps, ev.duration_ps)
        if out is None or ev.offset_ps < 0:
            dropped[0] += 1
            continue
        args = dict(meta.args) if meta.args else None
        if ev.stats:
            args = args if args is not None else {}
            for stat in ev.stats:
                key = stat_names.get(stat.metadata_id, "")
                if key in INTERNAL_STATS:
                    continue
                value = _stat_text(stat, stat_names)
                if value is None:
                    continue
                if key == STEP_NAME:
                    out["name"] = value
                args[key] = value
        if step_names is not None and ei in step_names:
            out["name"] = step_names[ei]
            args = args if args is not None else {}
            args[STEP_NAME] = step_names[ei]
        if args:
            out["args"] = args
        yield out


@dataclass
class _Meta:
    name: str  # the event's name in the viewer
    args: dict[str, str]  # long_name and the metadata's own stats


def _meta(plane: Any, mid: int, stat_names: dict[int, str]) -> _Meta | None:
    """An event metadata as xprof shows it; None for the internal events it leaves out."""
    md = plane.event_metadata.get(mid)
    name = md.name if md is not None else ""
    if name in INTERNAL_EVENTS:
        return None
    if md is None:
        return _Meta(name, {})
    args: dict[str, str] = {}
    shown = name
    if md.display_name:
        shown = md.display_name
        args["long_name"] = name
    for stat in md.stats:
        key = stat_names.get(stat.metadata_id, "")
        if key in INTERNAL_STATS:
            continue
        value = _stat_text(stat, stat_names)
        if value is None:
            continue
        if key == STEP_NAME:
            shown = value
        args[key] = value
    return _Meta(shown, args)


def _stat_text(stat: Any, stat_names: dict[int, str]) -> str | None:
    """A stat's value as xprof's ``XStatVisitor::ToString`` writes it; None when unset."""
    kind = stat.WhichOneof("value")
    if kind == "str_value":
        return str(stat.str_value)
    if kind == "int64_value":
        return str(stat.int64_value)
    if kind == "uint64_value":
        return str(stat.uint64_value)
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    if kind == "double_value":
        return format(stat.double_value, ".6g")  # absl::StrCat(double): six digits
    if kind == "bytes_value":
        return "<opaque bytes>"
    return None


def open_xspace(path: str) -> XSpaceEvents:
    """Read the file's planes (serialized) and the names of those xprof converts."""
    with open(path, "rb") as f:
        raw = f.read()
    space = XSpacePlanes()
    try:
        space.ParseFromString(raw)
    except Exception as e:  # protobuf's DecodeError
        raise TraceError(path, f"not a profiler trace: not an XSpace protobuf ({e})") from None
    del raw
    planes = list(space.planes)
    del space
    grouping = Grouping()
    heads = [_head(i, raw_plane, path, grouping) for i, raw_plane in enumerate(planes)]
    host = next((h for h in heads if h[1] == HOST_PLANE), None)
    converted: list[PlaneInfo] = []
    if host is not None:
        converted.append(_info(host, HOST_DEVICE_ID))
    for prefix in DEVICE_PREFIXES:
        devices = [h for h in heads if h[1].startswith(prefix)]
        if devices:
            converted += [_info(h, (FIRST_DEVICE_ID + h[2]) & UINT32) for h in devices]
            break
    if not converted:
        raise TraceError(
            path, "not a profiler trace: a protobuf without the host or device planes of an XSpace"
        )
    grouped = any(h[4] for h in heads)
    device_events = any(info.events for info in converted if info.device_id != HOST_DEVICE_ID)
    return XSpaceEvents(
        path,
        planes,
        converted,
        grouped=grouped,
        step_names={} if grouped else grouping.step_names(),
        ungrouped_devices=device_events and not grouped,
    )


Head = tuple[
    int, str, int, list[tuple[int, str]], bool, int
]  # index, name, id, lines, grouped, events


def _head(index: int, raw: bytes, path: str, grouping: Grouping) -> Head:
    plane = _parse_plane(raw, path)
    lines = [_line_resource(line) for line in plane.lines]
    grouped = is_grouped(plane)
    if not grouped:
        grouping.add_plane(index, plane)
    events = sum(len(line.events) for line in plane.lines)
    return index, plane.name, plane.id, lines, grouped, events


def _info(head: Head, device_id: int) -> PlaneInfo:
    index, name, _, lines, _, events = head
    return PlaneInfo(index, device_id, name, lines, events)
