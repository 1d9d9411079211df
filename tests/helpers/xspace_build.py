"""Small XSpace profiles built with gpudiag's schema messages, for the xplane tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpudiag.trace.tf.xspace.schema import XSpace

MS = 1_000_000_000  # picoseconds


class PlaneBuilder:
    """One plane: event and stat metadata made on first use, lines in order."""

    def __init__(self, space: Any, plane_id: int, name: str) -> None:
        self.plane = space.planes.add(id=plane_id, name=name)
        self.events: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def stat_id(self, name: str) -> int:
        if name not in self.stats:
            sid = self.stats[name] = len(self.stats) + 1
            self.plane.stat_metadata[sid].id = sid
            self.plane.stat_metadata[sid].name = name
        return self.stats[name]

    def event_id(self, name: str) -> int:
        if name not in self.events:
            eid = self.events[name] = len(self.events) + 1
            self.plane.event_metadata[eid].id = eid
            self.plane.event_metadata[eid].name = name
        return self.events[name]

    def line(self, line_id: int, name: str, timestamp_ns: int = 0) -> Any:
        return self.plane.lines.add(id=line_id, name=name, timestamp_ns=timestamp_ns)

    def event(self, line: Any, name: str, offset_ps: int, duration_ps: int, **stats: Any) -> Any:
        ev = line.events.add(
            metadata_id=self.event_id(name), offset_ps=offset_ps, duration_ps=duration_ps
        )
        for key, value in stats.items():
            stat = ev.stats.add(metadata_id=self.stat_id(key))
            if isinstance(value, str):
                stat.str_value = value
            else:
                stat.int64_value = value
        return ev


def training_profile(steps: int = 4, kernel_ps: int = 6 * MS, step_ps: int = 10 * MS) -> Any:
    """A grouped (TF 2.4-like) GPU profile: "train N" markers on the host, one kernel per
    step on a compute stream. Returns the XSpace and its GPU plane builder."""
    space = XSpace(hostnames=["host"])
    host = PlaneBuilder(space, 0, "/host:CPU")
    host.stat_id("group_id")  # the profiler grouped it: xprof converts it as it is
    python = host.line(1, "python3")
    gpu = PlaneBuilder(space, 0, "/device:GPU:0")
    stream = gpu.line(7, "Stream #7(Compute)")
    for i in range(steps):
        host.event(python, f"train {i}", i * step_ps, step_ps - MS)
        gpu.event(stream, "volta_sgemm_128x64_nn", i * step_ps + MS, kernel_ps, correlation_id=i)
    return space, gpu, stream


def write(space: Any, path: Path) -> str:
    path.write_bytes(space.SerializeToString())
    return str(path)
