"""Small ``.xplane.pb`` profiles of the shapes real Keras GPU profiles have (TF 2.3-2.5,
TensorBoard ``profile_batch``), built with the XSpace protobuf messages: a device ``Steps``
line, GPU work running on after the host's ``train_function`` returned, input waits as
``IteratorGetNext/_N:_Send`` hand-offs, ``ApplyAdam`` kernels, device-plane stats with the
compute capability, tf.data stage events, and steps mostly untraced.

    path = Profile(cc=(7, 5), sms=40).train_step(...).write(tmp_path / "p.xplane.pb")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpudiag.trace.tf.xspace.schema import XSpace

MS = 1_000_000_000  # picoseconds per millisecond


class _Plane:
    def __init__(self, plane: Any) -> None:
        self.plane = plane
        self.events: dict[str, int] = {}
        self.stats: dict[str, int] = {}
        self.lines: dict[str, Any] = {}

    def stat_id(self, name: str) -> int:
        if name not in self.stats:
            self.stats[name] = len(self.stats) + 1
            self.plane.stat_metadata[self.stats[name]].name = name
            self.plane.stat_metadata[self.stats[name]].id = self.stats[name]
        return self.stats[name]

    def event(self, line: str, name: str, start_ms: float, dur_ms: float, **stats: Any) -> None:
        if name not in self.events:
            self.events[name] = len(self.events) + 1
            meta = self.plane.event_metadata[self.events[name]]
            meta.id = self.events[name]
            meta.name = name
            # a TF op "scope/name:Type" shows as its type; "Iterator::Map" keeps its name
            op = ":" in name and "::" not in name
            meta.display_name = name.rpartition(":")[2] if op else name
        if line not in self.lines:
            self.lines[line] = self.plane.lines.add(
                id=len(self.lines) + 1, name=line, timestamp_ns=0
            )
        ev = self.lines[line].events.add(
            metadata_id=self.events[name],
            offset_ps=int(start_ms * MS),
            duration_ps=int(dur_ms * MS),
        )
        for key, value in stats.items():
            st = ev.stats.add(metadata_id=self.stat_id(key))
            if isinstance(value, int):
                st.int64_value = value
            else:
                st.str_value = str(value)


class Profile:
    """One host plane and one GPU plane."""

    def __init__(self, cc: tuple[int, int] | None = (7, 0), sms: int = 80) -> None:
        self.space = XSpace()
        self.host = _Plane(self.space.planes.add(id=1, name="/host:CPU"))
        self.gpu = _Plane(self.space.planes.add(id=2, name="/device:GPU:0"))
        if cc is not None:
            for key, value in (
                ("compute_cap_major", cc[0]),
                ("compute_cap_minor", cc[1]),
                ("core_count", sms),
                ("clock_rate", 1_530_000),
                ("memory_bandwidth", 898_048_000_000),
            ):
                self.gpu.plane.stats.add(metadata_id=self.gpu.stat_id(key), int64_value=value)

    def host_event(self, line: str, name: str, start: float, dur: float, **stats: Any) -> Profile:
        self.host.event(line, name, start, dur, **stats)
        return self

    def kernels(
        self, start: float, end: float, n: int, name: str = "volta_sgemm_128x64_nn", **stats: Any
    ) -> Profile:
        """``n`` kernels back to back filling [start, end) ms on the compute stream."""
        width = (end - start) / n
        for i in range(n):
            self.gpu.event(
                "Stream #13(Compute)", name, start + i * width, width * 0.98, group_id=0, **stats
            )
        return self

    def copy(self, start: float, dur: float) -> Profile:
        self.gpu.event("Stream #14(MemcpyH2D)", "MemcpyH2D", start, dur, group_id=0)
        return self

    def device_step(self, start: float, end: float, number: int = 0) -> Profile:
        self.gpu.event("Steps", str(number), start, end - start, group_id=number)
        return self

    def write(self, path: Path) -> str:
        path.write_bytes(self.space.SerializeToString())
        return str(path)


def async_tail(cc: tuple[int, int] | None = (7, 0), sms: int = 80) -> Profile:
    """A training step of 200 ms on the device whose train_function returns after 90 ms:
    a 10 ms copy, then kernels (the last ones ApplyAdam) until 200 ms."""
    p = Profile(cc, sms)
    p.host_event("python3", "train_function", 0.0, 90.0)
    p.copy(2.0, 10.0)
    p.kernels(12.0, 190.0, 100)
    p.kernels(190.0, 200.0, 10, name="void tensorflow::functor::ApplyAdamKernel<float>(int)")
    return p.device_step(2.0, 200.0)
