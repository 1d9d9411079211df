"""Host CPU and memory through psutil: is the input pipeline short of CPU?

``HostMonitor.read()`` returns the CPU use since the previous read (the first read covers the
time since construction), so one monitor read at 1 Hz gives 1 s averages. It keeps its own
per-core CPU-time baseline instead of ``psutil.cpu_percent(interval=None)``, whose baseline is
module-global: two readers in one process (the Keras callback and a live monitor) would
otherwise shorten each other's intervals.

Example::

    from gpudiag.record.host import HostMonitor

    host = HostMonitor()
    time.sleep(1.0)
    snap = host.read()
    print(snap.cpu_total, snap.cpu_max_core, snap.cpu_process, snap.cpu_others, snap.iowait)

``cpu_process`` counts this process and its worker children (PyDataset / DataLoader workers
are the job's CPU too); ``cpu_others`` is what every other process on the host used, so a
neighbour saturating the CPU is told apart from the run's own load. ``available_cores()`` is
what this process may use (CPU affinity and cgroup quota), not what the host has.

A single saturated core (``cpu_max_core`` near 100 while ``cpu_total`` is low) is the shape
of a sequential ``map`` or a Python generator feeding the GPUs.
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

__all__ = ["HostMonitor", "HostSnapshot", "available_cores"]


def _cgroup_quota() -> float | None:
    """CPU quota of this cgroup in cores (v2 cpu.max, v1 cfs files); None when unlimited."""
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as f:
            quota, period = f.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", encoding="ascii") as f:
            q = int(f.read())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us", encoding="ascii") as f:
            p = int(f.read())
        return None if q <= 0 else q / p
    except (OSError, ValueError):
        return None


def available_cores() -> int:
    """Cores this process may run on: its CPU affinity, capped by a cgroup quota."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_quota()
    if quota is not None:
        n = min(n, max(1, math.ceil(quota)))
    return max(1, n)


@dataclass
class HostSnapshot:
    """Host CPU/memory over the interval since the previous read. Percentages are 0–100,
    except ``cpu_process``, which is % of one core (a 4-thread process can read 400)."""

    ts_us: float  # wall clock of the read, µs
    interval_s: float
    per_core: list[float] = field(default_factory=list)
    cpu_total: float | None = None
    cpu_max_core: float | None = None
    cpu_process: float | None = None
    cpu_others: float | None = None  # % of all cores used by every other process
    iowait: float | None = None  # None where the platform has no iowait (macOS, Windows)
    mem_used_pct: float | None = None
    mem_used_gib: float | None = None
    mem_total_gib: float | None = None
    load_avg: tuple[float, float, float] | None = None  # None where the OS has none (Windows)

    @property
    def n_cores(self) -> int:
        return len(self.per_core)


class HostMonitor:
    """Reusable psutil reader: one process handle, one per-core baseline (thread-safe)."""

    def __init__(self, pid: int | None = None) -> None:
        self._lock = threading.Lock()
        self._proc: psutil.Process | None
        try:
            self._proc = psutil.Process(pid if pid is not None else os.getpid())
        except Exception:
            self._proc = None
        self._prev_proc = self._proc_time()
        self._prev = self._cpu_times()
        self._prev_t = time.monotonic()
        self.has_iowait = bool(self._prev) and hasattr(self._prev[0], "iowait")
        self.has_loadavg = hasattr(os, "getloadavg")

    @staticmethod
    def _cpu_times() -> list[Any]:
        try:
            return list(psutil.cpu_times(percpu=True))
        except Exception:
            return []

    def _proc_time(self) -> float | None:
        """CPU seconds of this process and its children: its own, its reaped children's
        (whole lives, added by the OS when they are waited for) and its live children's so
        far. A worker stays counted when it exits between two reads: its time moves from the
        live sum to the reaped one, including its last slice."""
        if self._proc is None:
            return None
        try:
            t = self._proc.cpu_times()
            total = float(t.user + t.system + t.children_user + t.children_system)
        except Exception:
            return None
        try:
            kids = self._proc.children(recursive=True)
        except Exception:
            kids = []
        for k in kids:
            try:
                ct = k.cpu_times()
                total += float(ct.user + ct.system)
            except Exception:
                continue
        return total

    def read(self) -> HostSnapshot:
        """CPU shares since the previous read, plus memory and load now."""
        with self._lock:
            now_t = time.monotonic()
            cur = self._cpu_times()
            proc = self._proc_time()
            interval = now_t - self._prev_t
            snap = HostSnapshot(ts_us=time.time() * 1e6, interval_s=interval)
            # A read inside the same clock tick as the previous one keeps the old baseline
            # (no interval is lost); a core-count change (hotplug) restarts it.
            if not cur or len(self._prev) != len(cur) or self._fill_cpu(snap, self._prev, cur):
                if proc is not None and self._prev_proc is not None and interval > 0:
                    snap.cpu_process = max(0.0, 100.0 * (proc - self._prev_proc) / interval)
                    if snap.cpu_total is not None and snap.per_core:
                        own = snap.cpu_process / len(snap.per_core)
                        snap.cpu_others = max(0.0, min(100.0, snap.cpu_total - own))
                self._prev, self._prev_proc, self._prev_t = cur, proc, now_t
        try:
            vm = psutil.virtual_memory()
            snap.mem_used_pct = float(vm.percent)
            snap.mem_used_gib = (vm.total - vm.available) / 2**30
            snap.mem_total_gib = vm.total / 2**30
        except Exception:
            pass
        if self.has_loadavg:
            try:
                la = os.getloadavg()
                snap.load_avg = (float(la[0]), float(la[1]), float(la[2]))
            except OSError:
                snap.load_avg = None
        return snap

    def _fill_cpu(self, snap: HostSnapshot, prev: list[Any], cur: list[Any]) -> bool:
        per_core: list[float] = []
        busy_sum = total_sum = iowait_sum = 0.0
        for a, b in zip(prev, cur, strict=True):
            total = max(0.0, _total(b) - _total(a))
            idle = max(0.0, b.idle - a.idle) + max(
                0.0, getattr(b, "iowait", 0.0) - getattr(a, "iowait", 0.0)
            )
            busy = max(0.0, total - idle)
            per_core.append(100.0 * busy / total if total > 0 else 0.0)
            busy_sum += busy
            total_sum += total
            if self.has_iowait:
                iowait_sum += max(0.0, b.iowait - a.iowait)
        if total_sum <= 0:
            return False
        snap.per_core = per_core
        snap.cpu_total = 100.0 * busy_sum / total_sum
        snap.cpu_max_core = max(per_core)
        snap.iowait = 100.0 * iowait_sum / total_sum if self.has_iowait else None
        return True


def _total(t: Any) -> float:
    # psutil's rule: on Linux guest time is already inside user/nice
    return float(sum(t)) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)
