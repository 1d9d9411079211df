"""Let the C allocator give big freed buffers back to the system while a trace is analyzed.

glibc serves allocations above a threshold with ``mmap`` and returns them on ``free``, but
raises that threshold (up to 32 MiB) each time such a buffer is freed: after the first few
numpy arrays of an analysis, later ones come from the heap and their pages stay with the
process. Measured on a 1 GB Kineto trace: 258 MB peak RSS with the moving threshold, 178 MB
with a fixed one (same time within noise). Fixing the threshold at glibc's own default
(128 KiB) is what ``MALLOC_MMAP_THRESHOLD_=131072`` does; this sets it in-process.

Only for gpudiag's own analysis processes (``gpudiag analyze``/``compare`` and their
worker processes), never inside a training process. Elsewhere (macOS, musl) a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # mallopt parameter number, from glibc's malloc.h
THRESHOLD_BYTES = 128 * 1024
_done = False


def return_big_buffers() -> None:
    """Fix glibc's mmap threshold (once per process); silently nothing without glibc."""
    global _done
    if _done:
        return
    _done = True
    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES)


def give_back_free_memory() -> None:
    """Return the heap's free pages to the system (glibc ``malloc_trim``): for processes that
    outlive one analysis (Dask workers), so each one starts from its baseline, not from the
    last one's peak. Nothing without glibc."""
    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)
