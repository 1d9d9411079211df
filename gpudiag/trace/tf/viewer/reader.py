"""TensorFlow / JAX profiler trace-viewer JSON -> Timeline.

The same events come from ``*.trace.json.gz`` files and from ``.xplane.pb`` converted by xprof
(see ``tf/xspace/reader.py``). Layout (field notes): processes ``/device:GPU:N`` with stream threads
``Stream #N(Compute|MemcpyH2D|MemcpyD2H)`` and derived lines ("Steps", "TensorFlow Ops"), and
``/host:CPU`` with threads ``python``, ``tf_Compute/…``, ``tf_data_…``, ``collective_ops/…``.

On a CPU-only profile the ``tf_Compute`` threads *are* the device: their busy time is the
compute, ``CollectiveReduceV2`` the sync and ``IteratorGetNext…`` the input wait. On a GPU the
device's ``Steps`` line is the step, begun where the host began it (``steps.py``); every
host event is kept as traced host activity, so that untraced time can be said.

One pass here; what names mean is in ``lanes.py``, the tf.data stages in ``pipeline.py``,
TPU op lines in ``xla_line.py``, replicas and workers in ``devices.py``.

    timelines = read_tf_trace(open_chrome(path), path)  # every name indexed first

    doc = open_chrome(path, index=False)
    index_head(doc)                          # the names that open the file
    timelines = read_tf_stream(doc, path)    # one pass; None if a name came too late
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.sink import (
    MAX_KEYS,
    MIN_INTERVALS,
    STEP_WEIGHT,
    IntervalBudget,
    IntervalSink,
    SinkTable,
    Totals,
)
from gpudiag.trace.model.steps_infer import ensure_steps
from gpudiag.trace.model.stream_overlap import StreamOverlap
from gpudiag.trace.model.timeline import HOST_ACTIVITY, Kind, Metadata, Timeline
from gpudiag.trace.names.comm import Comm
from gpudiag.trace.names.facts import RunFacts
from gpudiag.trace.names.name_scan import NameCache
from gpudiag.trace.source.chrome import MAX_NAME, ChromeDoc
from gpudiag.trace.tf.viewer.devices import (
    add_cpu_replicas,
    device_facts,
    device_order,
    split_by_device,
)
from gpudiag.trace.tf.viewer.host_work import HostWork
from gpudiag.trace.tf.viewer.lanes import (
    COLL_OPS,
    HOST_WORK,
    INPUT,
    JAX_MODULE_PREFIXES,
    KERAS_NEXT,
    MAX_CACHED_NAMES,
    MODULE_ID_RE,
    MODULES,
    SHARDS,
    SKIP,
    STEP,
    STEP_ADVICE_JAX,
    STEP_ADVICE_TF,
    STEP_FUNCTION,
    STEPS,
    STREAM,
    TF_COMPUTE,
    XLA_OPS,
    Lane,
    NameInfo,
    input_op,
    is_keras_adapter,
    keras_input,
    lane,
    looks_like_tf,
    name_info,
    replica_of,
    step_number,
    stream_kind,
)
from gpudiag.trace.tf.viewer.pipeline import PipelineStages, note_pipeline
from gpudiag.trace.tf.viewer.steps import HOST_BRIDGE_US, align_device_steps, host_spans
from gpudiag.trace.tf.viewer.xla_cpu import XlaCpuDevices
from gpudiag.trace.tf.viewer.xla_line import XlaLine

__all__ = ["looks_like_tf", "read_tf_stream", "read_tf_trace"]


class _LateName(Exception):
    """A name arrived after events that needed it: the one pass read them unnamed."""


def read_tf_stream(
    doc: ChromeDoc, path: str, producer: str = "tf-trace-viewer"
) -> list[Timeline] | None:
    """``read_tf_trace`` in one pass over a streamed file whose names are only partly known
    (``index_head``): later metadata events update the names as they arrive. None when a
    name came after an event that needed it; the caller then indexes every name and reads
    again, so the result never depends on where the file puts its names."""
    try:
        return _read(doc, path, producer, live=True)
    except _LateName:
        return None


def read_tf_trace(doc: ChromeDoc, path: str, producer: str = "tf-trace-viewer") -> list[Timeline]:
    """One Timeline per device that has its own step line (workers), else one in total.
    ``doc`` holds every name already (``index_names``)."""
    return _read(doc, path, producer, live=False)


class _Gathered:
    """What one pass over the events keeps: intervals in sinks under one budget, every
    table capped (``model/sink.py``), so no file can grow it without bound."""

    def __init__(self) -> None:
        self.budget = budget = IntervalBudget()
        self.dev: SinkTable[tuple[str, Kind]] = SinkTable(budget)
        self.kernels: dict[str, int] = {}
        self.device_steps: SinkTable[str] = SinkTable(budget, mergeable=False, columns="q")
        self.marker_steps = budget.sink(False, "q", STEP_WEIGHT)  # step number
        self.func_steps = budget.sink(False, "", STEP_WEIGHT)
        self.cpu_ops: SinkTable[int] = SinkTable(budget)  # by replica
        self.cpu_shards = budget.sink()  # Eigen intra-op work
        self.xla_cpu = XlaCpuDevices(budget)  # JAX's host devices, by device ordinal
        # one interval per all-reduce participant: each is given to a replica at the end
        self.cpu_coll = budget.sink(mergeable=False)
        self.inputs = budget.sink()
        self.input_names = Totals()
        # every traced host event, to say what is not traced: under a budget of its own (a
        # quarter of the file's) so that it never shortens what the analysis reads
        self.host_budget = IntervalBudget(max(MIN_INTERVALS, budget.limit // 4))
        self.host = self.host_budget.sink()
        self.markers: SinkTable[str] = SinkTable(budget)
        self.xla: dict[str, XlaLine] = {}  # device -> its "XLA Ops" line
        self.xla_cache = NameCache()  # kernel names classified, shared by the lines
        self.collectives: dict[Comm, int] = {}  # async collectives of the XLA lines
        self.pipeline: dict[str, Any] = {}
        self.stages = PipelineStages()
        self.facts = RunFacts()
        self.work = HostWork(budget.sink())  # compilations, eager ops
        self.overlap = StreamOverlap()  # kernels that cannot share their stream as written
        self.jax_seen = False
        self.keras_seen = False

    def xla_line(self, device: str) -> XlaLine | None:
        line = self.xla.get(device)
        if line is None and len(self.xla) < MAX_XLA_LINES:
            line = self.xla[device] = XlaLine(self.budget, self.xla_cache)
        return line


MAX_XLA_LINES = 256  # devices whose XLA op line is kept (a TPU host has 4 to 8)
MAX_REPLICAS = 256  # CPU replicas told apart (logical CPU devices; real runs have a few)


def _read(doc: ChromeDoc, path: str, producer: str, live: bool) -> list[Timeline]:
    g = _Gathered()
    try:
        _gather(doc, g, live)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise TraceError(path, f"malformed trace event ({type(e).__name__}: {e})") from None
    if live and not looks_like_tf(doc):  # a later name replaced the one that said TF
        raise _LateName
    return _build(g, Metadata(producer=producer, source=path, framework="tensorflow"))


def _gather(doc: ChromeDoc, g: _Gathered, live: bool) -> None:
    """One pass over the events into ``g``. ``live``: metadata events update the names as
    they come, and one that renames a lane already read raises ``_LateName``."""
    facts = g.facts
    names: dict[str, NameInfo] = {}
    replica_ops: dict[str, IntervalSink] = {}  # op long name -> its replica's ops
    host_ops = 0  # counted here, but for the first that is training evidence
    # lanes looked up so far; a name that changes for one of them (or for any, once there
    # are too many to keep) means their events were read under another name
    lanes: dict[tuple[Any, Any], Lane] = {}
    lane_pids: set[Any] = set()
    untracked = False
    # per host lane, the stretch of activity being extended: one sink pair per stretch, not
    # one per event (the host's events nest and follow each other closely)
    runs: dict[tuple[Any, Any], list[float]] = {}
    for ev in doc.events:
        ph = ev.get("ph")
        if ph != "X":
            if live and ph == "M":
                key = doc.name(ev)
                if key is not None and (
                    untracked or (key in lanes if isinstance(key, tuple) else key in lane_pids)
                ):
                    raise _LateName
            continue
        name = ev.get("name")
        if not isinstance(name, str):
            continue
        if len(name) > MAX_NAME:
            name = name[:MAX_NAME]
        pid = ev.get("pid")
        tid = ev.get("tid")
        where = lanes.get((pid, tid))
        if where is None:
            where = lane(doc, pid, tid)
            if len(lanes) < MAX_KEYS:
                lanes[(pid, tid)] = where
                lane_pids.add(pid)
            else:
                untracked = True
        ts = float(ev["ts"])
        end = ts + float(ev.get("dur", 0.0))
        role, device, tag, eigen, tf_data = where
        if role >= STEPS:  # a device line
            if role == STREAM:
                kind = stream_kind(tag, name)
                busy = g.dev.get((device, kind))
                if busy is not None:
                    busy.add(ts, end)
                device_facts(facts, kind, name, end - ts, ev.get("args"))
                if kind is Kind.H2D:
                    facts.h2d(device, ev.get("args"))
                g.overlap.add((pid, tid), ts, end)
                if kind is Kind.COMPUTE and (device in g.kernels or len(g.kernels) < MAX_KEYS):
                    g.kernels[device] = g.kernels.get(device, 0) + 1
            elif role == XLA_OPS:  # the op timeline of devices without streams (TPU)
                line = g.xla_line(device)
                if line is not None:
                    line.add(name, ts, end, ev.get("args"), g.collectives)
            elif role == STEPS:
                steps = g.device_steps.get(device)
                if steps is not None:
                    steps.add(ts, end, step_number(name, ev.get("args"), len(steps)))
            elif role == MODULES:  # one execution of a compiled program
                module = MODULE_ID_RE.sub("", name)
                g.jax_seen = g.jax_seen or module.startswith(JAX_MODULE_PREFIXES)
                g.markers.add(f"xla-module:{module}", ts, end)
            continue
        if role == SKIP:
            continue
        run = runs.get((pid, tid))
        if run is not None and run[0] <= ts <= run[1] + HOST_BRIDGE_US:
            if end > run[1]:
                run[1] = end
        else:
            if run is not None:
                g.host.add(run[0], run[1])
            if run is not None or len(runs) < MAX_KEYS:
                runs[(pid, tid)] = [ts, end]
            else:
                g.host.add(ts, end)
        info = names.get(name)
        if info is None:
            info = name_info(name)
            if info[0] != STEP and len(names) < MAX_CACHED_NAMES:
                names[name] = info
        what, step, marker, collective, iterator, training, inference, maybe_input = info
        if training and not facts.training_evidence:
            facts.host_op(name)
        else:
            host_ops += 1
        if inference and not facts.inference_evidence:
            facts.inference_evidence = name[:80]
        if marker:
            mark = g.markers.get(name)
            if mark is not None:
                mark.add(ts, end)
            g.jax_seen = g.jax_seen or name.startswith("PjitFunction(")
        if maybe_input and what != INPUT:  # an op of the iterator's (xprof: input wait)
            waits_in = input_op(name, ev.get("args"))
            if waits_in is not None and g.inputs.add(ts, end):
                g.input_names.add(waits_in, end - ts)
        if what == INPUT:
            if g.inputs.add(ts, end):
                g.input_names.add(name, end - ts)
        elif what == STEP:  # on the main thread, named after the process ("python", ...)
            g.marker_steps.add(ts, end, step)
        elif what == STEP_FUNCTION:
            g.func_steps.add(ts, end)
        elif what == HOST_WORK:
            g.work.add(name, ts, end)
        elif role == TF_COMPUTE:
            args = ev.get("args")
            long_name = args.get("long_name") if isinstance(args, dict) else None
            if isinstance(long_name, str):  # an op, not the executor's wrappers
                ops = replica_ops.get(long_name)
                if ops is None:
                    replica = replica_of(long_name)
                    ops = g.cpu_ops.get(replica) if replica < MAX_REPLICAS else None
                    if ops is not None and len(replica_ops) < MAX_CACHED_NAMES:
                        replica_ops[long_name] = ops
                if ops is not None:
                    ops.add(ts, end)
        elif role == SHARDS:
            # intra-op shards (TF) and XLA executables on the CPU (JAX); not the waits
            wrapper = name == "ThreadpoolListener::Region" and not eigen
            if not wrapper and "wait for completion" not in name:
                g.cpu_shards.add(ts, end)
                g.xla_cpu.add(name, ts, end, ev.get("args"))
        elif what == KERAS_NEXT:
            g.keras_seen = g.keras_seen or is_keras_adapter(name)
            if "keras_input" not in g.pipeline and (given := keras_input(name)) is not None:
                g.pipeline["keras_input"] = given
            if g.inputs.add(ts, end):
                g.input_names.add(name.lstrip("$"), end - ts)
        elif role == COLL_OPS and collective:
            g.cpu_coll.add(ts, end)
        if tf_data or iterator:
            args = ev.get("args")
            note_pipeline(g.pipeline, name, args)
            g.stages.add(tid, name, args, ts, end)
    facts.host_ops += host_ops
    for run in runs.values():
        g.host.add(run[0], run[1])


def _build(g: _Gathered, meta: Metadata) -> list[Timeline]:
    facts = g.facts
    if g.jax_seen:
        meta.framework = "jax"
    if g.keras_seen:
        meta.config.update({"api": "keras"})
    base = Timeline(meta=meta)
    base.pipeline.update(g.pipeline)
    g.stages.into(base.pipeline)
    for name, sink in g.markers.sinks.items():
        base.add_marker(name, *sink.arrays())
    if len(g.inputs):
        base.add_input_wait(*g.inputs.arrays(), name_totals=g.input_names)
    if len(g.host):
        meta.extra[HOST_ACTIVITY] = host_spans(*g.host.arrays())
        if g.host_budget.cut:  # known only up to there
            meta.extra["host_activity_until_us"] = g.host_budget.cutoff
    stream_devices = {d for d, _ in g.dev.sinks}
    steps = len(g.marker_steps) or len(g.func_steps)
    g.work.into(base, g.cpu_ops, steps, cpu_only=not g.dev and not g.xla)
    if not g.dev and not g.xla and (g.cpu_ops or len(g.cpu_shards)):
        meta.device_type = "CPU"
        if g.cpu_ops or not g.xla_cpu.into(base):  # JAX's host devices: a lane each
            add_cpu_replicas(base, g.cpu_ops, g.cpu_shards, g.cpu_coll)
    else:
        devices = stream_devices | set(g.xla)
        meta.device_type = ", ".join(sorted({d.partition(" ")[0] for d in devices}))
        for device in sorted(devices, key=device_order):
            if device in stream_devices:
                for kind in Kind:
                    busy = g.dev.sinks.get((device, kind))
                    if busy is not None:
                        base.add_activity(device, kind, *busy.arrays())
                if device in g.kernels:
                    base.kernel_counts[device] = g.kernels[device]
            else:
                g.xla[device].into(base, device, facts, g.collectives)
    # a TF or JAX profile is called inference only where it says so: older TF versions and
    # XLA profiles without op scopes do not name their backward ops at all
    facts.apply(base, inference_by_absence=False)
    g.overlap.apply(base)
    host = _host_steps(g)
    device_steps = {d: s for d, s in g.device_steps.sinks.items() if len(s)}
    if device_steps and (host is not None or len(device_steps) == 1):
        # the device's own step line is the step; the host's step says where it begins
        base.add_steps(*align_device_steps(host, device_steps))
        meta.extra["steps_method"] = "device"
    elif host is not None:
        base.add_steps(*host)
    if len(base.steps) or not device_steps:
        g.budget.finish(base)
        base.freeze()
        ensure_steps(base, advice=STEP_ADVICE_JAX if meta.framework == "jax" else STEP_ADVICE_TF)
        return [base]
    return split_by_device(base, g.device_steps, g.budget)


def _host_steps(g: _Gathered) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Steps as the host marks them: step markers ("train N"), else the step function's
    calls, in time order; None when the host marks none."""
    steps = g.marker_steps
    if len(steps):
        s, e = steps.arrays()
        return steps.column(0).astype(np.int64), s, e
    if len(g.func_steps):
        s, e = g.func_steps.arrays()
        order = np.lexsort((e, s))
        return np.arange(order.size), s[order], e[order]
    return None
