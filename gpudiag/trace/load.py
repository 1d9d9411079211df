"""Load any supported trace file into Timelines, choosing the reader by content.

    from gpudiag.trace.load import load_timelines
    timelines = load_timelines(["rank0.json.gz", "rank1.json.gz"])

Every problem with a file surfaces as ``TraceError`` (path + one-line problem). Every reader
streams its file (see ``source.py`` for the bounds on size, nesting and strings).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence

from gpudiag.trace.chrome import index_head, index_names, open_chrome
from gpudiag.trace.errors import TraceError
from gpudiag.trace.gpudiag_format import read_gpudiag
from gpudiag.trace.kineto import TOP_KEYS, looks_like_kineto, read_kineto
from gpudiag.trace.source import is_gzip, peek_source, sniff
from gpudiag.trace.tfprof import looks_like_tf, read_tf_stream, read_tf_trace
from gpudiag.trace.timeline import Timeline


def matching_paths(arg: str) -> list[str]:
    """The files an argument names: a path that exists is itself, even with ``*`` or ``[`` in
    its name; otherwise a glob pattern (quoted, so the shell left it) gives its matches,
    sorted, possibly none; anything else is a path to read or wait for."""
    if not os.path.exists(arg) and glob.has_magic(arg):
        return sorted(glob.glob(arg))
    return [arg]


def load_file(path: str) -> list[Timeline]:
    """All Timelines in one file (usually one; a multi-worker xplane may hold several)."""
    head = peek_source(path)
    kind = sniff(head)
    if kind == "gpudiag":
        return read_gpudiag(path)
    if kind == "binary":
        from gpudiag.trace.xplane import check_xplane_size, read_xplane

        if is_gzip(path):
            raise TraceError(path, "gzip holds binary data that is not a trace")
        check_xplane_size(path)
        return read_xplane(path)
    if kind == "text":
        from gpudiag.trace.xplane import text_problem

        raise TraceError(path, text_problem(head, path))
    doc = open_chrome(path, index=False)
    if any(k in doc.top for k in TOP_KEYS):  # Kineto: no names needed, one pass
        return read_kineto(doc, path)
    index_head(doc)
    if looks_like_tf(doc):  # TF writes its names first: one pass, unless one came late
        timelines = read_tf_stream(doc, path)
        if timelines is not None:
            return timelines
    index_names(doc)
    if looks_like_tf(doc):
        return read_tf_trace(doc, path)
    if looks_like_kineto(doc):
        return read_kineto(doc, path)
    raise TraceError(
        path,
        "JSON trace from an unknown producer (expected gpudiag, PyTorch/Kineto or "
        "TensorFlow trace-viewer events)",
    )


def load_timelines(
    paths: Sequence[str], on_file: Callable[[str], None] | None = None
) -> list[Timeline]:
    """Timelines of several files: several ranks or workers of one run."""
    out: list[Timeline] = []
    for path in paths:
        if on_file:
            on_file(path)
        out.extend(load_file(path))
    return out
