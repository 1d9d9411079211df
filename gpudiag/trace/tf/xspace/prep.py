"""What xprof adds to an XSpace that the profiler left ungrouped, before converting it.

TensorFlow since 2.5 and JAX write XSpaces without step grouping; xprof's ``trace_viewer``
then runs ``PreprocessSingleHostXSpace`` (openxla/xprof ``preprocess_single_host_xplane.cc``,
with ``tsl/profiler/utils/group_events.cc`` and ``preprocess_xplane.h``). Two of its results
change what a reader sees, and are redone here:

- **step names**: a user's root events (``tf.profiler.experimental.Trace("train",
  step_num=3, _r=1)``, legacy ``TraceContext``) are renamed "<name or graph_type> <step>"
  ("train 3"), the root of each group by root level then time, a root inside another root
  of the same or a higher level taking no name of its own;
- **threadpool regions**: each ``ThreadpoolListener::StartRegion`` (with a consumer id) up to
  the next ``StopRegion`` on its thread becomes a ``ThreadpoolListener::Region`` event.

Not redone (docs/formats.md): the group ids, flows and ``is_eager`` flags xprof adds as event
args, and the device lines it derives from the groups ("Steps", "XLA Modules", ...); relations
between threads (producer/consumer ids) are not followed, only nesting on one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

ROOT = "_r"
ASYNC = "_a"
CONSUMER = "_c"
GROUP_ID = "group_id"
GRAPH_TYPE, ITER_NUM, STEP_NUM = "graph_type", "iter_num", "step_num"
TRACE_CONTEXT = "TraceContext"  # a legacy root event
IMPLICIT_ROOTS = frozenset({"FunctionRun", "SessionRun", "RunGraph", "ExecutorState::Process"})
LOOP_OPS = frozenset(
    {"WhileOp-EvalCond", "WhileOp-StartBody", "ForOp", "ParallelForOp", "ForeverOp"}
)
START_REGION = "ThreadpoolListener::StartRegion"
STOP_REGION = "ThreadpoolListener::StopRegion"
REGION = "ThreadpoolListener::Region"

StepNames = dict[tuple[int, int], dict[int, str]]  # (plane, line) -> {event index: name}


def is_grouped(plane: Any) -> bool:
    """The profiler grouped this plane itself (TensorFlow before 2.5): xprof adds nothing."""
    return any(m.name == GROUP_ID for m in plane.stat_metadata.values())


def may_group(plane: Any) -> bool:
    """The plane (its metadata: no event decoded) may hold what xprof groups by: root
    events or TF loops."""
    if any(m.name == ROOT for m in plane.stat_metadata.values()):
        return True
    names = {m.name for m in plane.event_metadata.values()}
    return TRACE_CONTEXT in names or bool(LOOP_OPS & names)


@dataclass
class _Root:
    level: int
    ts_ps: int
    end_ps: int
    where: tuple[int, int, int]  # plane, line, event index
    name: str  # without the step number; "" for an implicit root
    step: int | None  # from iter_num or step_num, itself or the events around it
    covered: bool  # inside a root of the same or a higher level


@dataclass
class Grouping:
    """Root events and loop evidence gathered plane by plane, then named together."""

    roots: list[_Root] = field(default_factory=list)
    loops: bool = False

    def add_plane(self, index: int, plane: Any, lines: Iterable[Any]) -> None:
        """``plane``'s metadata, and its ``lines`` decoded one by one."""
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        ids = {name: k for k, name in names.items()}
        events = {k: m.name for k, m in plane.event_metadata.items()}
        loops = not self.loops and bool(LOOP_OPS.intersection(events.values()))
        root_id = ids.get(ROOT)
        context = {k for k in (ids.get(GRAPH_TYPE), ids.get(ITER_NUM), ids.get(STEP_NUM)) if k}
        legacy = {k for k, name in events.items() if name == TRACE_CONTEXT}
        for li, line in enumerate(lines):
            if loops and _iterating(line, ids, events):
                self.loops = loops = True
            if root_id is None and not legacy:
                continue
            if root_id is not None and not legacy and not _has_stat(line.events, root_id):
                continue
            self.roots += _line_roots(
                index,
                li,
                line,
                root_id,
                ids.get(ASYNC),
                legacy,
                context,
                names,
                plane.event_metadata,
            )

    def step_names(self) -> StepNames:
        """Each grouped root's step name, as xprof's ``ProcessRootEvent`` gives it."""
        out: StepNames = {}
        for root, _, name in self.groups():
            if root.name:
                plane, line, event = root.where
                out.setdefault((plane, line), {})[event] = name
        return out

    def groups(self) -> list[tuple[_Root, int, str]]:
        """The grouped roots with their group id and group name, in xprof's order."""
        if self.loops:  # xprof groups by TF loop iterations instead, and names none
            return []
        out: list[tuple[_Root, int, str]] = []
        for root in sorted(self.roots, key=lambda r: (-r.level, r.ts_ps)):
            if not root.covered:
                group = len(out)
                out.append(
                    (root, group, f"{root.name}{root.step if root.step is not None else group}")
                )
        return out


def _has_stat(events: Iterable[Any], stat_id: int) -> bool:
    return any(s.metadata_id == stat_id for ev in events for s in ev.stats)


def _stat(ev: Any, meta: Any, stat_id: int) -> Any:
    """The event's stat of that id, else its metadata's (xprof's ``GetStat``)."""
    for s in ev.stats:
        if s.metadata_id == stat_id:
            return s
    if meta is not None:
        for s in meta.stats:
            if s.metadata_id == stat_id:
                return s
    return None


def _line_roots(
    pi: int,
    li: int,
    line: Any,
    root_id: int | None,
    async_id: int | None,
    legacy: set[int],
    context: set[int],
    names: dict[int, str],
    metadata: Any,
) -> Iterator[_Root]:
    """The root events of one line, each with what encloses it on the line."""
    base = line.timestamp_ns * 1000
    stack: list[tuple[int, int, Any, int]] = []  # begin, end, event, root level
    for ei, ev in enumerate(line.events):
        begin = base + ev.offset_ps
        end = begin + ev.duration_ps
        level = 0
        is_async = False
        for s in ev.stats:
            if s.metadata_id == root_id:
                level = s.int64_value
            elif s.metadata_id == async_id:
                is_async = bool(s.int64_value or s.uint64_value)
        if not level and ev.metadata_id in legacy:
            level = 1
        around: list[tuple[int, int, Any, int]] = []
        if not is_async:
            while stack and not (stack[-1][0] <= begin and end <= stack[-1][1]):
                stack.pop()
            around = stack[::-1]
            stack.append((begin, end, ev, level))
        if level <= 0:
            continue
        md = metadata.get(ev.metadata_id)
        name = md.name if md is not None else ""
        chain = [ev] + [a[2] for a in around]
        graph = _context(chain, metadata, context, names, GRAPH_TYPE)
        step = _context(chain, metadata, context, names, ITER_NUM)
        if step is None:
            step = _context(chain, metadata, context, names, STEP_NUM)
        if graph is not None:
            shown = f"{_text(graph, names)} "
        else:
            shown = "" if name in IMPLICIT_ROOTS else f"{name} "
        yield _Root(
            level,
            begin,
            end,
            (pi, li, ei),
            shown if name not in IMPLICIT_ROOTS else "",
            None if step is None else int(step.int64_value),
            any(a[3] >= level for a in around),
        )


def _context(
    chain: list[Any], metadata: Any, context: set[int], names: dict[int, str], which: str
) -> Any:
    """The nearest stat called ``which`` on the event or the events that enclose it."""
    ids = [k for k in context if names.get(k) == which]
    if not ids:
        return None
    for ev in chain:
        md = metadata.get(ev.metadata_id)
        s = _stat(ev, md, ids[0])
        if s is not None:
            return s
    return None


def _text(stat: Any, names: dict[int, str]) -> str:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return names.get(stat.ref_value, "")
    return str(stat.str_value) if kind == "str_value" else ""


def _iterating(line: Any, ids: dict[str, int], events: dict[int, str]) -> bool:
    """Executor events of a TF loop past its first iteration: xprof groups by those."""
    step_id, iter_num = ids.get("id"), ids.get(ITER_NUM)
    process = {k for k, name in events.items() if name == "ExecutorState::Process"}
    if step_id is None or iter_num is None or not process:
        return False
    for ev in line.events:
        if ev.metadata_id in process:
            values = {s.metadata_id: s.int64_value for s in ev.stats}
            if step_id in values and values.get(iter_num, 0) != 0:
                return True
    return False


RegionIds = tuple[set[int], set[int], int | None]  # start and stop metadata, consumer stat


def region_ids(plane: Any) -> RegionIds | None:
    """What marks threadpool regions on this plane; None where it has none."""
    starts = {k for k, m in plane.event_metadata.items() if m.name == START_REGION}
    stops = {k for k, m in plane.event_metadata.items() if m.name == STOP_REGION}
    if not starts or not stops:
        return None
    consumer = next((k for k, m in plane.stat_metadata.items() if m.name == CONSUMER), None)
    return starts, stops, consumer


def regions(ids: RegionIds, line: Any) -> list[tuple[int, int]]:
    """(start ps, end ps) of the threadpool regions xprof adds to one line."""
    starts, stops, consumer = ids
    base = line.timestamp_ns * 1000
    out: list[tuple[int, int]] = []
    start = 0
    for ev in line.events:
        if ev.metadata_id in starts:
            if consumer is not None and any(s.metadata_id == consumer for s in ev.stats):
                start = base + ev.offset_ps
        elif ev.metadata_id in stops and start != 0:
            out.append((start, base + ev.offset_ps))
    return out
