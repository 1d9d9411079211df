"""Memory the training process holds: the framework allocator's readings per device and
the process on the host, read at a few moments of a fit (before the first step, at each
epoch's end, at the end). The peak tells whether a bigger batch fits
(``analyze/headroom.py``); readings that grow from epoch to epoch tell a leak
(``analyze/rules/memory_growth.py``).

Each Keras backend's adapter answers ``device_memory()`` with one of the readers here:
TensorFlow's ``tf.config.experimental.get_memory_info`` (current and peak), JAX's
``Device.memory_stats()`` (in use, peak, the pool's limit), torch's
``memory_allocated``/``max_memory_allocated`` and the device's total. On a CPU-only run they
read nothing, and the host's RSS, its high-water mark (``getrusage``) and the memory still
available play the same part.

    probe = MemoryProbe(backend.device_memory)
    for name, source, ts, value in probe.read():   # counters, MiB
        writer.counter(name, source, ts, value)

None of these waits for the device. A reader that fails is not asked again, and ``problem``
says why once.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

_MIB = float(1 << 20)
# in a series of fits (record/fit_series.py) an epoch-end reading closer than this to the
# previous one is skipped: fits in a loop end an epoch every ~0.1 s, and a reading costs
# 0.5-5 ms (psutil, the framework's device list); peaks are high-water marks, so no skipped
# reading loses one
EPOCH_READ_EVERY_S = 1.0
HOST = "host"


@dataclass(frozen=True)
class DeviceMemory:
    """One device's allocator (bytes; None: the framework does not say)."""

    source: str  # "GPU 0": the framework's own device order
    in_use: float | None
    peak: float | None
    limit: float | None = None


Sample = tuple[str, str, float, float]


def jax_memory() -> list[DeviceMemory]:
    jax = sys.modules.get("jax")
    if jax is None:
        return []
    out = []
    for i, d in enumerate(d for d in jax.local_devices() if d.platform != "cpu"):
        stats = d.memory_stats() or {}
        if stats:
            out.append(
                DeviceMemory(
                    f"GPU {i}",
                    stats.get("bytes_in_use"),
                    stats.get("peak_bytes_in_use"),
                    stats.get("bytes_limit"),
                )
            )
    return out


def tf_memory() -> list[DeviceMemory]:
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return []
    out = []
    for i, d in enumerate(tf.config.list_logical_devices("GPU")):
        info = tf.config.experimental.get_memory_info(d.name)
        out.append(DeviceMemory(f"GPU {i}", info.get("current"), info.get("peak")))
    return out


def torch_memory() -> list[DeviceMemory]:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        if not torch.cuda.memory_reserved(i):  # untouched: asking would create a context
            continue
        total = torch.cuda.get_device_properties(i).total_memory
        used, peak = torch.cuda.memory_allocated(i), torch.cuda.max_memory_allocated(i)
        out.append(DeviceMemory(f"GPU {i}", used, peak, total))
    return out


def host_memory() -> dict[str, float]:
    """The process's RSS, its high-water mark and what the host could still give (MiB)."""
    import psutil

    out = {
        "mem_host_rss": psutil.Process().memory_info().rss / _MIB,
        "mem_host_available": psutil.virtual_memory().available / _MIB,
    }
    with contextlib.suppress(ImportError, OSError):
        import resource

        peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        # kilobytes on Linux, bytes on macOS
        out["mem_host_peak"] = peak_kib / (_MIB if sys.platform == "darwin" else 1024.0)
    return out


class MemoryProbe:
    """Reads device and host memory as counter samples; never raises."""

    def __init__(self, device_memory: Callable[[], list[DeviceMemory]] | None = None) -> None:
        self.device_memory = device_memory
        self.problem: str | None = None
        self._told = False
        self._read_at: float | None = None  # monotonic time of the last reading

    def new_problem(self) -> str | None:
        """Why something was not measured, the first time it is asked; then None."""
        if self.problem is None or self._told:
            return None
        self._told = True
        return self.problem

    def read(self, every: float = 0.0) -> list[Sample]:
        """The readings now; none where the last one is less than ``every`` seconds old."""
        at = time.monotonic()
        if every > 0 and self._read_at is not None and at - self._read_at < every:
            return []
        self._read_at = at
        ts = time.time() * 1e6
        out: list[Sample] = []
        if self.device_memory is not None:
            try:
                for d in self.device_memory():
                    for name, value in (
                        ("mem_in_use", d.in_use),
                        ("mem_peak", d.peak),
                        ("mem_limit", d.limit),
                    ):
                        if isinstance(value, int | float) and value >= 0:
                            out.append((name, d.source, ts, float(value) / _MIB))
            except Exception as e:
                self.device_memory = None
                self.problem = f"device memory not measured ({type(e).__name__}: {e})"
        try:
            out.extend((name, HOST, ts, value) for name, value in host_memory().items())
        except Exception as e:
            self.problem = self.problem or f"host memory not measured ({type(e).__name__}: {e})"
        return out
