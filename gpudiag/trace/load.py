"""Load any supported trace file into Timelines, the reader chosen by content.

    from gpudiag.trace.load import load_file
    timelines = load_file("rank0.json.gz")                  # bounds from the environment
    timelines = load_file("rank0.json.gz", ReadLimits(max_intervals=10**6))

Every problem with a file surfaces as ``TraceError`` (path + one-line problem). The format
comes from the table in ``formats.py``; every reader streams its file (``source.py``).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence

from gpudiag.trace.formats import detect
from gpudiag.trace.limits import ReadLimits
from gpudiag.trace.source import peek_source
from gpudiag.trace.timeline import Timeline


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
    if limits is None:
        head = peek_source(path)
        return detect(head, path).read(path, head, ReadLimits.from_env())
    with limits.applied():
        head = peek_source(path)
        return detect(head, path).read(path, head, limits)


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
