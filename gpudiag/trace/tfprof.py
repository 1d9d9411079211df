"""TensorFlow / JAX profiler trace-viewer JSON -> Timeline.

The same events come from ``*.trace.json.gz`` files and from ``.xplane.pb`` converted by xprof
(see ``xplane.py``). Layout (field notes): processes ``/device:GPU:N`` with stream threads
``Stream #N(Compute|MemcpyH2D|MemcpyD2H)`` and derived lines ("Steps", "TensorFlow Ops"), and
``/host:CPU`` with threads ``python``, ``tf_Compute/…``, ``tf_data_…``, ``collective_ops/…``.

On a CPU-only profile the ``tf_Compute`` threads *are* the device: their busy time is the
compute, ``CollectiveReduceV2`` the sync and ``IteratorGetNext…`` the input wait.

    timelines = read_tf_trace(open_chrome(path), path)
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from gpudiag.trace.chrome import ChromeDoc
from gpudiag.trace.comm import async_phase, classify
from gpudiag.trace.errors import TraceError
from gpudiag.trace.facts import RunFacts
from gpudiag.trace.sink import MAX_KEYS
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
    return Kind.COMPUTE


# what a (pid, tid) lane is, from its process and thread names
SKIP, HOST, STEPS, MODULES, XLA_OPS, DERIVED, STREAM = range(7)
Lane = tuple[int, str, str, str]  # role, device, thread name, stream tag


def _lane(doc: ChromeDoc, pid: Any, tid: Any) -> Lane:
    proc = doc.process_names.get(pid, "")
    thread = doc.thread_names.get((pid, tid), "")
    device = _device_name(proc)
    if device is None:
        return (HOST if proc.startswith("/host:") else SKIP), "", thread, ""
    role = {"Steps": STEPS, "XLA Modules": MODULES, "XLA Ops": XLA_OPS}.get(thread)
    if role is None:
        role = DERIVED if thread in DERIVED_LINES else STREAM
    m = STREAM_KIND_RE.search(thread)
    return role, device, thread, m.group(1) if m else ""


class _LateName(Exception):
    """A name arrived after events that needed it: the one pass read them unnamed."""


def read_tf_stream(doc: ChromeDoc, path: str) -> list[Timeline] | None:
    """``read_tf_trace`` in one pass over a streamed file whose names are only partly known
    (``index_head``): later metadata events update the names as they arrive. None when a
    name came after an event that needed it; the caller then indexes every name and reads
    again, so the result never depends on where the file puts its names."""
    try:
        return _read(doc, path, "tf-trace-viewer", live=True)
    except _LateName:
        return None


def read_tf_trace(doc: ChromeDoc, path: str, producer: str = "tf-trace-viewer") -> list[Timeline]:
    """One Timeline per device that has its own step line (workers), else one in total.
    ``doc`` holds every name already (``index_names``)."""
    return _read(doc, path, producer, live=False)


def _read(doc: ChromeDoc, path: str, producer: str, live: bool) -> list[Timeline]:
    meta = Metadata(producer=producer, source=path, framework="tensorflow")
    dev: dict[tuple[str, Kind], tuple[list[float], list[float]]] = {}
    kernels: dict[str, int] = {}
    device_steps: dict[str, list[tuple[int, float, float]]] = {}
    marker_steps: list[tuple[int, float, float]] = []
    func_steps: list[tuple[float, float]] = []
    cpu_ops: dict[int, tuple[list[float], list[float]]] = {}  # replica -> op intervals
    cpu_shards: tuple[list[float], list[float]] = ([], [])  # Eigen intra-op work
    cpu_coll: tuple[list[float], list[float]] = ([], [])
    in_s: list[float] = []
    in_e: list[float] = []
    in_n: list[str] = []
    pipeline: dict[str, Any] = {}
    markers: dict[str, tuple[list[float], list[float]]] = {}
    xla_ops: dict[str, list[tuple[str, float, float, Any]]] = {}  # device -> "XLA Ops" line
    facts = RunFacts()
    jax_seen = keras_seen = False
    # lanes looked up so far; in the one-pass mode a name that changes for one of them (or
    # for any, once there are too many to keep) means those events were read unnamed
    lanes: dict[tuple[Any, Any], Lane] = {}
    lane_pids: set[Any] = set()
    untracked = False
    try:
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
            role, device, thread, tag = lane
            if role == SKIP:
                continue
            if role != HOST:
                if role == STEPS:
                    idx = int(name) if name.isdigit() else len(device_steps.get(device, []))
                    device_steps.setdefault(device, []).append((idx, ts, end))
                elif role == MODULES:  # one execution of a compiled program
                    module = MODULE_ID_RE.sub("", name)
                    jax_seen = jax_seen or module.startswith(JAX_MODULE_PREFIXES)
                    mark = markers.setdefault(f"xla-module:{module}", ([], []))
                    mark[0].append(ts)
                    mark[1].append(end)
                elif role == XLA_OPS:  # the op timeline of devices without streams (TPU)
                    xla_ops.setdefault(device, []).append((name, ts, end, ev.get("args")))
                elif role == STREAM:
                    kind = _stream_kind(tag, name)
                    lists = dev.get((device, kind))
                    if lists is None:
                        lists = dev[(device, kind)] = ([], [])
                    lists[0].append(ts)
                    lists[1].append(end)
                    _device_facts(facts, kind, name, end - ts, ev.get("args"))
                    if kind is Kind.COMPUTE:
                        kernels[device] = kernels.get(device, 0) + 1
                continue
            facts.host_op(name)
            if is_marker(name):
                mark = markers.setdefault(name, ([], []))
                mark[0].append(ts)
                mark[1].append(end)
                jax_seen = jax_seen or name.startswith("PjitFunction(")
            if name in INPUT_WAIT_NAMES or name.startswith("MultiDeviceIteratorGetNextFromShard"):
                in_s.append(ts)
                in_e.append(end)
                in_n.append(name)
            elif (m := STEP_MARKER_RE.match(name)) is not None:
                # on the main thread, named after the process ("python", "gpudiag", ...)
                marker_steps.append((int(m.group(1)), ts, end))
            elif name in STEP_FUNCTIONS:
                func_steps.append((ts, end))
            elif thread.startswith("tf_Compute"):
                args = ev.get("args")
                long_name = args.get("long_name") if isinstance(args, dict) else None
                if isinstance(long_name, str):  # an op, not the executor's wrappers
                    m = REPLICA_RE.search(long_name)
                    ops = cpu_ops.setdefault(int(m.group(1)) if m else 0, ([], []))
                    ops[0].append(ts)
                    ops[1].append(end)
            elif "Eigen" in thread or thread.startswith("tf_XLA"):
                # intra-op shards (TF) and XLA executables on the CPU (JAX); not the waits
                wrapper = name == "ThreadpoolListener::Region" and "Eigen" not in thread
                if not wrapper and "wait for completion" not in name:
                    cpu_shards[0].append(ts)
                    cpu_shards[1].append(end)
            elif name == "$builtins next" or (name.startswith("$") and "data_adapter" in name):
                # JAX / torch backends: Keras pulls each batch in Python (python tracer)
                keras_seen = keras_seen or "data_adapter" in name
                in_s.append(ts)
                in_e.append(end)
                in_n.append(name.lstrip("$"))
            elif thread.startswith("collective_ops") and classify(name) is not None:
                cpu_coll[0].append(ts)
                cpu_coll[1].append(end)
            if thread.startswith("tf_data") or name.startswith("Iterator::"):
                _note_pipeline(pipeline, name, ev.get("args"))
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise TraceError(path, f"malformed trace event ({type(e).__name__}: {e})") from None
    if live and not looks_like_tf(doc):  # a later name replaced the one that said TF
        raise _LateName

    if jax_seen:
        meta.framework = "jax"
    if keras_seen:
        meta.config.update({"api": "keras"})
    base = Timeline(meta=meta)
    base.pipeline.update(pipeline)
    for name, (m_s, m_e) in markers.items():
        base.add_marker(name, m_s, m_e)
    for device, line in xla_ops.items():
        if not any(d == device for d, _ in dev):
            kernels[device] = _add_xla_ops(dev, facts, device, line)
    if in_s:
        base.add_input_wait(in_s, in_e, in_n)
    if not dev and (cpu_ops or cpu_shards[0]):
        meta.device_type = "CPU"
        cpu_ops.setdefault(0, ([], []))
        _add_cpu_replicas(base, cpu_ops, cpu_shards, cpu_coll)
    else:
        meta.device_type = ", ".join(sorted({d.partition(" ")[0] for d, _ in dev}))
        for (device, kind), (d_s, d_e) in sorted(dev.items(), key=lambda kv: _order(kv[0][0])):
            base.add_activity(device, kind, d_s, d_e)
        base.kernel_counts.update(kernels)

    # JAX names backward ops only in op scopes (transpose(jvp(...))), which a profile may lack
    facts.apply(base, inference_by_absence=meta.framework != "jax" or facts.scopes_seen)
    steps = marker_steps or [(i, s, e) for i, (s, e) in enumerate(sorted(func_steps))]
    if steps or not device_steps:
        if steps:
            base.add_steps(*zip(*steps, strict=True))
        base.freeze()
        ensure_steps(base, advice=STEP_ADVICE_JAX if meta.framework == "jax" else STEP_ADVICE_TF)
        return [base]
    return _split_by_device(base, device_steps)


def _device_facts(facts: RunFacts, kind: Kind, name: str, dur: float, args: Any) -> None:
    """Precision, communication library and training evidence of one device event."""
    if kind is Kind.COLLECTIVE:
        comm = classify(name)
        facts.comm(comm.library if comm else "other", dur)
    elif kind is Kind.COMPUTE:
        facts.kernel(name, dur)
    _scope_facts(facts, args)


def _scope_facts(facts: RunFacts, args: Any) -> None:
    """Training evidence in an op's scope (gradient_tape/..., transpose(jvp(...)))."""
    if isinstance(args, dict) and not facts.training_evidence:
        scope = args.get("tf_op")
        if isinstance(scope, str):
            facts.scopes_seen = True
        else:
            scope = args.get("long_name") or args.get("kernel_name")
        if isinstance(scope, str):
            facts.scope(scope)


def _add_xla_ops(
    dev: dict[tuple[str, Kind], tuple[list[float], list[float]]],
    facts: RunFacts,
    device: str,
    ops: list[tuple[str, float, float, Any]],
) -> int:
    """A device with no stream lines (TPU): its XLA op line is its activity. An async
    collective runs from its ``*-start`` to its ``*-done``; both halves pair up in order."""
    pending: dict[tuple[str, str], list[tuple[float, float]]] = {}  # (library, op) -> halves
    ops_count = 0
    for name, ts, end, args in sorted(ops, key=lambda o: o[1]):
        _scope_facts(facts, args)
        comm = classify(name)
        kind = Kind.COLLECTIVE if comm else Kind.COMPUTE
        phase = async_phase(name) if comm else None
        if comm is not None and phase == "start":
            pending.setdefault((comm.library, comm.op), []).append((ts, end))
            continue
        if comm is not None and phase == "done" and pending.get((comm.library, comm.op)):
            ts = pending[(comm.library, comm.op)].pop(0)[0]
        lists = dev.setdefault((device, kind), ([], []))
        lists[0].append(ts)
        lists[1].append(end)
        if comm is not None:
            facts.comm(comm.library, end - ts)
        else:
            long_name = args.get("long_name") if isinstance(args, dict) else None
            facts.kernel(name, end - ts, long_name if isinstance(long_name, str) else "")
            ops_count += 1
    for (library, _op), starts in pending.items():  # issued, never awaited in the profile
        for ts, end in starts:
            lists = dev.setdefault((device, Kind.COLLECTIVE), ([], []))
            lists[0].append(ts)
            lists[1].append(end)
            facts.comm(library, end - ts)
    return ops_count


def _add_cpu_replicas(
    tl: Timeline,
    ops: dict[int, tuple[list[float], list[float]]],
    shards: tuple[list[float], list[float]],
    coll: tuple[list[float], list[float]],
) -> None:
    """CPU-only profile: each replica's own op stream is its device.

    Replicas share the same cores, so the union of all compute threads would hide one
    replica's wait in the all-reduce behind another's work. Ops carry their replica in
    ``long_name`` (``replica_N/…``; replica 0 unprefixed). Each all-reduce participant
    (one CollectiveReduceV2 event) is given to the free replica whose own work ended last
    before it: the one whose gradients just became ready.
    """
    replicas = max(ops) + 1
    tl.meta.replicas = tl.meta.replicas or (replicas if replicas > 1 else None)
    if replicas == 1:
        tl.add_activity("CPU", Kind.COMPUTE, ops[0][0] + shards[0], ops[0][1] + shards[1])
        if coll[0]:
            tl.add_activity("CPU", Kind.COLLECTIVE, *coll)
        tl.meta.limitations.append(
            "CPU-only profile: device time is the busy time of the framework's op threads"
        )
        return
    names = [f"CPU replica {r}" for r in range(replicas)]
    merged = {
        r: union_of(
            np.asarray(ops.get(r, ([], []))[0], dtype=float),
            np.asarray(ops.get(r, ([], []))[1], dtype=float),
        )
        for r in range(replicas)
    }
    busy_until = [-np.inf] * replicas
    assigned: list[tuple[list[float], list[float]]] = [([], []) for _ in range(replicas)]
    for s, e in sorted(zip(*coll, strict=True)):
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
    base: Timeline, device_steps: dict[str, list[tuple[int, float, float]]]
) -> list[Timeline]:
    """Devices with their own step line (multi-worker xplanes) become one Timeline each."""
    out = []
    for device in sorted(device_steps, key=_order):
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
        steps = device_steps[device]
        tl.add_steps(*zip(*steps, strict=True))
        lo = min(s for _, s, _ in steps)
        hi = max(e for _, _, e in steps)
        clipped = base.input_wait.clip(lo, hi)
        tl.input_wait = Intervals(clipped.starts, clipped.ends)
        tl.input_wait_names = dict(base.input_wait_names)
        tl.pipeline = dict(base.pipeline)
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
    parts = long_name.split("::")
    chain = pipeline.setdefault("iterator_chains", [])
    if long_name not in chain and len(chain) < 20:
        chain.append(long_name)
    if "Generator" in parts:
        pipeline["generator"] = True
    if "Map" in parts or (parts[-1] == "MapAndBatch" and str(args.get("parallelism")) == "1"):
        pipeline["sequential_map"] = True
