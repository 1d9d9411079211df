"""TensorFlow / JAX profiler trace-viewer JSON -> Timeline.

The same events come from ``*.trace.json.gz`` files and from ``.xplane.pb`` converted by xprof
(see ``xplane.py``). Layout (field notes): processes ``/device:GPU:N`` with stream threads
``Stream #N(Compute|MemcpyH2D|MemcpyD2H)`` and derived lines ("Steps", "TensorFlow Ops"), and
``/host:CPU`` with threads ``python``, ``tf_Compute/…``, ``tf_data_…``, ``collective_ops/…``.

On a CPU-only profile the ``tf_Compute`` threads *are* the device: their busy time is the
compute, ``CollectiveReduceV2`` the sync and ``IteratorGetNext…`` the input wait.

    timelines = read_tf_trace(open_chrome(path), path)  # every name indexed first

    doc = open_chrome(path, index=False)
    index_head(doc)                          # the names that open the file
    timelines = read_tf_stream(doc, path)    # one pass; None if a name came too late
"""

from __future__ import annotations

import math
import re
from collections import deque
from typing import Any

import numpy as np

from gpudiag.trace.chrome import MAX_NAME, ChromeDoc
from gpudiag.trace.comm import Comm, async_phase, classify, classify_op, is_copy
from gpudiag.trace.errors import TraceError
from gpudiag.trace.facts import TRAINING_RE, RunFacts
from gpudiag.trace.sink import MAX_KEYS, IntervalBudget, IntervalSink, SinkTable, Totals
from gpudiag.trace.steps_infer import ensure_steps, is_marker
from gpudiag.trace.timeline import Intervals, Kind, Metadata, Timeline, union_of

DEVICE_RE = re.compile(r"^/device:(GPU|TPU|CPU):(\d+)")
STREAM_KIND_RE = re.compile(r"\((Compute|MemcpyH2D|MemcpyD2H|MemcpyD2D|Memset|MemcpyP2P)\)")
DERIVED_LINES = frozenset(
    {
        "Steps",
        "TensorFlow Name Scope",
        "TensorFlow Ops",
        "XLA Ops",
        "XLA Modules",
        "Launch Stats",
        "Framework Name Scope",
        "Framework Ops",
        "Source code",
        "Async XLA Ops",
        "SparseCore",
        "XLA TraceMe",
    }
)
INPUT_WAIT_NAMES = (
    "IteratorGetNextOp::DoCompute",
    "IteratorGetNextAsOptionalOp::DoCompute",
    "MultiDeviceIteratorGetNextFromShard",
)
REPLICA_RE = re.compile(r"(?:^|/)replica_(\d+)/")
STEP_MARKER_RE = re.compile(r"^train (\d+)$")
STEP_FUNCTIONS = ("multi_step_on_iterator", "one_step_on_iterator", "train_function")
MODULE_ID_RE = re.compile(r"\(\d+\)$")  # "jit_train_step(12)" -> "jit_train_step"
JAX_MODULE_PREFIXES = ("jit_", "pjit_", "pmap_", "xmap_", "shard_map")
STEP_ADVICE_TF = (
    "wrap each step in tf.profiler.experimental.Trace('train', step_num=i, _r=1) for exact steps"
)
STEP_ADVICE_JAX = (
    "wrap each step in jax.profiler.StepTraceAnnotation('train', step_num=i) for exact steps"
)


def looks_like_tf(doc: ChromeDoc) -> bool:
    names = doc.process_names.values()
    return any(n.startswith(("/host:", "/device:")) for n in names)


def _device_name(proc: str) -> str | None:
    m = DEVICE_RE.match(proc)
    return f"{m.group(1)} {m.group(2)}" if m else None


def _stream_kind(tag: str, event: str) -> Kind:
    """The kind of a device stream event; ``tag`` is its stream's ``(MemcpyH2D)``-like tag."""
    if classify(event) is not None:
        return Kind.COLLECTIVE
    if tag == "MemcpyH2D" or event in ("MemcpyH2D", "MemcpyHToD"):
        return Kind.H2D
    if tag == "MemcpyD2H" or event in ("MemcpyD2H", "MemcpyDToH"):
        return Kind.D2H
    return Kind.COPY if tag in COPY_TAGS or is_copy(event) else Kind.COMPUTE


COPY_TAGS = frozenset({"MemcpyD2D", "MemcpyP2P", "Memset"})
# what a (pid, tid) lane is, from its process and thread names
SKIP, HOST, TF_COMPUTE, SHARDS, COLL_OPS, STEPS, MODULES, XLA_OPS, DERIVED, STREAM = range(10)
Lane = tuple[int, str, str, bool, bool]  # role, device, stream tag, Eigen pool, tf.data


def _lane(doc: ChromeDoc, pid: Any, tid: Any) -> Lane:
    proc = doc.process_names.get(pid, "")
    thread = doc.thread_names.get((pid, tid), "")
    device = _device_name(proc)
    eigen = "Eigen" in thread
    if device is not None:
        role = {"Steps": STEPS, "XLA Modules": MODULES, "XLA Ops": XLA_OPS}.get(thread)
        if role is None:
            role = DERIVED if thread in DERIVED_LINES else STREAM
        m = STREAM_KIND_RE.search(thread)
        return role, device, m.group(1) if m else "", eigen, False
    if not proc.startswith("/host:"):
        role = SKIP
    elif thread.startswith("tf_Compute"):
        role = TF_COMPUTE
    elif eigen or thread.startswith("tf_XLA"):
        role = SHARDS
    elif thread.startswith("collective_ops"):
        role = COLL_OPS
    else:
        role = HOST
    return role, "", "", eigen, thread.startswith("tf_data")


# what a host event's name makes it, whatever its thread
OTHER, INPUT, STEP, STEP_FUNCTION, KERAS_NEXT = range(5)
# kind, step number, marker, collective, pipeline, training evidence
NameInfo = tuple[int, int, bool, bool, bool, bool]
MAX_CACHED_NAMES = 16_384  # host op names repeat; step markers ("train 12") are not cached


def _name_info(name: str) -> NameInfo:
    step = 0
    if name in INPUT_WAIT_NAMES or name.startswith("MultiDeviceIteratorGetNextFromShard"):
        kind = INPUT
    elif (m := STEP_MARKER_RE.match(name)) is not None:
        kind, step = STEP, int(m.group(1))
    elif name in STEP_FUNCTIONS:
        kind = STEP_FUNCTION
    elif name == "$builtins next" or (name.startswith("$") and "data_adapter" in name):
        kind = KERAS_NEXT  # JAX / torch backends: Keras pulls each batch in Python
    else:
        kind = OTHER
    return (
        kind,
        step,
        is_marker(name),
        # only an OTHER name on a collective_ops thread is asked (step markers are unique:
        # classifying each would cost most of their reading)
        kind == OTHER and classify(name) is not None,
        name.startswith("Iterator::"),
        TRAINING_RE.search(name) is not None,
    )


def _replica(long_name: str) -> int:
    m = REPLICA_RE.search(long_name)
    return int(m.group(1)) if m else 0


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


class _XlaLine:
    """One device's "XLA Ops" line, kept apart until the end of the file: it is the device's
    activity only when the device has no stream lines (TPU; on GPUs it repeats them).

    Async collectives run from their ``*-start`` to their ``*-done``; the halves pair up in
    time order, so they are kept (times and which collective) to be sorted at the end. All
    other ops are summed as they come."""

    def __init__(self, budget: IntervalBudget, kernel_cache: dict[str, Any]) -> None:
        self.ops: SinkTable[Kind] = SinkTable(budget)
        self.halves = budget.sink(mergeable=False, columns="qb")  # collective, done?
        self.facts = RunFacts(_kernel_cache=kernel_cache)
        self.count = 0  # compute ops
        self.first_scope = (math.inf, "")  # earliest training scope: (ts, text)
        self.scopes_seen = False

    def add(
        self, name: str, ts: float, end: float, args: Any, collectives: dict[Comm, int]
    ) -> None:
        category = ""
        if isinstance(args, dict):
            self._scope(ts, args)
            cat = args.get("hlo_category")
            category = cat if isinstance(cat, str) else ""
        if is_copy(name, category):  # copy-start/copy-done: data moves, nothing computes
            self.ops.add(Kind.COPY, ts, end)
            return
        comm = classify_op(name, category)
        if comm is None:
            long_name = args.get("long_name") if isinstance(args, dict) else None
            long_name = long_name[:MAX_NAME] if isinstance(long_name, str) else ""
            self.facts.kernel(name, end - ts, long_name)
            self.count += 1
            self.ops.add(Kind.COMPUTE, ts, end)
            return
        phase = async_phase(name)
        if phase is not None:
            which = collectives.get(comm)
            if which is None and len(collectives) < MAX_KEYS:
                which = collectives[comm] = len(collectives)
            if which is not None:
                self.halves.add(ts, end, which, phase == "done")
                return
        self.facts.comm(comm.library, end - ts)
        self.ops.add(Kind.COLLECTIVE, ts, end)

    def _scope(self, ts: float, args: dict[str, Any]) -> None:
        """Training evidence in an op's scope: the earliest op's, as if read in time order."""
        scope = args.get("tf_op")
        if isinstance(scope, str):
            self.scopes_seen = True
        else:
            scope = args.get("long_name") or args.get("kernel_name")
        if isinstance(scope, str) and ts < self.first_scope[0] and TRAINING_RE.search(scope):
            self.first_scope = (ts, scope[:80])

    def into(
        self, tl: Timeline, device: str, facts: RunFacts, collectives: dict[Comm, int]
    ) -> None:
        """Add the line to ``tl`` as the device's activity, and its facts to ``facts``."""
        if not facts.training_evidence and self.first_scope[1]:
            facts.training_evidence = self.first_scope[1]
        facts.scopes_seen = facts.scopes_seen or self.scopes_seen
        _absorb(facts, self.facts)
        library = {i: comm.library for comm, i in collectives.items()}
        starts, ends = self.halves.arrays()
        which = self.halves.column(0)
        done = self.halves.column(1)
        pending: dict[int, deque[tuple[float, float]]] = {}
        pairs: tuple[list[float], list[float]] = ([], [])
        for i in np.argsort(starts, kind="stable"):
            c, ts, end = int(which[i]), float(starts[i]), float(ends[i])
            if not done[i]:
                pending.setdefault(c, deque()).append((ts, end))
                continue
            if pending.get(c):
                ts = pending[c].popleft()[0]
            pairs[0].append(ts)
            pairs[1].append(end)
            facts.comm(library[c], end - ts)
        for c, issued in pending.items():  # issued, never awaited in the profile
            for ts, end in issued:
                pairs[0].append(ts)
                pairs[1].append(end)
                facts.comm(library[c], end - ts)
        for kind in (Kind.COMPUTE, Kind.COLLECTIVE, Kind.COPY):
            sink = self.ops.sinks.get(kind)
            if sink is not None:
                tl.add_activity(device, kind, *sink.arrays())
            if kind is Kind.COLLECTIVE and pairs[0]:
                tl.add_activity(device, kind, *pairs)
        tl.kernel_counts[device] = self.count


def _absorb(facts: RunFacts, part: RunFacts) -> None:
    """Add the kernel and communication sums of ``part`` to ``facts``."""
    facts.kernel_us += part.kernel_us
    facts.tensor_core_us += part.tensor_core_us
    facts.compiled_us += part.compiled_us
    facts.layout_us += part.layout_us
    for label, us in part.precision_us.items():
        facts.precision_us[label] = facts.precision_us.get(label, 0.0) + us
    for library, us in part.comm_us.items():
        facts.comm(library, us)


class _Gathered:
    """What one pass over the events keeps: intervals in sinks under one budget, every
    table capped (``sink.py``), so no file can grow it without bound."""

    def __init__(self) -> None:
        self.budget = budget = IntervalBudget()
        self.dev: SinkTable[tuple[str, Kind]] = SinkTable(budget)
        self.kernels: dict[str, int] = {}
        self.device_steps: SinkTable[str] = SinkTable(budget, mergeable=False, columns="q")
        self.marker_steps = budget.sink(mergeable=False, columns="q")  # step number
        self.func_steps = budget.sink(mergeable=False)
        self.cpu_ops: SinkTable[int] = SinkTable(budget)  # by replica
        self.cpu_shards = budget.sink()  # Eigen intra-op work
        # one interval per all-reduce participant: each is given to a replica at the end
        self.cpu_coll = budget.sink(mergeable=False)
        self.inputs = budget.sink()
        self.input_names = Totals()
        self.markers: SinkTable[str] = SinkTable(budget)
        self.xla: dict[str, _XlaLine] = {}  # device -> its "XLA Ops" line
        self.xla_cache: dict[str, Any] = {}  # kernel names classified, shared by the lines
        self.collectives: dict[Comm, int] = {}  # async collectives of the XLA lines
        self.pipeline: dict[str, Any] = {}
        self.facts = RunFacts()
        self.jax_seen = False
        self.keras_seen = False

    def xla_line(self, device: str) -> _XlaLine | None:
        line = self.xla.get(device)
        if line is None and len(self.xla) < MAX_XLA_LINES:
            line = self.xla[device] = _XlaLine(self.budget, self.xla_cache)
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
        lane = lanes.get((pid, tid))
        if lane is None:
            lane = _lane(doc, pid, tid)
            if len(lanes) < MAX_KEYS:
                lanes[(pid, tid)] = lane
                lane_pids.add(pid)
            else:
                untracked = True
        ts = float(ev["ts"])
        end = ts + float(ev.get("dur", 0.0))
        role, device, tag, eigen, tf_data = lane
        if role >= STEPS:  # a device line
            if role == STREAM:
                kind = _stream_kind(tag, name)
                busy = g.dev.get((device, kind))
                if busy is not None:
                    busy.add(ts, end)
                _device_facts(facts, kind, name, end - ts, ev.get("args"))
                if kind is Kind.H2D:
                    facts.h2d(device, ev.get("args"))
                if kind is Kind.COMPUTE and (device in g.kernels or len(g.kernels) < MAX_KEYS):
                    g.kernels[device] = g.kernels.get(device, 0) + 1
            elif role == XLA_OPS:  # the op timeline of devices without streams (TPU)
                line = g.xla_line(device)
                if line is not None:
                    line.add(name, ts, end, ev.get("args"), g.collectives)
            elif role == STEPS:
                steps = g.device_steps.get(device)
                if steps is not None:
                    steps.add(ts, end, int(name) if name.isdigit() else len(steps))
            elif role == MODULES:  # one execution of a compiled program
                module = MODULE_ID_RE.sub("", name)
                g.jax_seen = g.jax_seen or module.startswith(JAX_MODULE_PREFIXES)
                g.markers.add(f"xla-module:{module}", ts, end)
            continue
        if role == SKIP:
            continue
        info = names.get(name)
        if info is None:
            info = _name_info(name)
            if info[0] != STEP and len(names) < MAX_CACHED_NAMES:
                names[name] = info
        what, step, marker, collective, iterator, training = info
        if training and not facts.training_evidence:
            facts.host_op(name)
        else:
            host_ops += 1
        if marker:
            mark = g.markers.get(name)
            if mark is not None:
                mark.add(ts, end)
            g.jax_seen = g.jax_seen or name.startswith("PjitFunction(")
        if what == INPUT:
            if g.inputs.add(ts, end):
                g.input_names.add(name, end - ts)
        elif what == STEP:  # on the main thread, named after the process ("python", ...)
            g.marker_steps.add(ts, end, step)
        elif what == STEP_FUNCTION:
            g.func_steps.add(ts, end)
        elif role == TF_COMPUTE:
            args = ev.get("args")
            long_name = args.get("long_name") if isinstance(args, dict) else None
            if isinstance(long_name, str):  # an op, not the executor's wrappers
                ops = replica_ops.get(long_name)
                if ops is None:
                    replica = _replica(long_name)
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
        elif what == KERAS_NEXT:
            g.keras_seen = g.keras_seen or "data_adapter" in name
            if g.inputs.add(ts, end):
                g.input_names.add(name.lstrip("$"), end - ts)
        elif role == COLL_OPS and collective:
            g.cpu_coll.add(ts, end)
        if tf_data or iterator:
            _note_pipeline(g.pipeline, name, ev.get("args"))
    facts.host_ops += host_ops


def _build(g: _Gathered, meta: Metadata) -> list[Timeline]:
    facts = g.facts
    if g.jax_seen:
        meta.framework = "jax"
    if g.keras_seen:
        meta.config.update({"api": "keras"})
    base = Timeline(meta=meta)
    base.pipeline.update(g.pipeline)
    for name, sink in g.markers.sinks.items():
        base.add_marker(name, *sink.arrays())
    if len(g.inputs):
        base.add_input_wait(*g.inputs.arrays(), name_totals=g.input_names)
    stream_devices = {d for d, _ in g.dev.sinks}
    if not g.dev and not g.xla and (g.cpu_ops or len(g.cpu_shards)):
        meta.device_type = "CPU"
        _add_cpu_replicas(base, g.cpu_ops, g.cpu_shards, g.cpu_coll)
    else:
        devices = stream_devices | set(g.xla)
        meta.device_type = ", ".join(sorted({d.partition(" ")[0] for d in devices}))
        for device in sorted(devices, key=_order):
            if device in stream_devices:
                for kind in Kind:
                    busy = g.dev.sinks.get((device, kind))
                    if busy is not None:
                        base.add_activity(device, kind, *busy.arrays())
                if device in g.kernels:
                    base.kernel_counts[device] = g.kernels[device]
            else:
                g.xla[device].into(base, device, facts, g.collectives)

    # JAX names backward ops only in op scopes (transpose(jvp(...))), which a profile may lack
    facts.apply(base, inference_by_absence=meta.framework != "jax" or facts.scopes_seen)
    steps = g.marker_steps
    if len(steps):
        base.add_steps(steps.column(0).astype(np.int64), *steps.arrays())
    elif len(g.func_steps):
        s, e = g.func_steps.arrays()
        order = np.lexsort((e, s))
        base.add_steps(np.arange(order.size), s[order], e[order])
    if len(base.steps) or not any(len(s) for s in g.device_steps.sinks.values()):
        g.budget.finish(base)
        base.freeze()
        ensure_steps(base, advice=STEP_ADVICE_JAX if meta.framework == "jax" else STEP_ADVICE_TF)
        return [base]
    return _split_by_device(base, g.device_steps, g.budget)


def _device_facts(facts: RunFacts, kind: Kind, name: str, dur: float, args: Any) -> None:
    """Precision, communication library and training evidence of one device event."""
    if kind is Kind.COLLECTIVE:
        comm = classify(name)
        facts.comm(comm.library if comm else "other", dur)
    elif kind is Kind.COMPUTE:
        facts.kernel(name, dur, op=args.get("tf_op") if isinstance(args, dict) else None)
    if isinstance(args, dict) and not facts.training_evidence:
        scope = args.get("tf_op")  # training evidence in the op's scope (gradient_tape/...)
        if isinstance(scope, str):
            facts.scopes_seen = True
        else:
            scope = args.get("long_name") or args.get("kernel_name")
        if isinstance(scope, str):
            facts.scope(scope)


def _add_cpu_replicas(
    tl: Timeline, ops: SinkTable[int], shards: IntervalSink, coll: IntervalSink
) -> None:
    """CPU-only profile: each replica's own op stream is its device.

    Replicas share the same cores, so the union of all compute threads would hide one
    replica's wait in the all-reduce behind another's work. Ops carry their replica in
    ``long_name`` (``replica_N/…``; replica 0 unprefixed). Each all-reduce participant
    (one CollectiveReduceV2 event) is given to the free replica whose own work ended last
    before it: the one whose gradients just became ready.
    """
    replicas = max(ops.sinks, default=0) + 1
    tl.meta.replicas = tl.meta.replicas or (replicas if replicas > 1 else None)
    coll_s, coll_e = coll.arrays()
    if replicas == 1:
        op_s, op_e = ops.sinks[0].arrays() if ops.sinks else (np.zeros(0), np.zeros(0))
        shard_s, shard_e = shards.arrays()
        tl.add_activity(
            "CPU", Kind.COMPUTE, np.concatenate([op_s, shard_s]), np.concatenate([op_e, shard_e])
        )
        if coll_s.size:
            tl.add_activity("CPU", Kind.COLLECTIVE, coll_s, coll_e)
        tl.meta.limitations.append(
            "CPU-only profile: device time is the busy time of the framework's op threads"
        )
        return
    names = [f"CPU replica {r}" for r in range(replicas)]
    merged = {
        r: union_of(*ops.sinks[r].arrays()) if r in ops.sinks else Intervals()
        for r in range(replicas)
    }
    busy_until = [-np.inf] * replicas
    assigned: list[tuple[list[float], list[float]]] = [([], []) for _ in range(replicas)]
    order = np.lexsort((coll_e, coll_s))
    for s, e in zip(coll_s[order].tolist(), coll_e[order].tolist(), strict=True):
        free = [r for r in range(replicas) if busy_until[r] <= s] or list(range(replicas))

        def last_work_end(r: int, s: float = s) -> float:
            m = merged[r]
            i = int(np.searchsorted(m.ends, s, side="right"))
            return float(m.ends[i - 1]) if i else -np.inf

        r = max(free, key=last_work_end)
        assigned[r][0].append(s)
        assigned[r][1].append(e)
        busy_until[r] = e
    for r, name in enumerate(names):
        m = merged[r]
        tl.add_activity(name, Kind.COMPUTE, m.starts, m.ends)
        if assigned[r][0]:
            tl.add_activity(name, Kind.COLLECTIVE, *assigned[r])
    tl.meta.limitations.append(
        f"CPU-only profile with {replicas} replicas on shared cores: each replica's device "
        "time is the busy time of its own ops"
    )


def _split_by_device(
    base: Timeline, device_steps: SinkTable[str], budget: IntervalBudget
) -> list[Timeline]:
    """Devices with their own step line (multi-worker xplanes) become one Timeline each."""
    out = []
    for device in sorted((d for d, s in device_steps.sinks.items() if len(s)), key=_order):
        tl = Timeline(
            meta=Metadata(
                **{
                    **base.meta.__dict__,
                    "devices": [],
                    "limitations": list(base.meta.limitations),
                    "extra": {**base.meta.extra, "worker_device": device},
                }
            )
        )
        for (d, kind), iv in base.activity.items():
            if d == device:
                tl.add_activity(d, kind, iv.starts, iv.ends)
        if device in base.kernel_counts:
            tl.kernel_counts[device] = base.kernel_counts[device]
        steps = device_steps.sinks[device]
        starts, ends = steps.arrays()
        tl.add_steps(steps.column(0).astype(np.int64), starts, ends)
        clipped = base.input_wait.clip(float(starts.min()), float(ends.max()))
        tl.input_wait = Intervals(clipped.starts, clipped.ends)
        tl.input_wait_names = dict(base.input_wait_names)
        tl.pipeline = dict(base.pipeline)
        budget.finish(tl)
        out.append(ensure_steps(tl.freeze()))  # records that steps came from markers
    return out


def _order(device: str) -> tuple[str, int]:
    kind, _, num = device.partition(" ")
    return (kind, int(num) if num.isdigit() else 0)


def _note_pipeline(pipeline: dict[str, Any], name: str, args: Any) -> None:
    """Facts about the tf.data graph: sequential map, generator source, Python functions."""
    if name == "PyFunc" or name == "EagerPyFunc":
        pipeline["py_function"] = True
    if not isinstance(args, dict):
        return
    long_name = args.get("long_name")
    if not isinstance(long_name, str) or not long_name.startswith("Iterator::"):
        return
    long_name = long_name[:MAX_NAME]
    parts = long_name.split("::")
    chain = pipeline.setdefault("iterator_chains", [])
    if long_name not in chain and len(chain) < 20:
        chain.append(long_name)
    if "Generator" in parts:
        pipeline["generator"] = True
    if "Map" in parts or (parts[-1] == "MapAndBatch" and str(args.get("parallelism")) == "1"):
        pipeline["sequential_map"] = True
