"""Open a trace file and tell what it is from its content, not its name.

``.gz`` is recognised by its magic bytes; JSON flavours (gpudiag's own stream, Kineto, TF
trace-viewer) by their first events; anything else is offered to xprof as an XSpace protobuf.

    raw = read_source("run.pt.trace.json.gz")   # bytes, gunzipped
    kind = sniff(raw)                             # "gpudiag" | "chrome-json" | "binary" | ...
"""

from __future__ import annotations

import gzip
import os
import zlib

from gpudiag.trace.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"


def read_source(path: str) -> bytes:
    """Whole file, decompressed if gzip. Raises TraceError for every unusable file."""
    if not os.path.exists(path):
        raise TraceError(path, "no such file")
    if os.path.isdir(path):
        raise TraceError(
            path, "is a directory; pass the trace file itself (e.g. the .xplane.pb inside it)"
        )
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TraceError(path, f"cannot read: {e.strerror or e}") from None
    if not raw.strip():
        raise TraceError(path, "file is empty")
    if raw[:2] == GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except EOFError:
            raise TraceError(path, "truncated gzip (the file ends mid-stream)") from None
        except (OSError, zlib.error) as e:
            raise TraceError(path, f"corrupt gzip data ({e})") from None
        if not raw.strip():
            raise TraceError(path, "gzip holds an empty file")
    return raw


def sniff(raw: bytes) -> str:
    """Classify content: ``gpudiag``, ``json-array``, ``json-object``, ``text`` or ``binary``."""
    head = raw[:4096].lstrip()
    if head[:1] == b"[":
        return "gpudiag" if b'"gpudiag.metadata"' in head else "json-array"
    if head[:1] == b"{":
        return "json-object"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary"
    return "text"
