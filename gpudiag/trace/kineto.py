"""PyTorch profiler (Kineto) JSON -> Timeline.

Kineto writes GPU activity as ``X`` events with ``cat`` kernel / gpu_memcpy / gpu_memset (older
releases: Kernel / Memcpy / Memset) whose pid is the device index; steps as ``ProfilerStep#N``
annotations on the CPU; DataLoader waits as ``enumerate(DataLoader)#...__next__``.

    timelines = read_kineto(parse_chrome(raw, path), path)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from gpudiag.trace.chrome import ChromeDoc, loads
from gpudiag.trace.errors import TraceError
from gpudiag.trace.source import gzip_errors, open_stream
from gpudiag.trace.timeline import Kind, Metadata, Timeline

KERNEL_CATS = frozenset({"kernel", "Kernel"})
MEMCPY_CATS = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATS = frozenset({"gpu_memset", "Memset"})
DEVICE_CATS = KERNEL_CATS | MEMCPY_CATS | MEMSET_CATS
COLLECTIVE_RE = re.compile(r"nccl|rccl|all_?reduce|allgather|reduce_?scatter", re.IGNORECASE)
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
DATALOADER_PREFIX = "enumerate(DataLoader)#"


TOP_KEYS = ("deviceProperties", "distributedInfo", "schemaVersion")
RUNTIME_CATS = frozenset({"cuda_runtime", "Runtime", "cuda_driver"})


def looks_like_kineto(doc: ChromeDoc) -> bool:
    if any(k in doc.top for k in TOP_KEYS):
        return True
    for ev in doc.events[:5000]:
        name = ev.get("name")
        if ev.get("cat") in DEVICE_CATS:
            return True
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            return True
    return False


def memcpy_kind(name: str) -> Kind:
    if "HtoD" in name or "H2D" in name:
        return Kind.H2D
    if "DtoH" in name or "D2H" in name:
        return Kind.D2H
    return Kind.COMPUTE  # DtoD / PtoP copies and memsets run on the device itself


def kineto_head(head: bytes) -> dict[str, Any] | None:
    """Top-level keys written before ``traceEvents`` (Kineto writes deviceProperties and
    distributedInfo first), or None if the head does not look like a Kineto trace."""
    idx = head.find(b'"traceEvents"')
    if idx < 0:
        return None
    prefix = head[:idx].rstrip().rstrip(b",") + b"}"
    try:
        top = loads(prefix)
    except ValueError:
        return None
    if not isinstance(top, dict) or not any(k in top for k in TOP_KEYS):
        return None
    return top


def stream_kineto(path: str, top: dict[str, Any]) -> list[Timeline]:
    """Read a (large) Kineto trace event by event: memory holds only what is kept."""
    import ijson

    with open_stream(path) as f, gzip_errors(path):
        try:
            return read_kineto_events(ijson.items(f, "traceEvents.item", use_float=True), top,
                                      path)
        except ijson.IncompleteJSONError as e:
            what = str(e).splitlines()[0] if str(e) else ""
            if "premature EOF" in what or not what:
                raise TraceError(path, "truncated JSON (ends mid-document)") from None
            raise TraceError(path, f"invalid JSON ({what.strip()})") from None
        except ijson.JSONError as e:
            raise TraceError(path, f"invalid JSON ({str(e).splitlines()[0]})") from None


def read_kineto(doc: ChromeDoc, path: str) -> list[Timeline]:
    return read_kineto_events(doc.events, doc.top, path)


def read_kineto_events(events: Iterable[Any], top: dict[str, Any], path: str
                       ) -> list[Timeline]:
    tl = Timeline(meta=_metadata(top, path))
    dev: dict[tuple[str, Kind], tuple[list[float], list[float]]] = {}
    kernels: dict[str, int] = {}
    step_idx: list[int] = []
    step_s: list[float] = []
    step_e: list[float] = []
    in_s: list[float] = []
    in_e: list[float] = []
    in_n: list[str] = []
    launches = 0
    kernel_kind: dict[str, Kind] = {}  # kernel names repeat: classify each once
    try:
        for ev in events:
            if not isinstance(ev, dict):
                raise TraceError(path, f"trace event is a {type(ev).__name__}, expected an object")
            if ev.get("ph") != "X":
                continue
            cat = ev.get("cat")
            name = ev.get("name")
            if not isinstance(name, str):
                continue
            if cat in DEVICE_CATS:
                ts = float(ev["ts"])
                end = ts + float(ev.get("dur", 0.0))
                args = ev.get("args") or {}
                device = f"GPU {int(args.get('device', ev.get('pid', 0)))}"
                if cat in KERNEL_CATS:
                    kind = kernel_kind.get(name)
                    if kind is None:
                        kind = Kind.COLLECTIVE if COLLECTIVE_RE.search(name) else Kind.COMPUTE
                        kernel_kind[name] = kind
                    kernels[device] = kernels.get(device, 0) + 1
                elif cat in MEMCPY_CATS:
                    kind = memcpy_kind(name)
                else:
                    kind = Kind.COMPUTE
                lists = dev.get((device, kind))
                if lists is None:
                    lists = dev[(device, kind)] = ([], [])
                lists[0].append(ts)
                lists[1].append(end)
            elif cat in RUNTIME_CATS:
                if "Launch" in name:
                    launches += 1
            elif name.startswith("ProfilerStep#"):
                if cat == "gpu_user_annotation":
                    continue  # the device-side mirror of the CPU annotation
                m = STEP_RE.match(name)
                if m:
                    ts = float(ev["ts"])
                    step_idx.append(int(m.group(1)))
                    step_s.append(ts)
                    step_e.append(ts + float(ev.get("dur", 0.0)))
            elif name.startswith(DATALOADER_PREFIX):
                ts = float(ev["ts"])
                in_s.append(ts)
                in_e.append(ts + float(ev.get("dur", 0.0)))
                in_n.append(name)
    except (KeyError, TypeError, ValueError) as e:
        raise TraceError(path, f"malformed Kineto event ({type(e).__name__}: {e})") from None
    if step_idx:
        tl.add_steps(step_idx, step_s, step_e)
    for device in sorted({d for d, _ in dev}, key=_device_order):
        for kind in Kind:
            if (device, kind) in dev:
                s, e = dev[(device, kind)]
                tl.add_activity(device, kind, s, e)
    tl.kernel_counts.update(kernels)
    if in_s:
        tl.add_input_wait(in_s, in_e, in_n)
    if any("_SingleProcessDataLoaderIter" in n for n in in_n):
        tl.pipeline["dataloader_workers"] = 0
    elif any("_MultiProcessingDataLoaderIter" in n for n in in_n):
        tl.pipeline["dataloader_workers"] = "several"
    tl.meta.extra["kernel_launches"] = launches
    if not dev:
        tl.meta.limitations.append(
            "no GPU events in this trace (CPU-only run, or the profiler did not record CUDA "
            "activity): device time cannot be measured"
        )
    if not step_idx:
        tl.meta.limitations.append(
            "no ProfilerStep#N markers: use torch.profiler.profile(schedule=...) with "
            "prof.step() so steps are recorded"
        )
    return [tl.freeze()]


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
        names = {str(p.get("name", "")) for p in props if isinstance(p, dict)}
        meta.device_type = ", ".join(sorted(n for n in names if n)) or "GPU"
    return meta
