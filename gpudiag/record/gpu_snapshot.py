"""What one read of one GPU gives (``GpuSnapshot``), and NVML's errors as words.

Kept apart from the NVML session so that consumers (the samplers, the live monitor, the
NVML replay) can use snapshots without the session's driver plumbing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GpuProcess:
    """A process holding a context on a GPU. ``used_mib`` is None where NVML cannot tell."""

    pid: int
    name: str
    used_mib: float | None


@dataclass
class GpuSnapshot:
    """One read of one GPU. ``util_samples`` are the driver samples new since the last read."""

    index: int
    name: str
    ts_us: float  # wall clock of this read, µs
    util: float | None = None  # latest utilisation, %
    util_samples: list[tuple[float, float]] = field(default_factory=list)  # (wall µs, %)
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    pcie_rx_mbs: float | None = None
    pcie_tx_mbs: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    clock_sm_mhz: float | None = None
    temperature_c: float | None = None
    processes: list[GpuProcess] | None = None
    gpm: dict[str, float] = field(default_factory=dict)  # record/gpm.py METRICS, % since last read
    errors: list[str] = field(default_factory=list)  # "pcie_rx: GPU is lost", ...

    @property
    def source(self) -> str:
        """Counter source name used in traces: "GPU 0", "GPU 1", ..."""
        return f"GPU {self.index}"


def nvml_error_name(lib: Any, err: BaseException) -> str:
    """``NVML_ERROR_LIBRARY_NOT_FOUND``-style name of an NVML error (or its class name)."""
    value = getattr(err, "value", None)
    if value is not None:
        for attr in dir(lib):
            if attr.startswith("NVML_ERROR_") and getattr(lib, attr, None) == value:
                return attr
    return type(err).__name__


def nvml_error_text(lib: Any, err: BaseException) -> str:
    name = nvml_error_name(lib, err)
    try:
        msg = str(err)
    except Exception:  # pynvml's __str__ itself calls into the library
        msg = ""
    return f"{name}: {msg}" if msg and msg != name else name


INIT_FAILURES = {
    "NVML_ERROR_LIBRARY_NOT_FOUND": "NVML could not load the driver library",
    "NVML_ERROR_DRIVER_NOT_LOADED": "the NVIDIA kernel driver is not loaded",
    "NVML_ERROR_NO_PERMISSION": "NVML was denied access to the GPUs",
    "NVML_ERROR_FUNCTION_NOT_FOUND": "the NVIDIA driver is too old for these NVML bindings",
}


def is_error(lib: Any, err: BaseException, const: str) -> bool:
    code = getattr(lib, const, None)
    return code is not None and getattr(err, "value", None) == code


def text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)
