"""Load any supported trace file into Timelines, choosing the reader by content.

    from gpudiag.trace.load import load_timelines
    timelines = load_timelines(["rank0.json.gz", "rank1.json.gz"])

Every problem with a file surfaces as ``TraceError`` (path + one-line problem).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gpudiag.trace.chrome import parse_chrome
from gpudiag.trace.errors import TraceError
from gpudiag.trace.gpudiag_format import read_gpudiag
from gpudiag.trace.kineto import kineto_head, looks_like_kineto, read_kineto, stream_kineto
from gpudiag.trace.source import peek_source, read_source, sniff
from gpudiag.trace.tfprof import looks_like_tf, read_tf_trace
from gpudiag.trace.timeline import Timeline


def load_file(path: str) -> list[Timeline]:
    """All Timelines in one file (usually one; a multi-worker xplane may hold several)."""
    head = peek_source(path)
    if sniff(head) == "json-object":
        top = kineto_head(head)
        if top is not None:  # PyTorch traces are the large ones: stream them
            return stream_kineto(path, top)
    raw = read_source(path)
    kind = sniff(raw)
    if kind == "gpudiag":
        return read_gpudiag(raw, path)
    if kind == "binary":
        from gpudiag.trace.xplane import read_xplane

        if raw[:2] == b"\x1f\x8b" or _gzipped(path):
            raise TraceError(path, "gzip holds binary data that is not a trace")
        return read_xplane(path)
    if kind == "text":
        from gpudiag.trace.xplane import text_problem

        raise TraceError(path, text_problem(raw))
    doc = parse_chrome(raw, path)
    if looks_like_tf(doc):
        return read_tf_trace(doc, path)
    if looks_like_kineto(doc):
        return read_kineto(doc, path)
    raise TraceError(
        path,
        "JSON trace from an unknown producer (expected gpudiag, PyTorch/Kineto or "
        "TensorFlow trace-viewer events)",
    )


def _gzipped(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


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
