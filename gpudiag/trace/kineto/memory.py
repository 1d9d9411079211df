"""Kineto's ``[memory]`` events -> allocator counters (``mem_in_use``, ``mem_reserved``,
``mem_peak``) per GPU.

With ``profile_memory=True`` the PyTorch profiler writes one instant event per allocation
and free, each carrying the caching allocator's totals after it (``Total Allocated``,
``Total Reserved``, bytes) and the device (``Device Type`` 1 = CUDA or HIP, ``Device Id``).
A window holds tens of thousands of them: the series is thinned as it grows (every other
point dropped), the true peak is kept apart.

    mem = MemoryEvents()
    mem.add(ev)                # each "[memory]" event
    mem.apply(tl)              # counters on the timeline
"""

from __future__ import annotations

from typing import Any

from gpudiag.trace.model.timeline import Timeline

NAME = "[memory]"
MAX_POINTS = 4096  # per device and series: the shape of a window's allocations
MAX_DEVICES = 64
CUDA = 1  # c10 DeviceType: 0 CPU, 1 CUDA (ROCm builds report HIP devices as CUDA)
_MIB = float(1 << 20)


class _Series:
    __slots__ = ("peak", "peak_ts", "points", "seen", "stride")

    def __init__(self) -> None:
        self.points: list[tuple[float, float, float]] = []  # ts, allocated, reserved
        self.stride = 1
        self.seen = 0
        self.peak = -1.0
        self.peak_ts = 0.0

    def add(self, ts: float, allocated: float, reserved: float) -> None:
        if allocated > self.peak:
            self.peak, self.peak_ts = allocated, ts
        self.seen += 1
        if self.seen % self.stride:
            return
        self.points.append((ts, allocated, reserved))
        if len(self.points) >= MAX_POINTS:
            self.points = self.points[::2]
            self.stride *= 2


class MemoryEvents:
    def __init__(self) -> None:
        self.devices: dict[int, _Series] = {}

    def add(self, ev: dict[str, Any]) -> None:
        args = ev.get("args")
        if not isinstance(args, dict) or args.get("Device Type") != CUDA:
            return
        dev, ts = _num(args.get("Device Id")), _num(ev.get("ts"))
        allocated = _num(args.get("Total Allocated"))
        if dev is None or ts is None or allocated is None or dev < 0:
            return
        reserved = _num(args.get("Total Reserved"))
        series = self.devices.get(int(dev))
        if series is None:
            if len(self.devices) >= MAX_DEVICES:
                return
            series = self.devices[int(dev)] = _Series()
        series.add(ts, allocated, float("nan") if reserved is None else reserved)

    def apply(self, tl: Timeline) -> None:
        for dev, s in sorted(self.devices.items()):
            if not s.points:
                continue
            source = f"GPU {dev}"
            ts = [p[0] for p in s.points]
            tl.add_counter("mem_in_use", source, ts, [p[1] / _MIB for p in s.points])
            kept = [p for p in s.points if p[2] == p[2]]  # NaN: not in the event
            if kept:
                tl.add_counter(
                    "mem_reserved", source, [p[0] for p in kept], [p[2] / _MIB for p in kept]
                )
            tl.add_counter("mem_peak", source, [s.peak_ts], [s.peak / _MIB])


def _num(x: object) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x)
