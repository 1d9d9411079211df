"""NVIDIA GPU state through NVML (``nvidia-ml-py``, module ``pynvml``), without TensorFlow.

One ``NvmlSession`` per process: it calls ``nvmlInit`` once, counts GPUs through NVML, opens
each device handle once and then only reads. Utilisation comes from the driver's buffered
samples (``nvmlDeviceGetSamples``), which are finer than the 1/6–1 s averaging window of
``nvmlDeviceGetUtilizationRates`` and so show the idle gaps between bursts of work.

Example::

    from gpudiag.record.nvml import NvmlSession

    with NvmlSession() as nv:
        if not nv.available:
            print(nv.reason)  # "No NVIDIA GPU visible: NVML could not load the driver ..."
        for gpu in nv.read():
            print(gpu.source, gpu.util, gpu.mem_used_mib, gpu.pcie_rx_mbs, gpu.processes)

Every optional field is ``None`` when NVML says NotSupported (or the call failed; the failure
is then listed in ``GpuSnapshot.errors``): a missing number is never shown as a zero.
The pynvml module is injectable (``NvmlSession(lib=...)``) so that
``gpudiag.record.nvml_replay.ReplayNvml`` drives exactly this code path in tests.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from gpudiag.record.gpm import GpmReader
from gpudiag.record.gpu_snapshot import (
    INIT_FAILURES,
    GpuProcess,
    GpuSnapshot,
    is_error,
    nvml_error_name,
    nvml_error_text,
    text,
)

__all__ = ["GpuProcess", "GpuSnapshot", "NvmlSession", "nvml_error_name"]

# nvmlValueType_t -> field of c_nvmlValue_t holding the sample
_VALUE_FIELDS = {
    0: "dVal",
    1: "uiVal",
    2: "ulVal",
    3: "ullVal",
    4: "sllVal",
    5: "siVal",
    6: "usVal",
}

# Timestamps further than this from the wall clock are not epoch µs; see _to_wall_us.
_EPOCH_TOLERANCE_US = 24 * 3600 * 1e6

_MIB = 1024 * 1024


class NvmlSession:
    """NVML opened once; ``read()`` returns one ``GpuSnapshot`` per GPU (thread-safe).

    ``lib``: the pynvml module or a stand-in with the same API (default: ``import pynvml``).
    ``indices``: restrict to these NVML device indices (NVML ignores CUDA_VISIBLE_DEVICES).
    ``pcie``: read PCIe throughput; each counter read blocks ~20 ms inside the driver
    (the GIL is released), so a sampler thread, not the training thread, should call ``read``.
    ``gpm``: read GPU Performance Monitoring counters (SM activity, tensor pipes; Hopper and
    later, ``record/gpm.py``); ``gpm_reason`` says why they are missing where they are.
    ``backfill``: the first read returns the utilisation samples the driver had buffered
    before the session opened (a live monitor shows history at once); ``False`` keeps only
    samples from the session's start on (a recorded run).
    """

    def __init__(
        self,
        lib: ModuleType | Any | None = None,
        *,
        indices: Sequence[int] | None = None,
        pcie: bool = True,
        processes: bool = True,
        backfill: bool = True,
        gpm: bool = True,
    ) -> None:
        self.available = False
        self.reason: str | None = None
        self.driver_version: str | None = None
        self.names: list[str] = []
        self.indices: list[int] = []
        self.lib: Any = lib
        self._handles: list[Any] = []
        self._last_ts: list[int] = []  # driver timestamp of the newest utilisation sample seen
        self._last_util: list[float | None] = []
        self._power_limit: list[float | None] = []
        self._unsupported: list[set[str]] = []  # per GPU: fields NVML said NotSupported for
        self._ts_offset_us: float | None = None
        self._pcie = pcie
        self._gpm_wanted = gpm
        self._memory_v1 = False  # the driver or bindings lack nvmlDeviceGetMemoryInfo_v2
        self._gpm: list[GpmReader | None] = []
        self.gpm_reason: str | None = None  # why no GPU gives GPM counters (None: some do)
        self._processes = processes
        self._backfill = backfill
        self._opened_us = time.time() * 1e6
        self._names_by_pid: dict[int, str] = {}
        self._lock = threading.Lock()
        self._initialised = False
        self._closed = False
        self._open(indices)

    # ---- setup -----------------------------------------------------------------------------
    def _open(self, indices: Sequence[int] | None) -> None:
        if self.lib is None:
            try:
                import pynvml

                self.lib = pynvml
            except Exception as exc:  # ImportError, or a broken install
                self.reason = (
                    "No NVIDIA GPU visible: the NVML bindings (package nvidia-ml-py, module "
                    f"pynvml) could not be imported ({type(exc).__name__}: {exc})"
                )
                return
        lib = self.lib
        try:
            lib.nvmlInit()
        except Exception as exc:
            what = INIT_FAILURES.get(nvml_error_name(lib, exc), "NVML failed to initialise")
            self.reason = f"No NVIDIA GPU visible: {what} ({nvml_error_text(lib, exc)})"
            return
        self._initialised = True
        try:
            self.driver_version = text(lib.nvmlSystemGetDriverVersion())
        except Exception:
            self.driver_version = None
        try:
            count = int(lib.nvmlDeviceGetCount())
        except Exception as exc:
            self.reason = (
                f"No NVIDIA GPU visible: NVML could not count GPUs ({nvml_error_text(lib, exc)})"
            )
            self.close()
            return
        wanted = list(range(count)) if indices is None else [i for i in indices if 0 <= i < count]
        failures: list[str] = []
        for i in wanted:
            try:
                handle = lib.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:
                failures.append(f"GPU {i}: {nvml_error_text(lib, exc)}")
                continue
            self.indices.append(i)
            self._handles.append(handle)
            self._last_ts.append(0)
            self._last_util.append(None)
            self._unsupported.append(set())
            try:
                self.names.append(text(lib.nvmlDeviceGetName(handle)))
            except Exception:
                self.names.append(f"GPU {i}")
            try:
                self._power_limit.append(lib.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0)
            except Exception:
                self._power_limit.append(None)
            self._gpm.append(GpmReader(lib, handle) if self._gpm_wanted else None)
        if not self._handles:
            driver = f" (driver {self.driver_version})" if self.driver_version else ""
            if count == 0:
                self.reason = f"No NVIDIA GPU visible: NVML is loaded{driver} but reports 0 GPUs"
            elif failures:
                self.reason = (
                    "No NVIDIA GPU visible: NVML could not open any GPU ("
                    + "; ".join(failures)
                    + ")"
                )
            else:
                self.reason = (
                    f"No NVIDIA GPU visible: none of the requested GPUs {list(indices or [])} exist"
                )
            self.close()
            return
        self.available = True
        readers = [g for g in self._gpm if g is not None]
        if readers and not any(g.available for g in readers):
            self.gpm_reason = readers[0].reason

    @property
    def count(self) -> int:
        return len(self._handles)

    @property
    def sources(self) -> list[str]:
        return [f"GPU {i}" for i in self.indices]

    def unsupported(self, position: int) -> set[str]:
        """Fields NVML reported NotSupported for the GPU at ``position`` (so far)."""
        return set(self._unsupported[position])

    # ---- reading ---------------------------------------------------------------------------
    def read(self) -> list[GpuSnapshot]:
        """One snapshot per opened GPU; [] when NVML is unavailable or closed. Never raises
        for a single field: a failing field is None and its error is in ``snapshot.errors``."""
        if not self.available or self._closed:
            return []
        with self._lock:
            return [self._read_one(pos) for pos in range(len(self._handles))]

    def _read_one(self, pos: int) -> GpuSnapshot:
        lib, h = self.lib, self._handles[pos]
        snap = GpuSnapshot(
            index=self.indices[pos],
            name=self.names[pos],
            ts_us=time.time() * 1e6,
            power_limit_w=self._power_limit[pos],
        )

        def get(name: str, fn: Callable[[], Any]) -> Any:
            if name in self._unsupported[pos]:
                return None
            try:
                return fn()
            except Exception as exc:
                if is_error(lib, exc, "NVML_ERROR_NOT_SUPPORTED"):
                    self._unsupported[pos].add(name)
                else:
                    snap.errors.append(f"{name}: {nvml_error_text(lib, exc)}")
                return None

        self._read_util(pos, snap, get)
        mem = get("memory", lambda: self._memory(h))
        if mem is not None:
            snap.mem_used_mib = mem.used / _MIB
            snap.mem_total_mib = mem.total / _MIB
        if self._pcie:
            rx = get(
                "pcie_rx", lambda: lib.nvmlDeviceGetPcieThroughput(h, lib.NVML_PCIE_UTIL_RX_BYTES)
            )
            tx = get(
                "pcie_tx", lambda: lib.nvmlDeviceGetPcieThroughput(h, lib.NVML_PCIE_UTIL_TX_BYTES)
            )
            snap.pcie_rx_mbs = None if rx is None else rx / 1000.0  # NVML reports KB/s
            snap.pcie_tx_mbs = None if tx is None else tx / 1000.0
        power = get("power", lambda: lib.nvmlDeviceGetPowerUsage(h))
        snap.power_w = None if power is None else power / 1000.0  # mW
        clock = get("clock_sm", lambda: lib.nvmlDeviceGetClockInfo(h, lib.NVML_CLOCK_SM))
        snap.clock_sm_mhz = None if clock is None else float(clock)
        temp = get("temperature", lambda: lib.nvmlDeviceGetTemperature(h, lib.NVML_TEMPERATURE_GPU))
        snap.temperature_c = None if temp is None else float(temp)
        if self._processes:
            snap.processes = self._read_processes(h, get)
        gpm = self._gpm[pos]
        if gpm is not None:
            snap.gpm = gpm.read()
        return snap

    def _memory(self, h: Any) -> Any:
        """Memory as nvidia-smi shows it: NVML's v2 query, whose ``used`` leaves out the
        driver's reserve (about 480 MiB on an H100, which the v1 query counts as used even
        on an idle GPU). The v1 query where the bindings or the driver lack v2."""
        lib = self.lib
        version = getattr(lib, "nvmlMemory_v2", None)
        if version is not None and not self._memory_v1:
            try:
                return lib.nvmlDeviceGetMemoryInfo(h, version=version)
            except Exception as exc:
                if not (
                    isinstance(exc, TypeError)
                    or is_error(lib, exc, "NVML_ERROR_FUNCTION_NOT_FOUND")
                    or is_error(lib, exc, "NVML_ERROR_NOT_SUPPORTED")
                ):
                    raise
                self._memory_v1 = True
        return lib.nvmlDeviceGetMemoryInfo(h)

    def _read_util(
        self, pos: int, snap: GpuSnapshot, get: Callable[[str, Callable[[], Any]], Any]
    ) -> None:
        lib, h = self.lib, self._handles[pos]
        if "util_samples" not in self._unsupported[pos]:
            try:
                vtype, samples = lib.nvmlDeviceGetSamples(
                    h, lib.NVML_GPU_UTILIZATION_SAMPLES, self._last_ts[pos]
                )
            except Exception as exc:
                if is_error(lib, exc, "NVML_ERROR_NOT_FOUND"):
                    samples = []  # no new sample since last_ts: normal between driver ticks
                    vtype = 1
                elif is_error(lib, exc, "NVML_ERROR_NOT_SUPPORTED"):
                    self._unsupported[pos].add("util_samples")
                    samples = None
                else:
                    snap.errors.append(f"util_samples: {nvml_error_text(lib, exc)}")
                    samples = None
            if samples is not None:
                attr = _VALUE_FIELDS.get(int(vtype), "uiVal")
                fresh = sorted(
                    (int(s.timeStamp), float(getattr(s.sampleValue, attr)))
                    for s in samples
                    if int(s.timeStamp) > self._last_ts[pos]
                )
                if fresh:
                    self._last_ts[pos] = fresh[-1][0]
                    self._last_util[pos] = fresh[-1][1]
                wall = [(self._to_wall_us(ts, snap.ts_us), v) for ts, v in fresh]
                if not self._backfill:  # drop what the driver buffered before we opened
                    wall = [(t, v) for t, v in wall if t >= self._opened_us]
                snap.util_samples = wall
                snap.util = self._last_util[pos]
                return
        # Fallback: the averaged rate, stamped with the read time.
        rates = get("util", lambda: lib.nvmlDeviceGetUtilizationRates(h))
        if rates is not None:
            snap.util = float(rates.gpu)
            snap.util_samples = [(snap.ts_us, snap.util)]

    def _to_wall_us(self, driver_ts: int, now_us: float) -> float:
        """Driver sample timestamps are CPU wall-clock µs on Linux; if one is not (far from
        now), fix an offset once, taking the newest sample as "now", and reuse it."""
        if self._ts_offset_us is None:
            self._ts_offset_us = (
                0.0 if abs(driver_ts - now_us) < _EPOCH_TOLERANCE_US else now_us - driver_ts
            )
        return driver_ts + self._ts_offset_us

    def _read_processes(
        self, h: Any, get: Callable[[str, Callable[[], Any]], Any]
    ) -> list[GpuProcess] | None:
        lib = self.lib
        compute = get("processes", lambda: lib.nvmlDeviceGetComputeRunningProcesses(h))
        graphics = get("graphics_processes", lambda: lib.nvmlDeviceGetGraphicsRunningProcesses(h))
        if compute is None and graphics is None:
            return None
        by_pid: dict[int, float | None] = {}
        for p in list(compute or []) + list(graphics or []):
            pid = int(p.pid)
            used = getattr(p, "usedGpuMemory", None)
            mib = None if used is None else used / _MIB
            prev = by_pid.get(pid)
            by_pid[pid] = mib if prev is None else max(prev, mib or 0.0)
        # keep the pid -> name cache to the processes alive now
        self._names_by_pid = {pid: n for pid, n in self._names_by_pid.items() if pid in by_pid}
        return [
            GpuProcess(pid, self._process_name(pid), mib)
            for pid, mib in sorted(by_pid.items(), key=lambda kv: -(kv[1] or 0.0))
        ]

    def _process_name(self, pid: int) -> str:
        name = self._names_by_pid.get(pid)
        if name is not None:
            return name
        try:
            import psutil

            name = psutil.Process(pid).name()
        except Exception:  # other pid namespace, gone, or denied
            try:
                name = text(self.lib.nvmlSystemGetProcessName(pid)).rsplit("/", 1)[-1]
            except Exception:
                name = "?"
        self._names_by_pid[pid] = name
        return name

    # ---- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """nvmlShutdown once; later ``read()`` calls return []. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for g in self._gpm:
                if g is not None:
                    g.close()
            if self._initialised:
                self._initialised = False
                with contextlib.suppress(Exception):
                    self.lib.nvmlShutdown()

    def __enter__(self) -> NvmlSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
