"""What an XSpace holds, counted from its wire format before anything is decoded.

Decoding an ``.xplane.pb`` costs memory per metadata entry (event and stat names: about 200
bytes each in the protobuf runtime, more once read), per line and per plane, whatever the
file's size: 3 million unused metadata entries in a 67 MB file took 829 MB. The counts are
taken first, by walking the protobuf's two outer levels (the XSpace's planes, each plane's
fields) without decoding them, and the walk stops as soon as a bound is passed: a refusal
costs at most the bound's worth of steps.

    shape = xspace_shape(raw, XSpaceBounds())
    if shape.over is not None: refuse(shape.over)

Malformed bytes end the walk quietly; the protobuf runtime then says what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpudiag.trace.source.limits import XSpaceBounds

# field numbers of xplane.proto (schema.py): XSpace.planes; XPlane.lines,
# event_metadata, stat_metadata, stats
PLANES, LINES, EVENT_METADATA, STAT_METADATA, PLANE_STATS = 1, 3, 4, 5, 6
METADATA_FIELDS = (EVENT_METADATA, STAT_METADATA, PLANE_STATS)
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5


@dataclass
class XSpaceShape:
    planes: int = 0
    lines: int = 0
    metadata: int = 0
    over: str | None = None  # the first bound passed ("metadata", "lines", "planes")


def xspace_shape(data: bytes, bounds: XSpaceBounds) -> XSpaceShape:
    """The counts of ``data``'s planes, lines and metadata, up to the first bound passed."""
    shape = XSpaceShape()
    for field, start, end in _fields(data, 0, len(data)):
        if field != PLANES:
            continue
        shape.planes += 1
        if shape.planes > bounds.planes:
            shape.over = "planes"
            break
        _count_plane(data, start, end, shape, bounds)
        if shape.over is not None:
            break
    return shape


# one-byte tags of the plane's fields counted (length-delimited: wire type 2)
_LINE_TAG = LINES << 3 | LENGTH
_METADATA_TAGS = frozenset(f << 3 | LENGTH for f in METADATA_FIELDS)


def _count_plane(data: bytes, i: int, end: int, shape: XSpaceShape, bounds: XSpaceBounds) -> None:
    """Count one plane's lines and metadata (the loop every entry goes through: a tag and a
    length of one byte each are read inline, anything else by ``_fields``)."""
    lines, metadata = shape.lines, shape.metadata
    max_lines, max_metadata = bounds.lines, bounds.metadata
    while i < end:
        tag = data[i]
        size = data[i + 1] if i + 1 < end else 0x80
        if size >= 0x80 or tag >= 0x80 or tag & 7 != LENGTH:
            # the general case, one field at a time
            field = next(_fields(data, i, end), None)
            if field is None:
                break
            number, _, i = field
            tag = number << 3 | LENGTH
        else:
            i += 2 + size
        if tag == _LINE_TAG:
            lines += 1
            if lines > max_lines:
                shape.over = "lines"
                break
        elif tag in _METADATA_TAGS:
            metadata += 1
            if metadata > max_metadata:
                shape.over = "metadata"
                break
    shape.lines, shape.metadata = lines, metadata


def field_spans(data: bytes, i: int, end: int) -> Iterator[tuple[int, int, int]]:
    """(field number, start of its tag, end) of every field between ``i`` and ``end``,
    whatever its wire type. Stops at the first malformed byte."""
    while i < end:
        field = _field_at(data, i, end)
        if field is None:
            return
        number, _, _, after = field
        yield number, i, after
        i = after


def _fields(data: bytes, i: int, end: int) -> Iterator[tuple[int, int, int]]:
    """(field number, payload start, payload end) of each length-delimited field between
    ``i`` and ``end``; other wire types are skipped. Stops at the first malformed byte."""
    while i < end:
        field = _field_at(data, i, end)
        if field is None:
            return
        number, wire, payload, i = field
        if wire == LENGTH:
            yield number, payload, i


def _field_at(data: bytes, i: int, end: int) -> tuple[int, int, int, int] | None:
    """The field whose tag starts at ``i``: (number, wire type, where its value starts, where
    it ends), or None where it is malformed or runs past ``end``."""
    tag, i = _varint(data, i, end)
    if tag < 0:
        return None
    wire = tag & 7
    payload = i
    if wire == VARINT:
        _, i = _varint(data, i, end)
    elif wire == FIXED64:
        i += 8
    elif wire == FIXED32:
        i += 4
    elif wire == LENGTH:
        size, payload = _varint(data, i, end)
        i = payload + size if size >= 0 else -1
    else:
        return None
    if i < 0 or i > end:
        return None
    return tag >> 3, wire, payload, i


def _varint(data: bytes, i: int, end: int) -> tuple[int, int]:
    """The varint at ``i`` and the index after it; (-1, -1) when it runs past ``end``."""
    value = shift = 0
    while i < end and shift < 64:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7
    return -1, -1
