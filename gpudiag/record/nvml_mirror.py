"""pynvml's error classes and GPM structures, as ``ReplayNvml`` (nvml_replay.py) raises and
returns them: the same names, codes and fields, so ``NvmlSession`` handles a replay's errors
and GPM readings exactly as the real library's.

    raise error_for(3)          # NVMLError_NotSupported, str(e) "Not Supported"
"""

from __future__ import annotations

from types import SimpleNamespace

_ERROR_TEXT = {
    1: "Uninitialized",
    2: "Invalid Argument",
    3: "Not Supported",
    4: "Insufficient Permissions",
    6: "Not Found",
    9: "Driver Not Loaded",
    12: "NVML Shared Library Not Found",
    13: "Function Not Found",
    15: "GPU is lost",
    999: "Unknown Error",
}


class NVMLError(Exception):
    """Mirrors ``pynvml.NVMLError``: ``value`` is the nvmlReturn_t code."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _ERROR_TEXT.get(self.value, f"NVML Error with code {self.value}")


class NVMLError_Uninitialized(NVMLError):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_NotFound(NVMLError):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


class NVMLError_DriverNotLoaded(NVMLError):
    pass


_CLASSES: dict[int, type[NVMLError]] = {
    1: NVMLError_Uninitialized,
    3: NVMLError_NotSupported,
    6: NVMLError_NotFound,
    9: NVMLError_DriverNotLoaded,
    12: NVMLError_LibraryNotFound,
}


def error_for(code: int) -> NVMLError:
    """The error pynvml raises for nvmlReturn_t ``code``."""
    return _CLASSES.get(code, NVMLError)(code)


class GpmSample:
    __slots__ = ("index", "t_us")

    def __init__(self) -> None:
        self.index = 0
        self.t_us: float | None = None


class GpmMetricsGet:
    """Mirrors ``pynvml.c_nvmlGpmMetricsGet_t``: ``metrics[i].metricId`` in, values out."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: GpmSample | None = None
        self.sample2: GpmSample | None = None
        self.metrics = [
            SimpleNamespace(metricId=0, nvmlReturn=0, value=0.0) for _ in range(GPM_SLOTS)
        ]


GPM_SLOTS = 32


class Handle:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<replay nvmlDevice {self.index}>"
