"""A stand-in for the ``pynvml`` module that replays recorded NVML readings.

It implements the subset of the pynvml API that ``NvmlSession`` uses, with the same return
shapes, units and error codes, so tests, demos and the cost benchmark exercise the real
session code on a machine with no GPU.

Example::

    from gpudiag.record.nvml import NvmlSession
    from gpudiag.record.nvml_replay import ReplayNvml

    fake = ReplayNvml.from_file("tests/data/nvml_h100_bursty.json")  # manual clock
    nv = NvmlSession(lib=fake)
    fake.advance(3.0)  # three seconds of recorded activity become readable
    print(nv.read()[0].util_samples)

    ReplayNvml.from_file(path, realtime=True)  # follows the wall clock (``gpudiag live`` demo)
    ReplayNvml.unavailable()  # nvmlInit fails with NVML_ERROR_LIBRARY_NOT_FOUND

Fixture format (JSON): ``driver_version``, ``duration_s`` and ``devices``, each with ``name``,
``memory_total_mib``, ``power_limit_w``, ``processes`` ([{pid, name, used_mib}]),
``util_samples_ms`` ([[ms from start, %], ...], the driver's buffered samples) and ``reads``
([{t_s, mem_used_mib, pcie_rx_kbs, pcie_tx_kbs, power_mw, clock_sm_mhz, temperature_c,
gpm}]) and optionally ``memory_reserved_mib`` (what NVML's v2 memory query leaves out of
``used``), where the optional ``gpm`` maps ``record/gpm.py`` metric names to the % NVML's GPM
gave over the interval ending at ``t_s``; a device with no ``gpm`` in any read answers as a
GPU without GPM (before Hopper). Playback loops over ``duration_s``.
"""

from __future__ import annotations

import bisect
import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpudiag.record.nvml_mirror import (
    GpmMetricsGet,
    GpmSample,
    Handle,
    NVMLError,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
    NVMLError_NotFound,
    NVMLError_NotSupported,
    NVMLError_Uninitialized,
    error_for,
)

__all__ = ["ReplayNvml"]


class ReplayNvml:
    """pynvml look-alike over a recorded fixture; see the module docstring.

    ``realtime``: playback follows ``time.monotonic()`` (times ``speed``); otherwise time
    moves only with ``advance()``. ``not_supported``: pynvml function names that raise
    NotSupported; ``fail``: function name -> NVML error code to raise (e.g. 15, GPU lost);
    ``init_error``: code ``nvmlInit`` raises. ``calls`` counts every API call by name.
    """

    NVML_SUCCESS = 0
    NVML_ERROR_UNINITIALIZED = 1
    NVML_ERROR_INVALID_ARGUMENT = 2
    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_ERROR_NO_PERMISSION = 4
    NVML_ERROR_NOT_FOUND = 6
    NVML_ERROR_DRIVER_NOT_LOADED = 9
    NVML_ERROR_LIBRARY_NOT_FOUND = 12
    NVML_ERROR_FUNCTION_NOT_FOUND = 13
    NVML_ERROR_GPU_IS_LOST = 15
    NVML_ERROR_UNKNOWN = 999
    NVML_GPU_UTILIZATION_SAMPLES = 1
    NVML_PCIE_UTIL_TX_BYTES = 0
    NVML_PCIE_UTIL_RX_BYTES = 1
    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0
    NVML_VALUE_TYPE_UNSIGNED_INT = 1
    nvmlMemory_v2 = 0x02000028

    c_nvmlGpmMetricsGet_t = GpmMetricsGet

    NVMLError = NVMLError
    NVMLError_Uninitialized = NVMLError_Uninitialized
    NVMLError_NotSupported = NVMLError_NotSupported
    NVMLError_NotFound = NVMLError_NotFound
    NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded

    # the driver keeps a ring of recent samples; a first call with last_ts=0 gets at most this
    BUFFER_SAMPLES = 120

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        *,
        realtime: bool = False,
        speed: float = 1.0,
        not_supported: Iterable[str] = (),
        fail: Mapping[str, int] | None = None,
        init_error: int | None = None,
    ) -> None:
        self.data: Mapping[str, Any] = data or {"devices": [], "duration_s": 1.0}
        self.realtime = realtime
        self.speed = speed
        self.not_supported = set(not_supported)
        self.fail = dict(fail or {})
        self.init_error = init_error
        self.calls: Counter[str] = Counter()
        self._init_count = 0
        self._t = 0.0
        self._t0 = time.monotonic()
        self._base_us = int(time.time() * 1e6)  # driver timestamps are wall-clock µs
        self._duration_us = float(self.data.get("duration_s", 1.0)) * 1e6
        self._devices: list[Mapping[str, Any]] = list(self.data.get("devices", []))
        self._util_t = [
            [float(t) * 1000.0 for t, _ in d.get("util_samples_ms", [])] for d in self._devices
        ]
        self._util_v = [[int(v) for _, v in d.get("util_samples_ms", [])] for d in self._devices]
        self._read_t = [[float(r["t_s"]) for r in d.get("reads", [])] for d in self._devices]

    # ---- construction helpers --------------------------------------------------------------
    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ReplayNvml:
        return cls(json.loads(Path(path).read_text()), **kwargs)

    @classmethod
    def unavailable(cls, code: int = 12) -> ReplayNvml:
        """A library whose ``nvmlInit`` fails (default: driver library not found)."""
        return cls(None, init_error=code)

    # ---- playback clock --------------------------------------------------------------------
    def advance(self, seconds: float) -> None:
        """Move the manual clock forward (ignored in realtime mode)."""
        self._t += seconds

    @property
    def elapsed_us(self) -> float:
        if self.realtime:
            return (time.monotonic() - self._t0) * self.speed * 1e6
        return self._t * 1e6

    def _enter(self, name: str) -> None:
        self.calls[name] += 1
        if name != "nvmlInit" and self._init_count <= 0:
            raise error_for(self.NVML_ERROR_UNINITIALIZED)
        if name in self.not_supported:
            raise error_for(self.NVML_ERROR_NOT_SUPPORTED)
        if name in self.fail:
            raise error_for(self.fail[name])

    def _device(self, handle: Handle) -> Mapping[str, Any]:
        return self._devices[handle.index]

    def _read(self, handle: Handle) -> Mapping[str, Any]:
        """The recorded 'read' row in effect now (playback loops)."""
        times = self._read_t[handle.index]
        rows = self._device(handle).get("reads", [])
        if not rows:
            return {}
        t = (self.elapsed_us % self._duration_us) / 1e6
        return rows[max(0, bisect.bisect_right(times, t) - 1)]

    # ---- pynvml API subset -----------------------------------------------------------------
    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self.init_error is not None:
            raise error_for(self.init_error)
        self._init_count += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        self._init_count -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return str(self.data.get("driver_version", "0.0"))

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return len(self._devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> Handle:
        self._enter("nvmlDeviceGetHandleByIndex")
        if not 0 <= index < len(self._devices):
            raise error_for(self.NVML_ERROR_INVALID_ARGUMENT)
        return Handle(index)

    def nvmlDeviceGetName(self, handle: Handle) -> str:
        self._enter("nvmlDeviceGetName")
        return str(self._device(handle).get("name", "NVIDIA GPU"))

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Handle) -> int:
        self._enter("nvmlDeviceGetEnforcedPowerLimit")
        limit = self._device(handle).get("power_limit_w")
        if limit is None:
            raise error_for(self.NVML_ERROR_NOT_SUPPORTED)
        return int(float(limit) * 1000)

    def nvmlDeviceGetSamples(
        self, handle: Handle, sampling_type: int, last_ts: int
    ) -> tuple[int, list[Any]]:
        self._enter("nvmlDeviceGetSamples")
        if sampling_type != self.NVML_GPU_UTILIZATION_SAMPLES:
            raise error_for(self.NVML_ERROR_NOT_SUPPORTED)
        ts_rel, vals = self._util_t[handle.index], self._util_v[handle.index]
        now = self.elapsed_us
        lo = max(0.0, float(last_ts) - self._base_us)  # relative µs already seen
        out: list[Any] = []
        if ts_rel:
            first_loop = int(lo // self._duration_us)
            last_loop = int(now // self._duration_us)
            for k in range(first_loop, last_loop + 1):
                off = k * self._duration_us
                for t, v in zip(ts_rel, vals, strict=True):
                    abs_rel = t + off
                    if abs_rel > now:
                        break
                    ts = self._base_us + int(abs_rel)
                    if ts > last_ts:
                        out.append(
                            SimpleNamespace(timeStamp=ts, sampleValue=SimpleNamespace(uiVal=v))
                        )
        out = out[-self.BUFFER_SAMPLES :]
        if not out:
            raise error_for(self.NVML_ERROR_NOT_FOUND)  # what the driver says: nothing newer
        return self.NVML_VALUE_TYPE_UNSIGNED_INT, out

    def nvmlDeviceGetUtilizationRates(self, handle: Handle) -> Any:
        self._enter("nvmlDeviceGetUtilizationRates")
        ts_rel, vals = self._util_t[handle.index], self._util_v[handle.index]
        if not ts_rel:
            return SimpleNamespace(gpu=0, memory=0)
        now = self.elapsed_us % self._duration_us
        i = max(0, bisect.bisect_right(ts_rel, now) - 1)
        window = vals[max(0, i - 5) : i + 1]  # ~1 s average, as the driver does
        return SimpleNamespace(gpu=round(sum(window) / len(window)), memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: Handle, version: int | None = None) -> Any:
        """v1 (``mem_used_mib`` as recorded, the driver's reserve included) or, with
        ``version=nvmlMemory_v2``, used without the device's ``memory_reserved_mib``."""
        self._enter("nvmlDeviceGetMemoryInfo")
        mib = 1024 * 1024
        total = int(self._device(handle).get("memory_total_mib", 0)) * mib
        used = int(self._read(handle).get("mem_used_mib", 0)) * mib
        if not version:
            return SimpleNamespace(total=total, used=used, free=total - used)
        reserved = int(self._device(handle).get("memory_reserved_mib", 0)) * mib
        used = max(0, used - reserved)
        return SimpleNamespace(
            total=total, reserved=reserved, used=used, free=total - used - reserved
        )

    def nvmlDeviceGetPcieThroughput(self, handle: Handle, counter: int) -> int:
        self._enter("nvmlDeviceGetPcieThroughput")
        key = "pcie_rx_kbs" if counter == self.NVML_PCIE_UTIL_RX_BYTES else "pcie_tx_kbs"
        return int(self._read(handle).get(key, 0))

    def nvmlDeviceGetPowerUsage(self, handle: Handle) -> int:
        self._enter("nvmlDeviceGetPowerUsage")
        return int(self._read(handle).get("power_mw", 0))

    def nvmlDeviceGetClockInfo(self, handle: Handle, clock_type: int) -> int:
        self._enter("nvmlDeviceGetClockInfo")
        if clock_type != self.NVML_CLOCK_SM:
            raise error_for(self.NVML_ERROR_NOT_SUPPORTED)
        return int(self._read(handle).get("clock_sm_mhz", 0))

    def nvmlDeviceGetTemperature(self, handle: Handle, sensor: int) -> int:
        self._enter("nvmlDeviceGetTemperature")
        return int(self._read(handle).get("temperature_c", 0))

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Handle) -> list[Any]:
        self._enter("nvmlDeviceGetComputeRunningProcesses")
        return [
            SimpleNamespace(pid=int(p["pid"]), usedGpuMemory=int(p["used_mib"]) * 1024 * 1024)
            for p in self._device(handle).get("processes", [])
        ]

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Handle) -> list[Any]:
        self._enter("nvmlDeviceGetGraphicsRunningProcesses")
        return []

    # ---- GPM (GPU Performance Monitoring) ----------------------------------------------------
    def _gpm_rows(self, handle: Handle) -> bool:
        return any("gpm" in r for r in self._device(handle).get("reads", []))

    def nvmlGpmQueryDeviceSupport(self, handle: Handle) -> Any:
        self._enter("nvmlGpmQueryDeviceSupport")
        return SimpleNamespace(version=1, isSupportedDevice=int(self._gpm_rows(handle)))

    def nvmlGpmSampleAlloc(self) -> GpmSample:
        self._enter("nvmlGpmSampleAlloc")
        return GpmSample()

    def nvmlGpmSampleFree(self, sample: GpmSample) -> None:
        self._enter("nvmlGpmSampleFree")

    def nvmlGpmSampleGet(self, handle: Handle, sample: GpmSample) -> GpmSample:
        self._enter("nvmlGpmSampleGet")
        if not self._gpm_rows(handle):
            raise error_for(self.NVML_ERROR_NOT_SUPPORTED)
        sample.index, sample.t_us = handle.index, self.elapsed_us
        return sample

    def nvmlGpmMetricsGet(self, request: GpmMetricsGet) -> GpmMetricsGet:
        """The recorded read in effect at ``sample2`` gives each metric (the fixture keeps
        one value per interval, as NVML computes it between two samples)."""
        from gpudiag.record.gpm import METRICS

        self._enter("nvmlGpmMetricsGet")
        if request.sample1 is None or request.sample2 is None or request.sample2.t_us is None:
            raise error_for(self.NVML_ERROR_INVALID_ARGUMENT)
        names = {v: k for k, v in METRICS.items()}
        row = self._read(Handle(request.sample2.index)).get("gpm", {})
        for metric in request.metrics[: request.numMetrics]:
            value = row.get(names.get(int(metric.metricId), ""))
            metric.nvmlReturn = 0 if value is not None else self.NVML_ERROR_NOT_SUPPORTED
            metric.value = float(value) if value is not None else 0.0
        return request

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        self._enter("nvmlSystemGetProcessName")
        for d in self._devices:
            for p in d.get("processes", []):
                if int(p["pid"]) == pid:
                    return str(p.get("name", "?"))
        raise error_for(self.NVML_ERROR_NOT_FOUND)
