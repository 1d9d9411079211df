"""The GPU a TensorFlow profile ran on, read from its device planes' stats.

Each ``/device:GPU:N`` plane of an ``.xplane.pb`` carries the device's capabilities as plane
stats (TensorFlow's ``tsl/profiler/utils/xplane_schema``): ``compute_cap_major`` /
``compute_cap_minor``, ``core_count`` (SMs), ``clock_rate`` (kHz), ``memory_bandwidth``
(bytes/s) and ``memory_size`` (bytes). The trace-viewer events carry no plane stats, so they
are read here from the XSpace the reader decoded (``reader.py``). Precision and Tensor Core
advice is chosen by the compute capability (``analyze/tensor_cores.py``).

The model is not a stat: it is named from (capability, SM count) where one well-known
product has that pair, else left out ("compute capability 7.5, 40 SMs" says enough).

    gpu = gpu_facts(space)           # {"compute_capability": "7.0", "sms": 80, ...} or None
    apply_gpu_facts(timelines, gpu)  # RunConfig.gpu_model / compute_capability
"""

from __future__ import annotations

import re
from typing import Any

from gpudiag.trace.model.timeline import Timeline

GPU_PLANE_RE = re.compile(r"^/device:GPU:\d+$")
# (major, minor, SMs) -> the product with that combination (NVIDIA's specifications)
KNOWN_GPUS: dict[tuple[int, int, int], str] = {
    (6, 0, 56): "Tesla P100",
    (6, 1, 20): "GeForce GTX 1080",
    (6, 1, 28): "GeForce GTX 1080 Ti",
    (7, 0, 80): "Tesla V100",
    (7, 5, 40): "Tesla T4",
    (7, 5, 30): "GeForce RTX 2060",
    (7, 5, 46): "GeForce RTX 2080",
    (7, 5, 68): "GeForce RTX 2080 Ti",
    (8, 0, 108): "A100",
    (8, 6, 84): "A40 / GeForce RTX 3090",
    (8, 6, 82): "GeForce RTX 3090",
    (8, 9, 142): "L40S",
    (8, 9, 58): "L4",
    (8, 9, 128): "GeForce RTX 4090",
    (9, 0, 132): "H100 SXM",
    (9, 0, 114): "H100 PCIe",
}


def _stat_value(stat: Any, names: dict[int, str]) -> Any:
    kind = stat.WhichOneof("value")
    if kind is None:
        return None
    value = getattr(stat, kind)
    return names.get(value) if kind == "ref_value" else value


def plane_stats(plane: Any) -> dict[str, Any]:
    """A plane's own stats by name."""
    names = {k: v.name for k, v in plane.stat_metadata.items()}
    return {names.get(s.metadata_id, ""): _stat_value(s, names) for s in plane.stats}


MAX_MAJOR = 99  # compute capabilities run 1.0 to 12.x; the minor is one digit (8.6, 8.9)


def gpu_of(stats: dict[str, Any]) -> dict[str, Any] | None:
    """The facts of one GPU plane's stats; None without a compute capability (a stat out
    of range, such as a minor of -1, is no capability: the profile is read without it)."""
    major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
    if not isinstance(major, int) or not isinstance(minor, int):
        return None
    if not (0 < major <= MAX_MAJOR and 0 <= minor <= 9):
        return None
    out: dict[str, Any] = {"compute_capability": f"{major}.{minor}"}
    sms = stats.get("core_count")
    if isinstance(sms, int) and sms > 0:
        out["sms"] = sms
        model = KNOWN_GPUS.get((major, minor, sms))
        if model:
            out["model"] = model
    clock = stats.get("clock_rate")
    if isinstance(clock, int | float) and clock > 0:
        out["clock_mhz"] = round(clock / 1000.0)
    bandwidth = stats.get("memory_bandwidth")
    if isinstance(bandwidth, int | float) and bandwidth > 0:
        out["memory_bandwidth_gbs"] = round(bandwidth / 1e9)
    memory = stats.get("memory_size")
    if isinstance(memory, int | float) and memory > 0:
        out["memory_gib"] = round(memory / 2**30, 1)
    return out


def gpu_facts(space: Any) -> dict[str, Any] | None:
    """The first GPU plane's facts (the GPUs of one profile are alike), else None. ``space``
    is a decoded XSpace (``XSpace``, or ``XSpaceLines`` with its lines left serialized)."""
    for plane in sorted(space.planes, key=lambda p: p.name):
        if GPU_PLANE_RE.match(plane.name):
            facts = gpu_of(plane_stats(plane))
            if facts is not None:
                return facts
    return None


def gpu_facts_of_file(path: str) -> dict[str, Any] | None:
    """``gpu_facts`` of a file decoded for its metadata only (lines left serialized): for
    readers that do not decode the XSpace themselves (xprof's conversion). None when the
    file does not decode (its reader reports the problem)."""
    from gpudiag.trace.tf.xspace.schema import XSpaceLines

    space = XSpaceLines()
    try:
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
    except Exception:  # OSError, protobuf's DecodeError: the reader says what is wrong
        return None
    return gpu_facts(space)


def apply_gpu_facts(timelines: list[Timeline], gpu: dict[str, Any] | None) -> None:
    """Keep the GPU in each timeline's RunConfig (what the advice is chosen by) and meta."""
    if not gpu:
        return
    for tl in timelines:
        tl.meta.extra["gpu"] = dict(gpu)
        tl.meta.config.update(
            {"compute_capability": float(gpu["compute_capability"]), "gpu_model": gpu.get("model")}
        )
