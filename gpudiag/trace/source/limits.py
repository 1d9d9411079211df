"""The bounds a read works under, as one value handed to whoever reads.

``gpudiag analyze --max-gzip-ratio/--max-intervals/--max-xplane-mb/--memory-mb/
--max-xplane-metadata/--max-xplane-lines`` (or their environment variables, read once here)
make a ``ReadLimits``; the CLI passes it to the
process that reads each file (itself, a pool worker, a Dask worker), which applies it around
the read. The environment is never used to carry it to workers.

    limits = ReadLimits.from_env(max_intervals=500_000)
    per_rank = limits.shared(len(files))       # N rank files hold the bound together
    with per_rank.applied():
        timelines = load_file(path, per_rank)

The bounds and the reason for each number: docs/formats.md ("Bounds on any input").
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

from gpudiag.trace.model.sink import (
    DEFAULT_MAX_INTERVALS,
    LIMIT_ENV,
    MAX_KEYS,
    MIN_INTERVALS,
    limit_intervals,
)
from gpudiag.trace.source.files import DEFAULT_GZIP_RATIO, RATIO_ENV, limit_gzip_ratio

# the bound docs/formats.md promises for one analysis (one file: ~200-230 MB measured)
DEFAULT_MEMORY_MB = 300.0
MEMORY_ENV = "GPUDIAG_MEMORY_MB"

# Peak RSS of `gpudiag analyze` on an xplane, measured (benchmarks/xplane_size.py, the
# sample repeated to 10-100 MB): 47 MB + 2.7 MB per MB of file (the file's lines held
# serialized, its metadata decoded, one line's events at a time). The default keeps the
# process under 1 GB (the address-space cap hardening runs use): 50 + 2.7 x 350 = 995 MB.
XPLANE_BASE_MB = 50
XPLANE_MB_PER_MB = 2.7
DEFAULT_MAX_XPLANE_MB = 350.0
XPLANE_LIMIT_ENV = "GPUDIAG_MAX_XPLANE_MB"
# What an XSpace holds costs memory whatever the file's size (tf/xspace/counts.py): metadata
# entries about 300 bytes each while read (decoded, named, looked up), a line about 500 bytes
# (its names, its thread in the trace-viewer events). Real profiles hold 300 to 11,000
# metadata entries and 14 to 40 lines (sample_traces/, the Keras GPU profiles); the defaults
# are 9 and 1,000 times that: each bound reached costs 30-60 MB, and 100,000 entries each a
# distinct kernel's name are read in seconds (benchmarks/README.md).
DEFAULT_MAX_XPLANE_METADATA = 100_000
XPLANE_METADATA_ENV = "GPUDIAG_MAX_XPLANE_METADATA"
XPLANE_BYTES_PER_METADATA = 300
DEFAULT_MAX_XPLANE_LINES = 50_000
XPLANE_LINES_ENV = "GPUDIAG_MAX_XPLANE_LINES"
XPLANE_BYTES_PER_LINE = 500
# planes: a host's and one per device; further devices are not told apart anyway (MAX_KEYS)
MAX_XPLANE_PLANES = MAX_KEYS


@dataclass(frozen=True)
class XSpaceBounds:
    """The most of each an XSpace may hold to be read (docs/formats.md, "Bounds"), counted
    before it is decoded (``tf/xspace/counts.py``)."""

    metadata: int  # event and stat metadata entries and plane stats, over all planes
    lines: int  # lines over all planes
    planes: int


def _env(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except (ValueError, OverflowError):
        return default
    return value if value > 0 and value != float("inf") else default


@dataclass(frozen=True)
class ReadLimits:
    """Bounds on reading one file (it pickles: pool and Dask workers receive it)."""

    gzip_ratio: float = DEFAULT_GZIP_RATIO  # a .gz may expand this many times its size
    max_intervals: int = DEFAULT_MAX_INTERVALS  # intervals one file may hold
    xplane_mb: float = DEFAULT_MAX_XPLANE_MB  # largest .xplane.pb handed to xprof
    # what gpudiag analyze and its reading processes may take together: it decides how many
    # worker processes read rank files at once (runs.pool_size)
    memory_mb: float = DEFAULT_MEMORY_MB
    xplane_metadata: int = DEFAULT_MAX_XPLANE_METADATA  # metadata entries of one .xplane.pb
    xplane_lines: int = DEFAULT_MAX_XPLANE_LINES  # lines of one .xplane.pb

    @classmethod
    def from_env(
        cls,
        gzip_ratio: float | None = None,
        max_intervals: int | None = None,
        xplane_mb: float | None = None,
        memory_mb: float | None = None,
        xplane_metadata: int | None = None,
        xplane_lines: int | None = None,
    ) -> ReadLimits:
        """The given bounds; each one not given from its environment variable, else the
        default."""
        return cls(
            gzip_ratio=gzip_ratio or _env(RATIO_ENV, DEFAULT_GZIP_RATIO),
            max_intervals=max(
                MIN_INTERVALS,
                max_intervals or int(_env(LIMIT_ENV, DEFAULT_MAX_INTERVALS)),
            ),
            xplane_mb=xplane_mb or _env(XPLANE_LIMIT_ENV, DEFAULT_MAX_XPLANE_MB),
            memory_mb=memory_mb or _env(MEMORY_ENV, DEFAULT_MEMORY_MB),
            xplane_metadata=int(
                xplane_metadata or _env(XPLANE_METADATA_ENV, DEFAULT_MAX_XPLANE_METADATA)
            ),
            xplane_lines=int(xplane_lines or _env(XPLANE_LINES_ENV, DEFAULT_MAX_XPLANE_LINES)),
        )

    def xspace(self) -> XSpaceBounds:
        """The bounds on what one XSpace may hold."""
        return XSpaceBounds(self.xplane_metadata, self.xplane_lines, MAX_XPLANE_PLANES)

    def shared(self, files: int) -> ReadLimits:
        """The bounds of each of ``files`` rank files read for one analysis: an equal share
        of the interval bound, so a run of hundreds of ranks is bounded as one file is."""
        share = max(MIN_INTERVALS, self.max_intervals // max(1, files))
        return replace(self, max_intervals=share)

    @contextlib.contextmanager
    def applied(self) -> Iterator[None]:
        """Readers inside (in this thread or task) work under these bounds."""
        with limit_gzip_ratio(self.gzip_ratio), limit_intervals(self.max_intervals):
            yield
