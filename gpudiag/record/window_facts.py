"""What the callback's profiler windows measured beyond intervals, summed over the run.

Device kernel time, the layout-conversion kernels' part of it and each device's
host-to-device bytes come from the readers (``trace.facts``) in each window's
``meta.extra``; the trace header carries their running totals (a metadata update per
window, the last one standing), where the rules read them as for any foreign trace. The
GPUs the strategy trains on are given as NVML indices, the numbering the NVML counters use.

    acc = WindowFacts()
    acc.add(window_timeline)
    writer.update_meta(extra=acc.extra())
    RunConfig.train_gpus = nvml_indices(["/device:GPU:0"], os.environ.get("CUDA_VISIBLE_DEVICES"))
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from gpudiag.trace.model.timeline import Timeline

GPU_RE = re.compile(r"(?:GPU|cuda):(\d+)", re.IGNORECASE)


@dataclass
class WindowFacts:
    kernel_us: float = 0.0
    layout_transpose_us: float = 0.0
    h2d_bytes: dict[str, int] = field(default_factory=dict)
    optimizer_us: float = 0.0  # the optimizer's ops (record/op_scopes.py), where measured
    op_us: float = 0.0  # ... and every op of the same windows

    def add(self, tl: Timeline) -> None:
        extra = tl.meta.extra
        self.kernel_us += float(extra.get("kernel_us") or 0.0)
        self.optimizer_us += float(extra.get("optimizer_us") or 0.0)
        self.op_us += float(extra.get("op_us") or 0.0)
        self.layout_transpose_us += float(extra.get("layout_transpose_us") or 0.0)
        for device, n in (extra.get("h2d_bytes") or {}).items():
            self.h2d_bytes[device] = self.h2d_bytes.get(device, 0) + int(n)

    def extra(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.kernel_us > 0:
            out["kernel_us"] = round(self.kernel_us, 1)
            out["layout_transpose_us"] = round(self.layout_transpose_us, 1)
        if self.h2d_bytes:
            out["h2d_bytes"] = dict(sorted(self.h2d_bytes.items()))
        if self.op_us > 0:
            out["optimizer_us"] = round(self.optimizer_us, 1)
            out["op_us"] = round(self.op_us, 1)
        return out


def default_gpus(backend: str) -> list[str]:
    """Where a run without a strategy trains, by the backend's adapter (TensorFlow places
    ops on its first GPU)."""
    from gpudiag.record.backends import for_name

    return for_name(backend).default_devices()


def nvml_indices(devices: list[str], visible: str | None) -> str | None:
    """The framework's GPU devices ("/device:GPU:1") as NVML indices ("3" when
    CUDA_VISIBLE_DEVICES=2,3). None when there are none or the mapping is not known
    (UUIDs or MIG instances in CUDA_VISIBLE_DEVICES). CUDA numbers GPUs fastest first,
    NVML by PCI bus: the two agree on machines of one GPU model (ties go by bus id)."""
    ordinals = [int(m.group(1)) for d in devices if (m := GPU_RE.search(d))]
    if not ordinals:
        return None
    if visible is not None:
        parts = [p.strip() for p in visible.split(",") if p.strip()]
        if not all(p.isdigit() for p in parts) or max(ordinals) >= len(parts):
            return None
        ordinals = [int(parts[o]) for o in ordinals]
    return ",".join(str(o) for o in sorted(set(ordinals)))


def visible_gpu_indices() -> list[int] | None:
    """The GPUs this process may use (CUDA_VISIBLE_DEVICES as integers), for NVML, which
    ignores the variable; None means all. UUID lists are not mapped: all GPUs are sampled."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]
