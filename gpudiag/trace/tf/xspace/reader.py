"""TensorFlow / JAX profiler ``.xplane.pb`` -> Timeline, decoded without xprof.

The XSpace protobuf is decoded by the protobuf runtime with gpudiag's copy of its schema
(``schema.py``), and ``events.py`` makes of it the trace-viewer events xprof's
``trace_viewer`` tool makes, which the trace-viewer reader (``tf/viewer/``) reads as they
come. No TensorFlow, no xprof, no C++ thread per plane, and memory bounded by one plane's
decoded messages (benchmarks/README.md). xprof's own reading (``by_xprof.py``) is kept for
its tools.

    timelines = read_xplane("run/plugins/profile/.../host.xplane.pb")
"""

from __future__ import annotations

import os

from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.source.chrome import ChromeDoc, index_names
from gpudiag.trace.source.limits import (  # the bounds live with the others
    XPLANE_BASE_MB,
    XPLANE_BYTES_PER_LINE,
    XPLANE_BYTES_PER_METADATA,
    XPLANE_LIMIT_ENV,
    XPLANE_LINES_ENV,
    XPLANE_MB_PER_MB,
    XPLANE_METADATA_ENV,
    ReadLimits,
    XSpaceBounds,
)
from gpudiag.trace.tf.viewer.reader import read_tf_stream, read_tf_trace
from gpudiag.trace.tf.xspace.counts import XSpaceShape
from gpudiag.trace.tf.xspace.events import MAX_DURATION_PS, XSpaceEvents, open_xspace
from gpudiag.trace.tf.xspace.gpu_facts import apply_gpu_facts, gpu_facts
from gpudiag.trace.tf.xspace.memory import apply_memory, memory_profile

REPLACEMENT_CHAR = "\ufffd".encode()
MANGLED_MIN = 8  # replacement characters: a stray one is text, a protobuf has hundreds


def text_problem(raw: bytes, path: str | None = None) -> str:
    """Why a file that decodes as text is not a trace, naming the usual accident: a binary
    ``.xplane.pb`` read and written back through a text decoder (bytes that were not UTF-8
    became U+FFFD, and protobuf field tags became control characters)."""
    head = raw[: 1 << 16]
    if path is not None and _names_only_xspace(path):
        return "XSpace profile holds no timed events"
    controls = sum(head.count(bytes([c])) for c in (0, 1, 2, 3, 8, 0x12, 0x1A))
    if head.count(REPLACEMENT_CHAR) >= MANGLED_MIN or controls > len(head) // 50:
        return (
            "a binary protobuf (.xplane.pb) mangled by a text decoder (bytes replaced by "
            "U+FFFD or control characters): copy the original file in binary mode"
        )
    return "not a trace: text that is neither JSON nor an XSpace protobuf"


def _names_only_xspace(path: str) -> bool:
    """A small XSpace of names and no events is valid UTF-8 too."""
    from gpudiag.trace.tf.xspace.schema import XSpace

    space = XSpace()
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
        space.ParseFromString(raw)
    except Exception:  # unreadable, or protobuf's DecodeError: not one
        return False
    return any(p.name.startswith(("/host:", "/device:")) for p in space.planes)


def read_xplane(path: str, bounds: XSpaceBounds | None = None) -> list[Timeline]:
    """The profile's trace-viewer events, as xprof makes them, read by the trace-viewer
    reader; events with impossible times are dropped and the report says how many. An
    XSpace holding more than ``bounds`` allows is refused before it is decoded
    (``shape_problem``)."""
    events = open_xspace(path, bounds or ReadLimits().xspace(), shape_problem)
    timelines = read_events(ChromeDoc(events=events), path, events)
    notes = []
    if events.dropped:
        n = events.dropped
        notes.append(
            f"{n:,} XSpace event{'s' if n > 1 else ''} with impossible times dropped (a "
            f"negative duration or offset, either over {MAX_DURATION_PS // 10**12 // 3600} h "
            "of its line, or a time beyond int64 picoseconds)"
        )
    if events.modules_not_derived:
        notes.append(
            'XLA module executions on the GPU are not put on an "XLA Modules" line (xprof '
            "derives one for profiles the profiler left ungrouped): they are not step markers"
        )
    for tl in timelines:
        tl.meta.limitations.extend(notes)
    apply_gpu_facts(timelines, gpu_facts(events.space))  # the GPU: plane stats, not events
    apply_memory(timelines, memory_profile(events.space, path))  # the allocators' peaks
    return timelines


def read_events(doc: ChromeDoc, path: str, xspace: XSpaceEvents | None = None) -> list[Timeline]:
    """The trace-viewer reader over events whose names all come first (xprof's order)."""
    if xspace is not None:
        for ev in xspace.metadata():
            doc.name(ev)
    else:
        index_names(doc)
    timelines = read_tf_stream(doc, path, producer="xplane")
    if timelines is None:
        index_names(doc)
        timelines = read_tf_trace(doc, path, producer="xplane")
    if xspace is not None and not xspace.timed:
        raise TraceError(path, "XSpace profile holds no timed events")
    return timelines


def check_xplane_size(path: str, limit: float) -> None:
    """Refuse, before decoding, an xplane whose reading would exceed the memory bound
    ``limit`` (MB of file; ``ReadLimits.xplane_mb``). ``gpudiag analyze`` only: the
    callback's own profiler windows are short."""
    mb = os.path.getsize(path) / 1e6
    if mb > limit:
        need = XPLANE_BASE_MB + XPLANE_MB_PER_MB * mb
        raise TraceError(
            path,
            f"a {mb:,.0f} MB xplane: reading it takes about {need:,.0f} MB of memory "
            f"({XPLANE_MB_PER_MB:g} MB per MB), beyond the {limit:g} MB bound on xplane "
            f"files; raise it with --max-xplane-mb or {XPLANE_LIMIT_ENV}",
        )


def shape_problem(shape: XSpaceShape, bounds: XSpaceBounds) -> str:
    """Why an XSpace is refused before it is decoded: the bound it passes, what reading
    past it costs, and how to raise it."""
    if shape.over == "metadata":
        return (
            f"an XSpace of more than {bounds.metadata:,} metadata entries (event and stat "
            f"names; real profiles hold up to about 11,000): each takes about "
            f"{XPLANE_BYTES_PER_METADATA} bytes of memory to read, whatever the file's size; "
            f"raise the bound with --max-xplane-metadata or {XPLANE_METADATA_ENV}"
        )
    if shape.over == "lines":
        return (
            f"an XSpace of more than {bounds.lines:,} lines (threads and streams; real "
            f"profiles hold tens): each takes about {XPLANE_BYTES_PER_LINE} bytes of memory "
            f"to read; raise the bound with --max-xplane-lines or {XPLANE_LINES_ENV}"
        )
    return (
        f"an XSpace of more than {bounds.planes:,} planes (a host's and one per device): "
        f"devices beyond {bounds.planes:,} are not told apart; split the profile by host"
    )
