"""GPU Performance Monitoring (GPM): how busy the SMs really are, Hopper and later.

NVML's ``utilization.gpu`` says only that *a* kernel was running during the sample period:
one tiny kernel on one SM reads 100%. GPM counters say what the SMs did between two
samples: the share of SMs active, the warps resident against the maximum (occupancy), the
time the tensor pipes were busy and the DRAM bandwidth used. They separate a GPU that is
busy from one that is merely occupied.

Example::

    import pynvml
    from gpudiag.record.gpm import GpmReader

    gpm = GpmReader(pynvml, handle)
    if gpm.reason:                      # "GPM not supported on this GPU (needs Hopper or later)"
        print(gpm.reason)
    time.sleep(0.5)
    print(gpm.read())                   # {"sm_active": 87.1, "tensor_active": 41.0, ...}

Each ``read`` compares the newest sample with the previous one, so values are averages over
the interval between reads (NVML needs at least ~100 ms between samples to be meaningful).
The reader never raises: an NVML failure leaves ``read`` returning ``{}`` and says why once.
"""

from __future__ import annotations

import contextlib
from typing import Any

from gpudiag.record.gpu_snapshot import is_error, nvml_error_text

# metric name (counter suffix) -> NVML_GPM_METRIC_* id (nvml.h; ids are stable in the API)
METRICS: dict[str, int] = {
    "sm_active": 2,  # NVML_GPM_METRIC_SM_UTIL: % of SMs busy
    "sm_occupancy": 3,  # NVML_GPM_METRIC_SM_OCCUPANCY: % of resident warps vs maximum
    "tensor_active": 5,  # NVML_GPM_METRIC_ANY_TENSOR_UTIL: % of time any tensor pipe busy
    "dram_bw": 10,  # NVML_GPM_METRIC_DRAM_BW_UTIL: % of peak DRAM bandwidth
    "fp32_active": 12,  # NVML_GPM_METRIC_FP32_UTIL: % of time non-tensor FP32 pipes busy
    "fp16_active": 13,  # NVML_GPM_METRIC_FP16_UTIL: % of time non-tensor FP16 pipes busy
}

_METRICS_GET_VERSION = 1  # NVML_GPM_METRICS_GET_VERSION
_NOT_SUPPORTED = (
    "GPM not supported on this GPU (NVML's GPU Performance Monitoring needs Hopper or later)"
)


class GpmReader:
    """GPM metrics of one device between consecutive ``read`` calls."""

    def __init__(self, lib: Any, handle: Any) -> None:
        self.lib = lib
        self.handle = handle
        self.reason: str | None = None
        self._samples: list[Any] = []
        self._have_previous = False
        try:
            support = lib.nvmlGpmQueryDeviceSupport(handle)
            if not int(getattr(support, "isSupportedDevice", 0)):
                self.reason = _NOT_SUPPORTED
                return
            self._samples = [lib.nvmlGpmSampleAlloc(), lib.nvmlGpmSampleAlloc()]
            lib.nvmlGpmSampleGet(handle, self._samples[0])
            self._have_previous = True
        except Exception as exc:
            self.reason = _explain(lib, exc)
            self.close()

    @property
    def available(self) -> bool:
        return self.reason is None

    def read(self) -> dict[str, float]:
        """Metrics since the previous read (%); ``{}`` when unavailable or on a failure."""
        if not self.available or not self._have_previous:
            return {}
        lib = self.lib
        try:
            lib.nvmlGpmSampleGet(self.handle, self._samples[1])
            request = lib.c_nvmlGpmMetricsGet_t()
            request.version = _METRICS_GET_VERSION
            request.numMetrics = len(METRICS)
            request.sample1 = self._samples[0]
            request.sample2 = self._samples[1]
            for i, metric_id in enumerate(METRICS.values()):
                request.metrics[i].metricId = metric_id
            result = lib.nvmlGpmMetricsGet(request)
        except Exception as exc:
            self.reason = _explain(lib, exc)
            self.close()
            return {}
        self._samples.reverse()  # the newest sample is the next read's baseline
        out: dict[str, float] = {}
        for i, name in enumerate(METRICS):
            metric = result.metrics[i]
            if int(getattr(metric, "nvmlReturn", 0)) == 0:
                value = float(metric.value)
                if 0.0 <= value <= 100.0:  # a percentage outside its range is not a reading
                    out[name] = value
        return out

    def close(self) -> None:
        samples, self._samples = self._samples, []
        self._have_previous = False
        for s in samples:
            with contextlib.suppress(Exception):
                self.lib.nvmlGpmSampleFree(s)


def _explain(lib: Any, exc: BaseException) -> str:
    if is_error(lib, exc, "NVML_ERROR_NOT_SUPPORTED") or is_error(
        lib, exc, "NVML_ERROR_FUNCTION_NOT_FOUND"
    ):
        return _NOT_SUPPORTED
    if isinstance(exc, AttributeError):  # bindings older than GPM (nvidia-ml-py < 11.525)
        return "GPM not available: these NVML bindings have no GPM functions"
    return f"GPM failed: {nvml_error_text(lib, exc)}"
