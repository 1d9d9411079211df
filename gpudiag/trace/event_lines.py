"""Chrome trace JSON written one event per line, decoded a line at a time with orjson.

TensorFlow's profiler and xprof write the top-level keys and ``"traceEvents":[`` first,
then one event per line (``{...},``) and the closing ``]}``. orjson decodes such a line in a
third of the time ijson and the JSON guard take for the same bytes.

Only that layout is taken, so that the events are those ijson would give (and more: an
integer beyond 64 bits, valid JSON that ijson's yajl refuses, is a float here): the head
must decode as the top-level object with ``traceEvents`` its last key, each later line must
hold one event object with one comma between events, and what follows the list must close
the document. Anything else raises ``NotLines``; ``chrome.EventStream`` then streams the
file with ijson, skipping the events this gave (the layout held up to them, so they are the
same). The guard's bounds hold here too: a line is at most ``MAX_STRING`` bytes, and holds
at most ``MAX_DEPTH`` opening brackets.

    for ev in line_events(path): ...     # raises NotLines where the layout stops holding
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from gpudiag.trace.source import MAX_DEPTH, MAX_STRING, ByteReader, open_stream

MAX_HEAD = 1 << 20  # bytes of the head (before the events) and of the closing after them
CHUNK = 1 << 20
SHALLOW = 2 * MAX_DEPTH  # a line this short cannot nest deeper (each level takes two bytes)


class NotLines(Exception):
    """The file is not (or stops being) one event per line."""


def line_events(path: str) -> Iterator[Any]:
    """The events of a trace-viewer JSON file written one per line, in order."""
    with open_stream(path) as f:
        lines = _lines(f)
        _read_head(lines)
        more = True  # an event may come: after the opening bracket or a comma
        given = 0
        for line in lines:
            # the common line, one event and a comma: checked inline (a call costs a third)
            if (
                more
                and line[:1] == b"{"
                and line[-2:] == b"},"
                and (len(line) <= SHALLOW or line.count(b"{") + line.count(b"[") <= MAX_DEPTH)
            ):
                try:
                    ev = orjson.loads(line[:-1])
                except orjson.JSONDecodeError:
                    ev = None
                if type(ev) is dict:
                    given += 1
                    yield ev
                    continue
            s = line.strip()
            if s[:1] == b",":  # a comma opening the line instead of ending the last one
                if more:
                    raise NotLines
                more, s = True, s[1:].lstrip()
            if not s:
                continue
            comma = s[-1:] == b","
            if comma:
                s = s[:-1].rstrip()
            ev = _event(s)
            if ev is not None:
                if not more:
                    raise NotLines  # two events without a comma between them
                more = comma
                given += 1
                yield ev
                continue
            if comma:
                raise NotLines
            last = _close(s, lines, more and given > 0)
            if last is not None:
                if not more:
                    raise NotLines
                yield last
            return
    raise NotLines  # the file ends inside the list: truncated, said by the JSON parser


def _lines(f: ByteReader) -> Iterator[bytes]:
    buf = b""
    while chunk := f.read(CHUNK):
        parts = (buf + chunk).split(b"\n")
        buf = parts.pop()
        if len(buf) > MAX_STRING:
            raise NotLines  # the guard decides whether a line this long is a long string
        yield from parts
    if buf:
        yield buf


def _read_head(lines: Iterator[bytes]) -> None:
    """Consume the lines up to the opening bracket of the event list. Linear in the head:
    each line is looked at once (a head of a million blank lines must not cost a million
    copies of itself)."""
    parts: list[bytes] = []
    size = 0
    for line in lines:
        parts.append(line)
        size += len(line) + 1
        if line.rstrip().endswith(b"["):
            break
        if size > MAX_HEAD:
            raise NotLines
    head = b"\n".join(parts)
    try:
        top = orjson.loads(head + b"]}")
    except orjson.JSONDecodeError:
        raise NotLines from None
    if not isinstance(top, dict) or not top or list(top)[-1] != "traceEvents":
        raise NotLines
    if head.count(b'"traceEvents"') != 1:
        raise NotLines  # a second list of events (ijson would give both)


def _shallow(s: bytes) -> bool:
    return len(s) <= SHALLOW or s.count(b"{") + s.count(b"[") <= MAX_DEPTH


def _event(s: bytes) -> dict[str, Any] | None:
    if s[:1] != b"{" or s[-1:] != b"}" or not _shallow(s):
        return None
    try:
        ev = orjson.loads(s)
    except orjson.JSONDecodeError:
        return None
    return ev if isinstance(ev, dict) else None


def _close(s: bytes, lines: Iterator[bytes], after_comma: bool) -> dict[str, Any] | None:
    """Check that the line ``s`` closes the list and the rest of the file closes the
    document; returns the event before the closing bracket on the same line (xprof ends its
    list with ``{}]}``), or None."""
    rest = b"\n".join(_bounded(lines))
    if b'"traceEvents"' in rest or b'"traceEvents"' in s:
        raise NotLines  # a second list of events (ijson would give both)
    at = s.find(b"]")
    for _ in range(8):  # the closing bracket follows the line's last event, if any
        if at < 0:
            raise NotLines
        last = _event(s[:at].rstrip()) if at else None
        if at == 0 or last is not None:
            try:
                closed = orjson.loads(b'{"traceEvents":[' + s[at:] + b"\n" + rest)
            except orjson.JSONDecodeError:
                closed = None
            if isinstance(closed, dict):
                if at == 0 and after_comma:
                    raise NotLines  # a comma after the last event
                return last
        at = s.find(b"]", at + 1)
    raise NotLines


def _bounded(lines: Iterator[bytes]) -> Iterator[bytes]:
    size = 0
    for line in lines:
        size += len(line) + 1
        if size > MAX_HEAD:
            raise NotLines
        yield line
