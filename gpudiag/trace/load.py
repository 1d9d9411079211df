"""Load any supported trace file into Timelines, the reader chosen by content.

    from gpudiag.trace.load import load_file
    timelines = load_file("rank0.json.gz")                  # bounds from the environment
    timelines = load_file("rank0.json.gz", ReadLimits(max_intervals=10**6))

Every problem with a file surfaces as ``TraceError`` (path + one-line problem). The format
comes from the table in ``formats.py``; every reader streams its file (``source/``).
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable, Sequence

from gpudiag.trace.errors import TraceError, TruncatedTrace
from gpudiag.trace.formats import detect
from gpudiag.trace.model.overlong import drop_overlong
from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.source.files import peek_source
from gpudiag.trace.source.limits import ReadLimits

# a profiler writes its whole trace in one go (PyTorch's export: seconds, a minute for
# gigabytes): a truncated file modified within this long is taken as still being written
WRITING_S = 60.0


def matching_paths(arg: str) -> list[str]:
    """The files an argument names: a path that exists is itself, even with ``*`` or ``[`` in
    its name; otherwise a glob pattern (quoted, so the shell left it) gives its matches,
    sorted, possibly none; anything else is a path to read or wait for."""
    if not os.path.exists(arg) and glob.has_magic(arg):
        return sorted(glob.glob(arg))
    return [arg]


def load_file(path: str, limits: ReadLimits | None = None) -> list[Timeline]:
    """All Timelines in one file (usually one; a multi-worker xplane may hold several),
    read under ``limits`` (None: the bounds already in force, else the environment's)."""
    started = time.time()
    try:
        if limits is None:
            head = peek_source(path)
            timelines = detect(head, path).read(path, head, ReadLimits.from_env())
        else:
            with limits.applied():
                head = peek_source(path)
                timelines = detect(head, path).read(path, head, limits)
    except TruncatedTrace as e:
        raise _still_being_written(e, started) from None
    for tl in timelines:  # times within the format's bounds, impossible for this trace
        drop_overlong(tl)
    return timelines


def _still_being_written(e: TruncatedTrace, started: float) -> TraceError:
    """A truncated file modified while it was read or within ``WRITING_S`` before is still
    being written (a profiler exporting it): say so, rather than call it broken."""
    try:
        modified = os.stat(e.path).st_mtime
    except OSError:
        return e
    ago = started - modified
    if ago > WRITING_S:
        return e
    when = "while it was read" if ago < 0 else f"{ago:.0f} s ago"
    return TraceError(
        e.path,
        f"still being written ({e.problem.split(' (')[0]}, modified {when}): analyze it "
        "again once the profiler has finished writing it",
    )


def load_timelines(
    paths: Sequence[str],
    on_file: Callable[[str], None] | None = None,
    limits: ReadLimits | None = None,
) -> list[Timeline]:
    """Timelines of several files: several ranks or workers of one run."""
    out: list[Timeline] = []
    for path in paths:
        if on_file:
            on_file(path)
        out.extend(load_file(path, limits))
    return out
