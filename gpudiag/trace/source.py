"""Open a trace file and tell what it is from its content, not its name.

``.gz`` is recognised by its magic bytes; JSON flavours (gpudiag's own stream, Kineto, TF
trace-viewer) by their first bytes; anything else is offered to xprof as an XSpace protobuf.
Large files need not be read whole: ``peek_source`` gives the decompressed head and
``open_stream`` a decompressing file object for streaming parsers.

    head = peek_source("run.pt.trace.json.gz")   # first MiB, gunzipped
    kind = sniff(head)                            # "gpudiag" | "json-object" | "binary" | ...
"""

from __future__ import annotations

import contextlib
import gzip
import os
import re
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from gpudiag.trace.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 1 << 20
_NON_BLANK = re.compile(rb"\S")


def _check_path(path: str) -> None:
    if not os.path.exists(path):
        raise TraceError(path, "no such file")
    if os.path.isdir(path):
        raise TraceError(
            path, "is a directory; pass the trace file itself (e.g. the .xplane.pb inside it)"
        )


def _blank(data: bytes) -> bool:
    """True for empty or whitespace-only data, without copying it (unlike ``strip``)."""
    return _NON_BLANK.search(data) is None


def is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


@contextlib.contextmanager
def open_stream(path: str) -> Iterator[BinaryIO]:
    """The file's decompressed bytes as a stream. Decompression errors surface while it is
    read; ``gzip_errors`` turns them into TraceErrors."""
    _check_path(path)
    try:
        stream: BinaryIO = gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")  # noqa: SIM115
    except OSError as e:
        raise TraceError(path, f"cannot read: {e.strerror or e}") from None
    with stream:
        yield stream


@contextlib.contextmanager
def gzip_errors(path: str) -> Iterator[None]:
    try:
        yield
    except EOFError:
        raise TraceError(path, "truncated gzip (the file ends mid-stream)") from None
    except (gzip.BadGzipFile, zlib.error) as e:
        raise TraceError(path, f"corrupt gzip data ({e})") from None


def peek_source(path: str, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` decompressed bytes; TraceError for missing, empty or unreadable files."""
    _check_path(path)
    if os.path.getsize(path) == 0:
        raise TraceError(path, "file is empty")
    with open_stream(path) as f, gzip_errors(path):
        head = f.read(n)
    if _blank(head):
        raise TraceError(path, "file is empty" if not is_gzip(path) else "gzip holds an empty file")
    return head


def read_source(path: str) -> bytes:
    """Whole file, decompressed if gzip. Raises TraceError for every unusable file."""
    _check_path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TraceError(path, f"cannot read: {e.strerror or e}") from None
    if _blank(raw):
        raise TraceError(path, "file is empty")
    if raw[:2] == GZIP_MAGIC:
        with gzip_errors(path):
            try:
                raw = gzip.decompress(raw)
            except OSError as e:
                raise TraceError(path, f"corrupt gzip data ({e})") from None
        if _blank(raw):
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
