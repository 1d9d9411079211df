"""What the live monitor knows: rolling counter history and the latest raw snapshots.

Sampler threads write, the UI thread reads, all under one lock::

    state = LiveState(interval=1.0)
    gpu = gpu_sampler(NvmlSession(), state.add_sample, observer=state.set_gpus)
    gpu.sample_once()
    values, bin_s = state.history("gpu_util", "GPU 0", cols=60)
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence

from gpudiag.record.host import HostSnapshot
from gpudiag.record.nvml import GpuSnapshot
from gpudiag.show.live.history import columns
from gpudiag.show.training import TrainingStatus

_SERIES_MAXLEN = 4096  # per counter: ~11 min of 1/6 s driver samples


class LiveState:
    """Rolling history per counter plus the latest raw snapshots; fed from sampler threads,
    read by ``render`` on the UI thread (all access under one lock)."""

    def __init__(self, interval: float = 1.0, bin_s: float = 0.5) -> None:
        self.interval = interval
        self.bin_s = bin_s  # finest history column; widened to the series' sample spacing
        self._lock = threading.Lock()
        self._series: dict[tuple[str, str], deque[tuple[float, float]]] = {}
        self._gpus: dict[str, GpuSnapshot] = {}
        self._host: HostSnapshot | None = None
        self.gpu_reason: str | None = None  # set when no GPU can be measured
        self.follow: str | None = None
        self.training: TrainingStatus | None = None
        self.errors: list[str] = []
        self.hostname = _hostname()

    # sink signature of gpudiag.record.samplers
    def add_sample(self, name: str, source: str, ts_us: float, value: float) -> None:
        key = (name, source)
        with self._lock:
            q = self._series.get(key)
            if q is None:
                q = self._series[key] = deque(maxlen=_SERIES_MAXLEN)
            if q and ts_us < q[-1][0]:  # keep sorted: drop out-of-order repeats
                return
            q.append((ts_us, value))

    def set_gpus(self, snaps: Sequence[GpuSnapshot]) -> None:
        with self._lock:
            for s in snaps:
                self._gpus[s.source] = s

    def set_host(self, snap: HostSnapshot) -> None:
        with self._lock:
            self._host = snap

    @property
    def gpus(self) -> list[GpuSnapshot]:
        with self._lock:
            return sorted(self._gpus.values(), key=lambda s: s.index)

    @property
    def host(self) -> HostSnapshot | None:
        with self._lock:
            return self._host

    def series(self, name: str, source: str) -> list[tuple[float, float]]:
        with self._lock:
            q = self._series.get((name, source))
            return list(q) if q else []

    def last_ts(self, name: str, sources: Sequence[str]) -> float | None:
        with self._lock:
            ends = [self._series[(name, s)][-1][0] for s in sources if self._series.get((name, s))]
        return max(ends) if ends else None

    def history(
        self, name: str, source: str, cols: int, end_us: float | None = None
    ) -> tuple[list[float | None], float]:
        """Mean per column over the last ``cols`` columns ending at ``end_us`` (default: the
        series' newest sample); returns (values, seconds per column). Empty columns: None."""
        return columns(self.series(name, source), cols, self.bin_s, end_us)


def _hostname() -> str:
    try:
        return os.uname().nodename
    except AttributeError:  # Windows
        import socket

        return socket.gethostname()
