"""One XSpace line decoded, its events a slice at a time where the line is large.

A line is kept serialized until it is read (``events.py``). Decoded whole, a line holds
every event's message at once: one line of 3 million events (39 MB) took 390 MB. A line
over ``SLICE_BYTES`` is decoded as its names and times, then its events a slice of about
``SLICE_BYTES`` at a time, each slice decoded by the protobuf runtime as a line of its own
(the wire format of a repeated field is its entries one after another).

    line = parse_line(raw, path)
    for ev in line.events: ...      # the same events, in order, either way
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.tf.xspace.counts import field_spans
from gpudiag.trace.tf.xspace.schema import XLine, XLineHead

SLICE_BYTES = 4 << 20  # decoded at once: its events' messages take a few times its size
EVENTS = 4  # XLine.events (xplane.proto)
EVENT_TAG = EVENTS << 3 | 2  # its tag: a length-delimited field


def parse_line(raw: bytes, path: str, head: bool = False) -> Any:
    """One line, decoded (``head``: its names only, its events left undecoded); a line
    larger than ``SLICE_BYTES`` gives its events a slice at a time."""
    if not head and len(raw) > SLICE_BYTES:
        return SlicedLine(raw, path)
    line = XLineHead() if head else XLine()
    _parse(line, raw, path)
    return line


def _parse(message: Any, raw: bytes, path: str) -> None:
    try:
        message.ParseFromString(raw)
    except Exception as e:  # protobuf's DecodeError
        raise TraceError(
            path, f"not a profiler trace: a protobuf whose lines do not decode ({e})"
        ) from None


class SlicedLine:
    """A large line: its own fields decoded, its events decoded a slice at a time on each
    pass over ``events``. Attributes other than ``events`` are the line's (``XLine``)."""

    def __init__(self, raw: bytes, path: str) -> None:
        self._raw, self._path = raw, path
        own = bytearray()  # the line's fields other than its events
        self._slices: list[tuple[int, int]] = []
        first = i = 0  # the slice being made starts at ``first``; ``i``: the next field
        size = len(raw)
        while i < size:
            # an event of under 128 bytes (a one-byte length: nearly all) is read inline
            length = raw[i + 1] if raw[i] == EVENT_TAG and i + 1 < size else 0x80
            if length < 0x80:
                end = i + 2 + length
            else:
                span = next(field_spans(raw, i, size), None)
                if span is None:  # malformed: decoded whole, the runtime says what is wrong
                    _parse(XLine(), raw, path)
                    break
                number, _, end = span
                if number != EVENTS:
                    if i > first:
                        self._slices.append((first, i))
                    own += raw[i:end]
                    first = i = end
                    continue
            if end - first > SLICE_BYTES and i > first:
                self._slices.append((first, i))
                first = i
            i = end
        if i > first:
            self._slices.append((first, min(i, size)))
        self._line = XLine()
        _parse(self._line, bytes(own), path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._line, name)

    @property
    def events(self) -> Iterator[Any]:
        for start, end in self._slices:
            part = XLine()
            _parse(part, self._raw[start:end], self._path)
            yield from part.events
