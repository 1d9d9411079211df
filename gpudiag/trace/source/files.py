"""Open a trace file, decompressed (``.gz`` recognised by its magic bytes, not its name).

What the content is, ``formats.py`` decides from the head. Files are never read whole:
``peek_source`` gives the decompressed head and ``open_stream`` a decompressing, guarded file
object for streaming parsers.

    head = peek_source("run.pt.trace.json.gz")   # first MiB, gunzipped
    with open_stream(path) as f:                  # reads raise TraceError past the bounds
        for chunk in iter(lambda: f.read(1 << 16), b""): ...

Bounds (whatever the input, so a hostile file costs bounded memory and work):
- a gzip file may expand at most ``gzip_ratio()`` times its size (default 100, at least
  64 MiB): a decompression bomb stops early. Override: ``gpudiag analyze --max-gzip-ratio``
  or ``GPUDIAG_MAX_GZIP_RATIO`` (``ReadLimits`` in ``limits.py`` carries it to workers).
- JSON may nest at most ``MAX_DEPTH`` levels and a string may be at most ``MAX_STRING``
  bytes long (``JsonGuard``, applied by ``open_stream(json_guard=True)``): the streaming
  parser then never builds an object larger than that.
"""

from __future__ import annotations

import contextlib
import os
import re
import zlib
from collections.abc import Iterator
from contextvars import ContextVar

import numpy as np

from gpudiag.trace.errors import TraceError, TruncatedTrace
from gpudiag.trace.source.decoded import GZIP_MAGIC, ByteReader, GzipDocument, Utf8

HEAD_BYTES = 1 << 20
DEFAULT_GZIP_RATIO = 100.0  # real traces expand 10-40x (sample_traces: 20-30x)
MIN_GZIP_LIMIT = 64 << 20  # small gzip files may always expand this far
MAX_DEPTH = 64  # trace events nest 3-5 levels (event > args > list > ...)
MAX_STRING = 16 << 20  # longest JSON string (op names, long_name: < 10 KiB in practice)
RATIO_ENV = "GPUDIAG_MAX_GZIP_RATIO"
_NON_BLANK = re.compile(rb"\S")
_ESCAPE = re.compile(rb"\\.", re.S)  # a backslash and the character it escapes
_STRING = re.compile(rb'"[^"]*"')  # a complete string, once escapes and text are gone
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'"[]{}'))
_OPEN = np.zeros(256, dtype=np.int64)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


_ratio: ContextVar[float | None] = ContextVar("gpudiag_gzip_ratio", default=None)


def gzip_ratio() -> float:
    """The limit of the read in progress (``limit_gzip_ratio``, which ``ReadLimits.applied``
    uses), else ``GPUDIAG_MAX_GZIP_RATIO``, else the default."""
    ratio = _ratio.get()
    if ratio is not None:
        return ratio
    try:
        return float(os.environ.get(RATIO_ENV, DEFAULT_GZIP_RATIO))
    except ValueError:
        return DEFAULT_GZIP_RATIO


@contextlib.contextmanager
def limit_gzip_ratio(ratio: float | None) -> Iterator[None]:
    """Gzip files opened inside may expand at most ``ratio`` times (None: the usual limit)."""
    token = _ratio.set(ratio)
    try:
        yield
    finally:
        _ratio.reset(token)


def _check_path(path: str) -> None:
    if not os.path.exists(path):
        raise TraceError(path, "no such file")
    if os.path.isdir(path):
        raise TraceError(
            path, "is a directory; pass the trace file itself (e.g. the .xplane.pb inside it)"
        )
    if not os.path.isfile(path):
        raise TraceError(path, "not a regular file (a FIFO, socket or device cannot be analyzed)")


def _blank(data: bytes) -> bool:
    """True for empty or whitespace-only data, without copying it (unlike ``strip``)."""
    return _NON_BLANK.search(data) is None


def is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


class BoundedReader:
    """A read-only stream that raises TraceError once more than ``limit`` bytes came out."""

    def __init__(self, inner: ByteReader, path: str, limit: int | None, guard: JsonGuard | None):
        self._inner = inner
        self._path = path
        self._limit = limit
        self._guard = guard
        self.consumed = 0

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = 1 << 20  # never the whole file at once
        data = self._inner.read(n)
        self.consumed += len(data)
        if self._limit is not None and self.consumed > self._limit:
            mib = self._limit / (1 << 20)
            raise TraceError(
                self._path,
                f"gzip expands beyond {mib:.0f} MiB ({gzip_ratio():g}x its size): a "
                f"decompression bomb? Raise the limit with --max-gzip-ratio or {RATIO_ENV}",
            )
        if self._guard is not None and data:
            self._guard.feed(data)
        return data

    def close(self) -> None:
        self._inner.close()


class JsonGuard:
    """Tracks JSON nesting depth and string length across chunks, at C speed (a regex drops
    complete strings, numpy sums the brackets left), and raises TraceError past the bounds.

    It does not parse: the streaming parser (ijson) reads the same bytes and reports syntax
    errors. It only keeps that parser from building something unbounded."""

    def __init__(self, path: str, max_depth: int = MAX_DEPTH, max_string: int = MAX_STRING):
        self.path = path
        self.max_depth = max_depth
        self.max_string = max_string
        self.depth = 0
        self._in_string = b""  # b'"' or b'"\\' while a string runs past a chunk end
        self._string_len = 0

    def feed(self, chunk: bytes) -> None:
        buf = self._in_string + chunk
        if b"\\" in buf:  # escape pairs first (a backslash ending the chunk waits for the next)
            trailing = len(buf) - len(buf.rstrip(b"\\"))
            tail = b"\\" if trailing % 2 else b""
            buf = _ESCAPE.sub(b"", buf[: len(buf) - len(tail)]) + tail
        # only quotes and brackets matter: drop everything else, then the complete strings
        rest = _STRING.sub(b"", buf.translate(None, _NOT_STRUCTURE))
        if self._in_string:  # the string carried over ends at the chunk's next quote
            end = buf.find(b'"', 1)
            self._check_string(self._string_len + (end if end > 0 else len(buf)) - 1)
        q = rest.find(b'"')
        if q >= 0:  # a string is still open at the end of this chunk
            # its opening quote is the chunk's last one (escapes are gone): the string runs
            # on from an earlier chunk only when that quote is the one carried over
            opened = buf.rfind(b'"')
            carried = self._string_len if self._in_string and opened == 0 else 0
            self._string_len = carried + len(buf) - opened - 1
            self._check_string(self._string_len)
            self._in_string = b'"\\' if buf.endswith(b"\\") else b'"'
            rest = rest[:q]
        else:
            self._in_string = b""
            self._string_len = 0
        brackets = rest.replace(b'"', b"")
        if not brackets:
            return
        steps = _OPEN[np.frombuffer(brackets, dtype=np.uint8)]
        levels = np.cumsum(steps) + self.depth
        if int(levels.max()) > self.max_depth:
            raise TraceError(self.path, f"JSON nested deeper than {self.max_depth} levels")
        self.depth = int(levels[-1])

    def _check_string(self, length: int) -> None:
        if length > self.max_string:
            raise TraceError(self.path, f"a JSON string longer than {self.max_string >> 20} MiB")


@contextlib.contextmanager
def open_stream(
    path: str, json_guard: bool = False, cut_ok: bool = False
) -> Iterator[BoundedReader]:
    """The file's decompressed bytes as a bounded stream (see the module docstring).
    Decompression errors surface as TraceErrors while it is read; ``cut_ok``: a gzip file
    cut mid-stream (still being written) ends where it was cut instead."""
    _check_path(path)
    try:
        gz = is_gzip(path)
        raw = open(path, "rb")  # noqa: SIM115  (closed with the stream)
        size = os.path.getsize(path)
    except OSError as e:
        raise TraceError(path, f"cannot read: {e.strerror or e}") from None
    stream = Utf8(GzipDocument(raw, path, cut_ok) if gz else raw)
    limit = max(int(gzip_ratio() * size), MIN_GZIP_LIMIT) if gz else None
    guard = JsonGuard(path) if json_guard else None
    bounded = BoundedReader(stream, path, limit, guard)
    try:
        with gzip_errors(path):
            yield bounded
    finally:
        bounded.close()


@contextlib.contextmanager
def gzip_errors(path: str) -> Iterator[None]:
    try:
        yield
    except EOFError:
        raise TruncatedTrace(path, "truncated gzip (the file ends mid-stream)") from None
    except zlib.error as e:
        raise TraceError(path, f"corrupt gzip data ({e})") from None
    except OSError as e:
        raise TraceError(path, f"cannot read: {e.strerror or e}") from None


def peek_source(path: str, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` decompressed bytes from the first non-blank one; TraceError for
    missing, empty, blank or unreadable files. Leading blank space is skipped chunk by chunk
    (a file of a billion empty lines is read at disk speed, within the gzip bound)."""
    _check_path(path)
    # the head of a gzip file cut short is still its head (the reader decides about the cut);
    # emptiness from what is read, not the size: /proc and other virtual files say 0
    with open_stream(path, cut_ok=True) as f:
        head = f.read(n)
        while head and _blank(head):
            head = f.read(n)
        if head:
            head = head.lstrip() + f.read(n - len(head.lstrip()))
    if not head:
        if is_gzip(path):
            raise TraceError(path, "gzip holds an empty file")
        raise TraceError(path, "file is empty" + (" (blank space only)" if f.consumed else ""))
    return head
