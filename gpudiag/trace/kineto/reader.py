"""PyTorch profiler (Kineto) JSON -> Timeline.

Kineto writes GPU activity as ``X`` events with ``cat`` kernel / gpu_memcpy / gpu_memset (older
releases: Kernel / Memcpy / Memset) whose pid is the device index; steps as ``ProfilerStep#N``
annotations on the CPU; DataLoader waits as ``enumerate(DataLoader)#...__next__``.

    timelines = read_kineto(open_chrome(path, index=False), path)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import islice
from typing import Any

import numpy as np

from gpudiag.trace.errors import TraceError
from gpudiag.trace.kineto.memory import NAME as MEMORY_EVENT
from gpudiag.trace.kineto.memory import MemoryEvents
from gpudiag.trace.model.collectives import SizedCollectives
from gpudiag.trace.model.sink import MAX_KEYS, STEP_WEIGHT, IntervalBudget, SinkTable, Totals
from gpudiag.trace.model.steps_infer import ensure_steps, is_marker
from gpudiag.trace.model.stream_overlap import StreamOverlap
from gpudiag.trace.model.timeline import HOST_COMPUTE, Intervals, Kind, Metadata, Timeline, subtract
from gpudiag.trace.names.comm import classify
from gpudiag.trace.names.facts import RunFacts, host_call_kind
from gpudiag.trace.names.name_scan import NameCache, scanned
from gpudiag.trace.source.chrome import MAX_NAME, ChromeDoc, loads
from gpudiag.trace.source.event_check import json_kind

KERNEL_CATS = frozenset({"kernel", "Kernel"})
MEMCPY_CATS = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATS = frozenset({"gpu_memset", "Memset"})
DEVICE_CATS = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
DATALOADER_PREFIX = "enumerate(DataLoader)#"


TOP_KEYS = ("deviceProperties", "distributedInfo", "schemaVersion")
RUNTIME_CATS = frozenset({"cuda_runtime", "Runtime", "cuda_driver"})
# host-side ops (Kineto >= 1.10 names first, PyTorch 1.8/1.9 names second)
HOST_CATS = frozenset({"cpu_op", "Operator", "user_annotation", "python_function"})
CPU_OP_CATS = frozenset({"cpu_op", "Operator"})
# the pre-Kineto autograd profiler (torch < 1.8, or use_kineto=False) writes no categories:
# host ops under this pid, CUDA-event-timed op ranges under the other with tid = device
LEGACY_CPU_PID = "CPU functions"
LEGACY_CUDA_PID = "CUDA functions"
KINETO_CATS = DEVICE_CATS | RUNTIME_CATS | HOST_CATS
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "hipGraphLaunch", "cuGraphLaunch"})


def looks_like_kineto(doc: ChromeDoc) -> bool:
    if any(k in doc.top for k in TOP_KEYS):
        return True
    for ev in islice(doc.events, 5000):
        name = ev.get("name")
        if ev.get("cat") in KINETO_CATS or ev.get("pid") in (LEGACY_CPU_PID, LEGACY_CUDA_PID):
            return True
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            return True
    return False


def memcpy_kind(name: str) -> Kind:
    if "HtoD" in name or "H2D" in name:
        return Kind.H2D
    if "DtoH" in name or "D2H" in name:
        return Kind.D2H
    return Kind.COPY  # DtoD / PtoP: the device moves data, it does not compute


def kineto_head(head: bytes) -> dict[str, Any] | None:
    """Top-level keys written before ``traceEvents`` (Kineto writes deviceProperties and
    distributedInfo first), or None if the head does not look like a Kineto trace."""
    idx = head.find(b'"traceEvents"')
    if idx < 0:
        return None
    prefix = head[:idx].rstrip().rstrip(b",") + b"}"
    try:
        top = loads(prefix)
    except (ValueError, RecursionError):
        return None
    if not isinstance(top, dict) or not any(k in top for k in TOP_KEYS):
        return None
    return top


def read_kineto(doc: ChromeDoc, path: str) -> list[Timeline]:
    return read_kineto_events(doc.events, doc.top, path)


def read_kineto_events(events: Iterable[Any], top: dict[str, Any], path: str) -> list[Timeline]:
    tl = Timeline(meta=_metadata(top, path))
    budget = IntervalBudget()
    dev: SinkTable[tuple[str, Kind]] = SinkTable(budget)
    kernels: dict[str, int] = {}
    steps = budget.sink(False, "q", STEP_WEIGHT)  # ProfilerStep number
    waits = budget.sink()
    cpu_ops: SinkTable[str] = SinkTable(budget, False)  # framework ops on the host, by name
    launches_at = budget.sink()  # kernel launches and copies issued by the host
    wait_names = Totals()
    host_comm = budget.sink()
    host_calls: SinkTable[str] = SinkTable(budget)
    markers: SinkTable[str] = SinkTable(budget)
    is_marker_name = NameCache()  # python_function names vary: bounded
    facts = RunFacts()
    sizes = SizedCollectives()  # collectives with their message size (record_param_comms)
    memory = MemoryEvents()  # the allocator's totals (profile_memory=True)
    overlap = StreamOverlap()  # kernels that cannot share their stream as written
    launches = graphs = 0
    hip = False
    single_process = multi_process = False
    kernel_kind = NameCache()  # names repeat: classify each once
    try:
        for ev in events:
            if not isinstance(ev, dict):
                raise TraceError(path, f"trace event is {json_kind(ev)}, expected an object")
            cat = ev.get("cat")
            if ev.get("ph") != "X":
                if ev.get("name") == MEMORY_EVENT:
                    memory.add(ev)
                elif cat == "fwdbwd":  # flow arrows from a forward op to its backward
                    facts.training_evidence = facts.training_evidence or "fwdbwd flow events"
                continue
            name = ev.get("name")
            if not isinstance(name, str):
                continue
            pid = ev.get("pid")
            if pid == LEGACY_CUDA_PID:  # pre-Kineto autograd profiler: op ranges per device
                cat = "Kernel"
            if cat in DEVICE_CATS:
                ts = float(ev["ts"])
                dur = float(ev.get("dur", 0.0))
                args = ev.get("args") or {}
                if pid == LEGACY_CUDA_PID:
                    device = f"GPU {int(str(ev.get('tid', 0)))}"
                else:
                    device = f"GPU {int(args.get('device', pid) or 0)}"
                if cat in KERNEL_CATS:
                    head = scanned(name)
                    known = kernel_kind.get(head)
                    if known is None:
                        comm = classify(head)
                        known = (Kind.COLLECTIVE if comm else Kind.COMPUTE, comm)
                        kernel_kind.put(head, known)
                    kind, comm = known
                    if comm is not None:
                        facts.comm(comm.library, dur)
                        sizes.kernel(ts, dur, device, args, args.get("External id"))
                    else:
                        facts.kernel(name, dur)
                    if device in kernels or len(kernels) < MAX_KEYS:
                        kernels[device] = kernels.get(device, 0) + 1
                elif cat in MEMCPY_CATS:
                    kind = memcpy_kind(name)
                    if kind is Kind.H2D:
                        facts.h2d(device, args)
                else:
                    kind = Kind.COPY  # a memset fills memory: no compute
                dev.add((device, kind), ts, ts + dur)
                if pid != LEGACY_CUDA_PID:  # legacy ranges are ops, not a stream's work
                    overlap.add((device, ev.get("tid")), ts, ts + dur)
            elif cat in RUNTIME_CATS:
                if "Launch" in name or "Memcpy" in name:
                    ts = float(ev["ts"])
                    launches_at.add(ts, ts + float(ev.get("dur", 0.0)))
                if "Launch" in name:
                    launches += 1
                    graphs += name in GRAPH_LAUNCHES
                hip = hip or name.startswith("hip")
                if host_call_kind(name) is not None:
                    ts = float(ev["ts"])
                    host_calls.add(name, ts, ts + float(ev.get("dur", 0.0)))
            elif name.startswith("ProfilerStep#"):
                if cat == "gpu_user_annotation":
                    continue  # the device-side mirror of the CPU annotation
                m = STEP_RE.match(name)
                if m:
                    ts = float(ev["ts"])
                    steps.add(ts, ts + float(ev.get("dur", 0.0)), int(m.group(1)))
            elif cat in HOST_CATS or pid == LEGACY_CPU_PID:
                facts.host_op(name, ev.get("args"))
                if name == "record_param_comms":
                    args = ev.get("args") or {}
                    sizes.op_params(args.get("External id"), args)
                if cat in CPU_OP_CATS:
                    ts = float(ev["ts"])
                    cpu_ops.add(name, ts, ts + float(ev.get("dur", 0.0)))
                mark = is_marker_name.get(name)
                if mark is None:
                    mark = is_marker(name)
                    is_marker_name.put(name, mark)
                if mark:
                    ts = float(ev["ts"])
                    markers.add(name, ts, ts + float(ev.get("dur", 0.0)))
                if name.startswith(DATALOADER_PREFIX):
                    ts = float(ev["ts"])
                    dur = float(ev.get("dur", 0.0))
                    if waits.add(ts, ts + dur):
                        wait_names.add(name, dur)
                    single_process = single_process or "_SingleProcessDataLoaderIter" in name
                    multi_process = multi_process or "_MultiProcessingDataLoaderIter" in name
                elif name.startswith("gloo:"):  # a blocking host collective holds the step
                    ts = float(ev["ts"])
                    host_comm.add(ts, ts + float(ev.get("dur", 0.0)))
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise TraceError(path, f"malformed Kineto event ({type(e).__name__}: {e})") from None
    if len(steps):
        step_s, step_e, step_i = steps.take()
        tl.add_steps(step_i.astype(np.int64), step_s, step_e)
    for device in sorted({d for d, _ in dev.sinks}, key=_device_order):
        for kind in Kind:
            if (device, kind) in dev.sinks:
                tl.add_activity(device, kind, *dev.sinks[(device, kind)].take_pairs())
    if len(host_comm):
        comm_s, comm_e = host_comm.take_pairs()
        facts.comm("gloo", float(np.sum(comm_e - comm_s)))
        for device in list(tl.devices):
            tl.add_activity(device, Kind.COLLECTIVE, comm_s, comm_e)
    for name, sink in markers.sinks.items():
        tl.add_marker(name, *sink.take_pairs())
    for name, sink in host_calls.sinks.items():
        tl.add_host_call(name, *sink.take_pairs())
    tl.kernel_counts.update(kernels)
    tl.collectives = sizes.take()
    memory.apply(tl)
    if cpu_ops and dev:
        quiet, top = host_compute(
            {n: sink.take_pairs() for n, sink in cpu_ops.sinks.items()}, launches_at.take_pairs()
        )
        tl.meta.extra[HOST_COMPUTE] = quiet
        tl.meta.extra["host_compute_ops_ms"] = top
    if len(waits):
        tl.add_input_wait(*waits.take_pairs(), name_totals=wait_names)
    if single_process:
        tl.pipeline["dataloader_workers"] = 0
    elif multi_process:
        tl.pipeline["dataloader_workers"] = "several"
    tl.meta.extra["kernel_launches"] = launches
    if graphs:
        tl.meta.extra["cuda_graph_launches"] = graphs
    if hip and "NCCL" in facts.comm_us:  # RCCL keeps NCCL's kernel names
        facts.comm_us["RCCL"] = facts.comm_us.pop("NCCL") + facts.comm_us.get("RCCL", 0.0)
    if hip and not tl.meta.device_type:
        tl.meta.device_type = "ROCm GPU"
    facts.apply(tl)
    overlap.apply(tl)
    if not dev:
        tl.meta.limitations.append(
            "no GPU events in this trace (CPU-only run, or the profiler did not record CUDA "
            "activity): device time cannot be measured"
        )
    budget.finish(tl)
    tl.freeze()
    ensure_steps(
        tl,
        advice="record with torch.profiler.profile(schedule=...) and call "
        "prof.step() each iteration for exact steps",
    )
    return [tl]


def host_compute(
    ops: dict[str, tuple[np.ndarray, np.ndarray]], launches: tuple[np.ndarray, np.ndarray]
) -> tuple[Intervals, dict[str, float]]:
    """Host time in framework ops that launch nothing on the device (CPU preprocessing:
    decoding, resizing, tokenising; host-side framework work): the union of the ops with no
    kernel launch or copy inside, less the time of the ops that do launch (their
    non-launching children are the launch's own overhead). Also the ops holding most of
    it (ms, at most ``TOP_HOST_OPS``)."""
    launch = Intervals(*launches).merged()
    quiet_s, quiet_e, loud_s, loud_e = [], [], [], []
    totals: dict[str, float] = {}
    for name, (starts, ends) in ops.items():
        if len(launch):
            i = np.searchsorted(launch.starts, ends, side="right") - 1
            launching = (i >= 0) & (launch.ends[np.maximum(i, 0)] >= starts)
        else:
            launching = np.zeros(starts.size, dtype=bool)
        quiet_s.append(starts[~launching])
        quiet_e.append(ends[~launching])
        loud_s.append(starts[launching])
        loud_e.append(ends[launching])
        total = float(np.sum(ends[~launching] - starts[~launching]))
        if total > 0:
            totals[name] = total
    quiet = Intervals(np.concatenate(quiet_s), np.concatenate(quiet_e)).merged()
    loud = Intervals(np.concatenate(loud_s), np.concatenate(loud_e)).merged()
    top = sorted(totals.items(), key=lambda kv: -kv[1])[:TOP_HOST_OPS]
    return subtract(quiet, loud), {n[:MAX_NAME]: round(us / 1000.0, 2) for n, us in top}


TOP_HOST_OPS = 5


def _nvidia(props: dict[str, Any]) -> bool:
    """Compute capability is NVIDIA's: ROCm's Kineto writes its gfx version in the same
    fields (9.4 for gfx942), and a bool or a huge number is no capability."""
    parts = (props.get("computeMajor"), props.get("computeMinor"))
    sane = all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 100 for x in parts)
    return sane and "AMD" not in str(props.get("name")) and "gfx" not in str(props.get("name"))


def _device_order(name: str) -> tuple[int, str]:
    tail = name.rsplit(" ", 1)[-1]
    return (int(tail) if tail.isdigit() else 1 << 30, name)


def _metadata(top: dict[str, Any], path: str) -> Metadata:
    meta = Metadata(producer="kineto", source=path, framework="pytorch")
    info: Any = top.get("distributedInfo")
    if isinstance(info, dict):
        if isinstance(info.get("rank"), int):
            meta.rank = info["rank"]
        if isinstance(info.get("world_size"), int):
            meta.world_size = info["world_size"]
        if info.get("backend"):
            meta.extra["backend"] = str(info["backend"])
    props: Any = top.get("deviceProperties")
    if isinstance(props, list) and props:
        names = {str(p.get("name", ""))[:MAX_NAME] for p in props if isinstance(p, dict)}
        meta.device_type = ", ".join(sorted(n for n in names if n)) or "GPU"
        first = props[0] if isinstance(props[0], dict) else {}
        if first.get("name"):
            meta.config.gpu_model = str(first["name"])[:MAX_NAME]
        total = first.get("totalGlobalMem")
        if isinstance(total, int) and not isinstance(total, bool) and total > 0:
            meta.extra["gpu_memory_mib"] = round(total / (1 << 20), 1)
        major, minor = first.get("computeMajor"), first.get("computeMinor")
        # NVIDIA only: ROCm's Kineto writes its gfx version in the same fields (9.4 = gfx942)
        if isinstance(major, int) and isinstance(minor, int) and _nvidia(first):
            meta.config.compute_capability = major + minor / 10.0
    return meta
