"""Chrome trace JSON decoded by orjson a slice of events at a time, at the speed of the parser.

Kineto, TensorFlow's profiler and xprof write the top-level keys and ``"traceEvents":[`` first,
then the events separated by commas (one per line, or indented over several), then ``]}``.
Here the event list is cut after a ``}`` and its comma, about every ``CHUNK`` bytes, and each
slice decoded as one JSON array by orjson: a third of the time ijson and the JSON guard take
for the same bytes, a few percent above ``orjson.loads`` of the whole document.

The events are those ijson would give (and more: an integer beyond 64 bits, valid JSON that
ijson's yajl refuses, is a float here). A slice that decodes as an array of complete values
and starts where the last one ended holds exactly the events the whole document holds there
(JSON values end where their own bytes say); a cut inside a string or an object does not
decode and a cut further back is tried. The head must decode as the top-level object with
``traceEvents`` its last key, and what follows the list must close the document without a
second list. Anything else raises ``NotLines``; ``chrome.EventStream`` then streams the file
with ijson, skipping the events given here (the same up to there).

The JSON guard's bounds hold on every slice at about a tenth of the guard's cost: a slice is
at most ``MAX_STRING`` bytes (so no string in it can be longer; a longer one is left to ijson
and the guard) and nests at most ``MAX_DEPTH`` levels (``max_depth``: numpy over its brackets
and quotes); the gzip bound is ``open_stream``'s.

    top = read_top(path)                 # the keys before the events
    for events in event_slices(path): ...   # lists; NotLines where the layout stops holding
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson

from gpudiag.trace.errors import TraceError
from gpudiag.trace.source import files
from gpudiag.trace.source.files import ByteReader, open_stream

# bytes of the head: each parser event takes a byte at least, so no top-level key holds more
# than chrome.MAX_TOP_EVENTS (which ijson's reading keeps) and the keys are the same
MAX_HEAD = 100_000
CHUNK = 1 << 20  # bytes read, and decoded, at a time: a few MB of events in memory
MAX_SLICE = 8 * CHUNK  # longest undecodable run before ijson takes over
TRIES = 3  # cuts tried per chunk, from the last one back
_LIST = re.compile(rb'"traceEvents"\s*:\s*\[')
_CUT = re.compile(rb"\}\s*,")  # the end of an object and the comma after it
_WINDOW = 1 << 16  # bytes at the end of the buffer searched for cuts first
_NOT_STRUCTURE = bytes(set(range(256)) - set(b'"[]{}'))
_STEP = np.zeros(256, dtype=np.int8)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1
_QUOTE = ord('"')


class NotLines(Exception):
    """The file is not (or stops being) a list of events this reader can cut."""


def event_slices(path: str) -> Iterator[list[Any]]:
    """The events of a trace-viewer JSON file, in order, a slice (a list) at a time."""
    with open_stream(path) as f:
        _, buf = _read_head(f, path)
        cut_before = False  # a comma was cut off: a value must follow it
        eof = False
        while not eof:
            chunk = f.read(CHUNK)
            eof = not chunk
            buf += chunk
            if eof or len(buf) < CHUNK:
                continue
            got = _decode_slice(buf, path)
            if got is None:
                if len(buf) > min(MAX_SLICE, _longest()):
                    raise NotLines  # no cut decodes: not a list of events, or a huge one
                continue
            events, end = got
            if end > _longest():
                raise NotLines  # a string may be this long: the guard decides
            buf = buf[end:]
            cut_before = True
            yield events
        yield _close(buf, path, cut_before)


def line_events(path: str) -> Iterator[Any]:
    """The events one by one (``event_slices`` flattened)."""
    for events in event_slices(path):
        yield from events


def read_top(path: str) -> dict[str, Any]:
    """The top-level keys written before ``traceEvents``, from the head decoded whole (a head
    small enough to hold fewer parser events than ``chrome.MAX_TOP_EVENTS`` per key)."""
    with open_stream(path) as f:
        top, _ = _read_head(f, path)
    return top


def _read_head(f: ByteReader, path: str) -> tuple[dict[str, Any], bytes]:
    """Consume the head up to the opening bracket of the event list; returns the keys before
    it and what was read after it."""
    buf = b""
    while True:
        buf = buf.lstrip()  # blank lines before the document: dropped as they come
        key = buf.find(b'"traceEvents"')
        m = _LIST.match(buf, key) if key >= 0 else None
        if m is not None:
            break
        chunk = f.read(CHUNK)
        if not chunk or len(buf) > MAX_HEAD:
            raise NotLines
        buf += chunk
    if m.end() > MAX_HEAD:
        raise NotLines
    head = buf[: m.end()]
    try:
        top = orjson.loads(head + b"]}")
    except orjson.JSONDecodeError:
        raise NotLines from None
    if not isinstance(top, dict) or list(top)[-1] != "traceEvents":
        raise NotLines
    _check_depth(head + b"]}", 0, path)
    del top["traceEvents"]
    return top, buf[m.end() :]


def _decode_slice(buf: bytes, path: str) -> tuple[list[Any], int] | None:
    """The events of ``buf`` up to its last cut that decodes, and where the rest begins."""
    start = max(0, len(buf) - _WINDOW)
    cuts = [m for m in _CUT.finditer(buf, start)] or list(_CUT.finditer(buf))
    for m in reversed(cuts[-TRIES:]):
        body = buf[: m.start() + 1]
        try:
            events = _decode(b"[" + body + b"]")
        except orjson.JSONDecodeError:
            continue
        _check_depth(body, 2, path)
        return events, m.end()
    return None


def _close(rest: bytes, path: str, cut_before: bool) -> list[Any]:
    """The last events, and a check that ``rest`` closes the list and the document."""
    if len(rest) > min(MAX_SLICE, _longest()) or b'"traceEvents"' in rest:
        raise NotLines  # a second list of events (ijson would give both)
    try:
        doc = _decode(b'{"traceEvents":[' + rest)
    except orjson.JSONDecodeError:
        raise NotLines from None  # truncated, or not JSON: said by ijson
    events = doc["traceEvents"]
    if cut_before and not events:
        raise NotLines  # a comma after the last event
    _check_depth(rest, 2, path)
    return events if isinstance(events, list) else []


def _decode(data: bytes) -> Any:
    """orjson.loads with the cyclic garbage collector off: decoded JSON holds no cycles, and
    the collector's passes over every object alive (the imports' too), set off by the
    thousands of objects a slice makes, cost a seventh of reading a trace."""
    was = gc.isenabled()
    gc.disable()
    try:
        return orjson.loads(data)
    finally:
        if was:
            gc.enable()


def max_depth(data: bytes) -> int:
    """The deepest nesting of brackets in ``data``, complete JSON values and the commas
    between them (brackets inside strings do not count): numpy, at a few hundred MB/s."""
    if b"\\" in data:  # escaped backslashes, then escaped quotes: no longer quotes
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # quotes and brackets only; two quotes side by side enclose no bracket between them
    # (removing them leaves every bracket inside or outside a string as it was)
    kept = data.translate(None, _NOT_STRUCTURE).replace(b'""', b"").replace(b'""', b"")
    marks = np.frombuffer(kept, dtype=np.uint8)
    if not len(marks):
        return 0
    steps = _STEP[marks]
    if b'"' in kept:  # a string holds brackets: those do not count
        steps *= (np.cumsum(marks == _QUOTE, dtype=np.int32) & 1) == 0
    return int(np.cumsum(steps, dtype=np.int32).max())


def _longest() -> int:
    """Bytes a slice may hold: no string in it can then be longer than the guard allows."""
    return files.MAX_STRING


def _check_depth(data: bytes, level: int, path: str) -> None:
    """The guard's bound, and its words: ``data`` sits ``level`` levels in."""
    if level + max_depth(data) > files.MAX_DEPTH:
        raise TraceError(path, f"JSON nested deeper than {files.MAX_DEPTH} levels")
