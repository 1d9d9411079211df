"""The table of trace formats: how each is recognised, identified and read.

Loading (``load.py``) and run grouping (``ranks/runs.py``) both go through ``FORMATS``, so what a
file is, which run and rank it belongs to, and how it is read are decided in one place, from
its content (never its name):

    fmt = detect(head, path)                # head: the decompressed start (peek_source)
    who = fmt.identify(head)                # run id, rank, start: from the head alone
    timelines = fmt.read(path, head, limits)

A format's ``sniff`` looks at the first bytes only; entries are tried in order, the first
that claims the head reads the file.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.source.limits import ReadLimits

if TYPE_CHECKING:
    from gpudiag.trace.source.chrome import ChromeDoc

SNIFF_BYTES = 4096


@dataclass(frozen=True)
class Identity:
    """Which run and rank a file belongs to, as its head says (None: not said)."""

    run_id: str | None = None
    rank: int | None = None
    started_us: float | None = None


@dataclass(frozen=True)
class Format:
    name: str
    sniff: Callable[[bytes], bool]  # does this head belong to the format?
    identify: Callable[[bytes], Identity]  # run and rank from the head
    read: Callable[[str, bytes, ReadLimits], list[Timeline]]  # path, head, bounds


def _start(head: bytes) -> bytes:
    return head[:SNIFF_BYTES].lstrip()


# ---- gpudiag's own stream ----------------------------------------------------------------
def _is_gpudiag(head: bytes) -> bool:
    start = _start(head)
    return start[:1] == b"[" and b'"gpudiag.metadata"' in start


def _gpudiag_identity(head: bytes) -> Identity:
    """The header event, the stream's first line, carries run id, rank and start."""
    from gpudiag.trace.native.reader import FORMAT_NAME
    from gpudiag.trace.source.chrome import loads

    line = head.lstrip()[1:].lstrip().split(b"\n", 1)[0].rstrip().rstrip(b",")
    try:
        ev = loads(line)
    except (ValueError, RecursionError):
        return Identity()
    args = ev.get("args") if isinstance(ev, dict) else None
    if not isinstance(args, dict) or args.get("format") != FORMAT_NAME:
        return Identity()
    extra = args.get("extra")
    extra = extra if isinstance(extra, dict) else {}
    return Identity(
        _str(args.get("run_id")), _int(args.get("rank")), _float(extra.get("started_us"))
    )


def _read_gpudiag(path: str, head: bytes, limits: ReadLimits) -> list[Timeline]:
    from gpudiag.trace.native.reader import read_gpudiag

    return read_gpudiag(path)


# ---- Chrome trace JSON: PyTorch Kineto, TensorFlow / JAX trace viewer ---------------------
def _is_json(head: bytes) -> bool:
    return _start(head)[:1] in (b"[", b"{")


def _chrome_identity(head: bytes) -> Identity:
    """Kineto writes ``distributedInfo`` (with the rank) before its events."""
    from gpudiag.trace.kineto.reader import kineto_head

    top = kineto_head(head) if head.lstrip()[:1] == b"{" else None
    info = top.get("distributedInfo") if top is not None else None
    return Identity(rank=_int(info.get("rank"))) if isinstance(info, dict) else Identity()


def _read_chrome(path: str, head: bytes, limits: ReadLimits) -> list[Timeline]:
    """Kineto or TF trace viewer; the events dropped for impossible times are said."""
    from gpudiag.trace.source.chrome import EventStream, open_chrome
    from gpudiag.trace.source.event_check import dropped_note

    doc = open_chrome(path, index=False)
    timelines = _read_chrome_doc(doc, path)
    dropped = doc.events.dropped if isinstance(doc.events, EventStream) else 0
    for tl in timelines if dropped else ():
        tl.meta.limitations.append(dropped_note(dropped))
    return timelines


def _read_chrome_doc(doc: ChromeDoc, path: str) -> list[Timeline]:
    """Kineto or TF trace viewer, told apart by top-level keys, then by event names."""
    from gpudiag.trace.kineto.reader import TOP_KEYS, looks_like_kineto, read_kineto
    from gpudiag.trace.source.chrome import index_head, index_names

    if any(k in doc.top for k in TOP_KEYS):  # Kineto: no names needed, one pass
        return read_kineto(doc, path)
    from gpudiag.trace.tf.viewer.reader import looks_like_tf, read_tf_stream, read_tf_trace

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


# ---- compressed by something other than gzip: named, not handed to xprof -----------------
# (magic bytes, what it is, how to undo it); zlib's first byte is 0x78, its second makes
# the pair a multiple of 31 (RFC 1950)
COMPRESSIONS = (
    (b"BZh", "bzip2", "bunzip2 -k FILE"),
    (b"\xfd7zXZ\x00", "xz", "unxz -k FILE"),
    (b"\x28\xb5\x2f\xfd", "zstd", "unzstd FILE"),
    (b"PK\x03\x04", "zip", "unzip FILE"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip", "7z x FILE"),
    (b"\x04\x22\x4d\x18", "lz4", "unlz4 FILE"),
)


def _compression(head: bytes) -> tuple[str, str] | None:
    for magic, name, undo in COMPRESSIONS:
        if head.startswith(magic):
            return name, undo
    if len(head) >= 2 and head[0] == 0x78 and (head[0] * 256 + head[1]) % 31 == 0:
        return "zlib", "pigz -dz < FILE"
    return None


def _is_compressed(head: bytes) -> bool:
    return _is_binary(head) and _compression(_start(head)) is not None


def _refuse_compressed(path: str, head: bytes, limits: ReadLimits) -> list[Timeline]:
    name, undo = _compression(_start(head)) or ("compressed", "")
    raise TraceError(
        path, f"{name}-compressed data: gpudiag reads plain or gzip files; decompress it ({undo})"
    )


# ---- TensorFlow / JAX XSpace protobuf ------------------------------------------------------
def _is_binary(head: bytes) -> bool:
    try:  # incremental: a character cut at the end of the head is not an error
        codecs.getincrementaldecoder("utf-8")().decode(_start(head), final=False)
    except UnicodeDecodeError:
        return True
    return False


def _read_xplane(path: str, head: bytes, limits: ReadLimits) -> list[Timeline]:
    from gpudiag.trace.source.files import GZIP_MAGIC, is_gzip
    from gpudiag.trace.tf.xspace.reader import check_xplane_size, read_xplane

    if is_gzip(path):
        if head.startswith(GZIP_MAGIC):
            raise TraceError(path, "a gzip inside a gzip: decompress it once (gunzip) and retry")
        raise TraceError(path, "gzip holds binary data that is not a trace")
    check_xplane_size(path, limits.xplane_mb)  # refused before it is decoded
    return read_xplane(path, limits.xspace())


def _no_identity(head: bytes) -> Identity:
    return Identity()


FORMATS: tuple[Format, ...] = (
    Format("gpudiag", _is_gpudiag, _gpudiag_identity, _read_gpudiag),
    Format("chrome-json", _is_json, _chrome_identity, _read_chrome),
    Format("compressed", _is_compressed, _no_identity, _refuse_compressed),
    Format("xplane", _is_binary, _no_identity, _read_xplane),
)


def find_format(head: bytes) -> Format | None:
    """The first format that claims the head, or None."""
    return next((fmt for fmt in FORMATS if fmt.sniff(head)), None)


def detect(head: bytes, path: str) -> Format:
    """The format of a file from its head; TraceError naming what it looks like instead."""
    fmt = find_format(head)
    if fmt is None:
        from gpudiag.trace.tf.xspace.reader import text_problem

        raise TraceError(path, text_problem(head, path))
    return fmt


def _str(x: Any) -> str | None:
    return str(x)[:64] if isinstance(x, str) and x else None


def _int(x: Any) -> int | None:
    return int(x) if isinstance(x, int) and not isinstance(x, bool) else None


def _float(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None
