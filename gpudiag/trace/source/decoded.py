"""A trace file's bytes as the readers want them: gunzipped, and as UTF-8.

- gzip is decompressed one member at a time. Several members are valid gzip (some writers
  flush one per block), but a member that starts a new JSON document right after one ended
  (``cat a.json.gz b.json.gz``) is two files in one: refused, where reading on would take
  the second run's steps as more steps of the first.
- A UTF-8 byte-order mark is dropped; UTF-16 with its mark (what PowerShell's ``>`` writes)
  is transcoded to UTF-8, so every reader sees the same bytes either way.

    stream = utf8(GzipDocument(open(path, "rb"), path))    # a ByteReader
"""

from __future__ import annotations

import codecs
import zlib
from typing import Protocol

from gpudiag.trace.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
RAW_CHUNK = 1 << 17
DEFAULT_READ = 1 << 20


class ByteReader(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class GzipDocument:
    """The decompressed bytes of a gzip file holding one document (see the module
    docstring). Truncation raises EOFError (unless ``cut_ok``: a reader of a format that
    reads up to a cut, such as gpudiag's own), corruption zlib.error (``gzip_errors`` in
    ``files.py`` words them)."""

    def __init__(self, raw: ByteReader, path: str, cut_ok: bool = False) -> None:
        self._raw = raw
        self._path = path
        self._cut_ok = cut_ok  # a stream cut mid-member ends there (``cut`` says so)
        self.cut = False
        self._d = zlib.decompressobj(31)  # gzip wrapper: header, CRC and size checked
        self._last = b""  # the last non-blank byte given out
        self._boundary = False  # a new member began: its first non-blank byte is checked
        self._feed = b""  # compressed bytes read ahead, to decompress next

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # ijson asks for nothing to learn whether the stream gives bytes
            return b""
        if n is None or n < 0:
            n = DEFAULT_READ
        while True:
            d = self._d
            if d.eof:
                if not self._next_member(d.unused_data):
                    return b""
                continue
            data = d.unconsumed_tail or self._input()
            if not data:
                if self._cut_ok:
                    self.cut = True
                    return b""
                raise EOFError("gzip ends mid-stream")
            out = d.decompress(data, n)
            if out:
                return self._seen(out)

    def _input(self) -> bytes:
        if self._feed:
            data, self._feed = self._feed, b""
            return data
        return self._raw.read(RAW_CHUNK)

    def _next_member(self, rest: bytes) -> bool:
        """After a member: True if another one follows, False at the end (zero padding
        allowed, as gzip allows it); anything else is corrupt."""
        while len(rest) < 2:
            more = self._raw.read(RAW_CHUNK)
            if not more:
                break
            rest += more
        if rest[:2] == GZIP_MAGIC:
            self._d = zlib.decompressobj(31)
            self._feed = rest
            self._boundary = True
            return True
        while rest:
            if rest.strip(b"\0"):
                raise zlib.error("data after the end of the gzip stream")
            rest = self._raw.read(RAW_CHUNK)
        return False

    def _seen(self, out: bytes) -> bytes:
        if self._boundary:
            first = out.lstrip()[:1]
            if first:
                self._boundary = False
                if self._last in (b"}", b"]") and first in (b"{", b"["):
                    raise TraceError(
                        self._path,
                        "gzip holds two JSON documents, one after the other (two files "
                        "concatenated?): analyze each file on its own",
                    )
        tail = out[-256:].rstrip()[-1:] or out.rstrip()[-1:]  # no copy of the chunk
        if tail:
            self._last = tail
        return out

    def close(self) -> None:
        self._raw.close()


class Utf8:
    """The stream with a UTF-8 byte-order mark dropped, and UTF-16 (told by its mark)
    transcoded to UTF-8; any other stream passes through untouched."""

    def __init__(self, inner: ByteReader) -> None:
        self._inner = inner
        self._started = False
        self._decoder: codecs.IncrementalDecoder | None = None

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # ijson asks for nothing to learn whether the stream gives bytes
            return b""
        if n is None or n < 0:
            n = DEFAULT_READ
        data = self._inner.read(n)
        if not self._started:
            self._started = True
            while 0 < len(data) < 3:  # enough to see a mark
                more = self._inner.read(n)
                if not more:
                    break
                data += more
            if data.startswith(codecs.BOM_UTF8):
                data = data[3:] or self._inner.read(n)
            elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                self._decoder = codecs.getincrementaldecoder("utf-16")("replace")
        if self._decoder is None:
            return data
        while True:  # a chunk may end mid-character: read on until some text comes out
            text = self._decoder.decode(data, final=not data)
            if text or not data:
                return text.encode("utf-8", "replace")
            data = self._inner.read(n)

    def close(self) -> None:
        self._inner.close()
