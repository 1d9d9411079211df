"""The memory profile in an XSpace -> allocator counters per GPU.

With a GPU, TensorFlow's and JAX's profilers record every allocation and free of their BFC
allocators on the host plane (``MemoryAllocation`` / ``MemoryDeallocation`` events; xprof's
``memory_profile`` tool reads them and its trace viewer leaves them out). Each carries the
allocator's state after it: ``allocator_name`` (``GPU_4_bfc``; ``gpu_host_bfc`` is pinned
host memory), ``bytes_allocated``, ``bytes_available`` (to its limit) and
``peak_bytes_in_use``. Per GPU allocator this keeps the peak and the limit, as
``mem_peak`` / ``mem_limit`` counters on the timeline that trains on that GPU.

    apply_memory(timelines, memory_profile(space, path))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.tf.xspace.args import stat_text
from gpudiag.trace.tf.xspace.events import HOST_PLANE, parse_line

EVENTS = frozenset({"MemoryAllocation", "MemoryDeallocation"})
_GPU_ALLOCATOR = re.compile(r"^GPU_(\d+)_bfc$")
_MIB = float(1 << 20)
PS_PER_US = 1_000_000


@dataclass
class AllocatorPeak:
    source: str  # "GPU 4"
    peak: float  # bytes
    limit: float | None  # bytes: allocated + still available
    ts_us: float  # the event that reached the peak


def memory_profile(space: Any, path: str) -> list[AllocatorPeak]:
    """The peak and limit of every GPU allocator the host plane's memory events name."""
    host = next((p for p in space.planes if p.name == HOST_PLANE), None)
    if host is None:
        return []
    ids = {k for k, md in host.event_metadata.items() if md.name in EVENTS}
    if not ids:
        return []
    stat_names = {k: md.name for k, md in host.stat_metadata.items()}
    found: dict[str, AllocatorPeak] = {}
    for raw in host.lines:
        line = parse_line(raw, path)
        base_ps = line.timestamp_ns * 1000
        for ev in line.events:
            if ev.metadata_id not in ids:
                continue
            st = {stat_names.get(s.metadata_id, ""): s for s in ev.stats}
            name = _text(st.get("allocator_name"), stat_names)
            m = _GPU_ALLOCATOR.match(name or "")
            peak = _number(st.get("peak_bytes_in_use"), stat_names)
            if m is None or peak is None:
                continue
            source = f"GPU {m.group(1)}"
            allocated = _number(st.get("bytes_allocated"), stat_names)
            available = _number(st.get("bytes_available"), stat_names)
            limit = allocated + available if allocated is not None and available else None
            old = found.get(source)
            if old is None or peak > old.peak:
                ts = (base_ps + ev.offset_ps) / PS_PER_US
                kept = limit or (old.limit if old is not None else None)
                found[source] = AllocatorPeak(source, peak, kept, ts)
            elif old.limit is None and limit:
                old.limit = limit
    return list(found.values())


def apply_memory(timelines: list[Timeline], peaks: list[AllocatorPeak]) -> None:
    """Each allocator's peak on the timeline that trains on its GPU (else the first)."""
    if not timelines:
        return
    for p in peaks:
        tl = next((t for t in timelines if p.source in t.meta.devices), timelines[0])
        tl.add_counter("mem_peak", p.source, [p.ts_us], [p.peak / _MIB])
        if p.limit:
            tl.add_counter("mem_limit", p.source, [p.ts_us], [p.limit / _MIB])


def _text(stat: Any, names: dict[int, str]) -> str | None:
    return stat_text(stat, names) if stat is not None else None


def _number(stat: Any, names: dict[int, str]) -> float | None:
    text = _text(stat, names)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
