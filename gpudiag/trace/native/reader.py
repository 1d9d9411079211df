"""gpudiag's own trace format: streamed Chrome Trace Event JSON (see docs/trace-format.md).

One event per line in a JSON array, written as ``[`` then ``{first}`` then ``,{next}`` lines
and a closing ``]``. Perfetto and chrome://tracing open it (the array format allows the
closing bracket to be missing), and a file cut off mid-write (training killed) still reads up
to its last complete line.

    timelines = read_gpudiag("run.gpudiag.json")

The file is streamed line by line (a line may be at most ``MAX_LINE`` bytes; orjson bounds
nesting), so memory holds the Timeline being built, not the file.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.timeline import CUT_SHORT, Timeline
from gpudiag.trace.native.events import (
    CAT_CALLBACK,
    CAT_COMPILE,
    CAT_DEVICE,
    CAT_FINDING,
    CAT_INPUT,
    CAT_OWN,
    CAT_PIPELINE,
    CAT_SPAN,
    CAT_STEP,
    CAT_STEP_GROUP,
    CAT_WINDOW,
    DEVICE_PID_BASE,
    FORMAT_NAME,
    FORMAT_VERSION,
    HOST_PID,
    MAX_FINDINGS,
    META_EVENT,
    META_UPDATE,
    TimelineBuilder,
    fill_timeline,
    metadata_from,
    validate_event,
)
from gpudiag.trace.source.chrome import loads
from gpudiag.trace.source.event_check import check_event, check_slice, dropped_note
from gpudiag.trace.source.files import ByteReader, open_stream

# the format's names and builder live in events.py; importable from here as well
__all__ = [
    "CAT_CALLBACK",
    "CAT_COMPILE",
    "CAT_DEVICE",
    "CAT_FINDING",
    "CAT_INPUT",
    "CAT_OWN",
    "CAT_PIPELINE",
    "CAT_SPAN",
    "CAT_STEP",
    "CAT_STEP_GROUP",
    "CAT_WINDOW",
    "DEVICE_PID_BASE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "HOST_PID",
    "MAX_FINDINGS",
    "MAX_LINE",
    "META_EVENT",
    "META_UPDATE",
    "TimelineBuilder",
    "fill_timeline",
    "iter_lines",
    "metadata_from",
    "parse_line",
    "read_gpudiag",
    "validate_event",
]

MAX_LINE = 16 << 20  # the writer's lines are < 4 KiB; a longer one is not an event
_NON_BLANK = re.compile(rb"\S")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_line(line: str | bytes) -> dict[str, Any] | None:
    """One line of a gpudiag stream as an event; None for brackets and blank lines.
    Raises ValueError for a line that is not a complete event (NaN/Infinity included)."""
    s = line.strip()
    if s in ("", "[", "]", b"", b"[", b"]"):
        return None
    if s[:1] in (",", b","):
        s = s[1:]
    if s[-1:] in ("]", b"]"):
        s = s[:-1]
    try:
        ev = loads(s) if not isinstance(s, bytes) else _loads_bytes(s)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(ev, dict):
        raise ValueError("not a trace event object")
    return ev


def _loads_bytes(s: bytes) -> Any:
    try:
        return orjson.loads(s)
    except ValueError:
        pass  # a lone surrogate escape orjson refuses; NaN / Infinity stay refused below
    return json.loads(s, parse_constant=_reject_constant)


def iter_lines(f: ByteReader, path: str) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of the non-blank lines (``line_chunks`` one line at a time)."""
    for first, lines in line_chunks(f, path):
        for i, line in enumerate(lines):
            if _NON_BLANK.search(line) is not None:
                yield first + i, line


def line_chunks(f: ByteReader, path: str) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the first line, the complete lines, blank ones too) of about a MB at a
    time; blank chunks are skipped at C speed and a line longer than ``MAX_LINE`` is a
    TraceError, so memory stays bounded."""
    buf = b""
    lineno = 0
    while True:
        chunk = f.read(1 << 20)
        if not chunk:
            break
        if not buf and _NON_BLANK.search(chunk) is None:
            lineno += chunk.count(b"\n")
            continue
        parts = (buf + chunk).split(b"\n")
        buf = parts.pop()
        if parts:
            yield lineno + 1, parts
            lineno += len(parts)
        if len(buf) > MAX_LINE:
            raise TraceError(
                path,
                f"line {lineno + 1} is longer than {MAX_LINE >> 20} MiB: not a gpudiag trace event",
            )
    if _NON_BLANK.search(buf) is not None:
        yield lineno + 1, [buf]


def _decode_lines(lines: list[bytes]) -> list[Any] | None:
    """Every line of a chunk decoded as one event by orjson, at C speed (no Python call per
    line); None where any line is not simply one (a bracket, a blank, a bad line, NaN): then
    ``parse_line`` decides line by line, with the same result for the good ones."""
    try:
        events = list(map(orjson.loads, [ln[1:] if ln[:1] == b"," else ln for ln in lines]))
    except ValueError:
        return None
    return events if all(type(ev) is dict for ev in events) else None


class _Events:
    """The events of a gpudiag stream, in order; ``truncated`` is set when the last line was
    cut off (the run was killed mid-write). A bad line before the last is corruption."""

    def __init__(self, chunks: Iterable[tuple[int, list[bytes]]], path: str) -> None:
        self._chunks = chunks
        self.path = path
        self.truncated = False
        self.closed = False  # the last line holds the closing bracket: the run ended
        self.dropped = 0  # events with impossible times (event_check.check_event), left out

    def __iter__(self) -> Iterator[dict[str, Any]]:
        bad: int | None = None
        last = b""
        for first, lines in self._chunks:
            events = _decode_lines(lines) if bad is None else None
            if events is not None:  # the common chunk: every line an event
                last = lines[-1]
                kept = check_slice(events, self.path)
                self.dropped += len(events) - len(kept)
                yield from kept
                continue
            for lineno, line in enumerate(lines, first):
                if _NON_BLANK.search(line) is None:
                    continue
                last = line
                if bad is not None:
                    raise TraceError(self.path, f"corrupt gpudiag trace at line {bad}")
                try:
                    ev = parse_line(line)
                except ValueError:
                    bad = lineno
                    continue
                if ev is not None:
                    checked = check_event(ev, self.path)
                    if checked is None:
                        self.dropped += 1
                    else:
                        yield checked
        self.truncated = bad is not None
        self.closed = bad is None and last.rstrip().endswith(b"]")


def read_gpudiag(src: str | bytes, path: str | None = None) -> list[Timeline]:
    """The Timeline of a gpudiag trace file (``src`` a path), or of its bytes held in memory
    (``src`` bytes, ``path`` naming where they were meant to go)."""
    if isinstance(src, bytes):
        return _read_stream(io.BytesIO(src), path or "<memory>")
    with open_stream(src, cut_ok=True) as f:  # a .gz still being written: up to the cut
        return _read_stream(f, src)


def _read_stream(f: ByteReader, path: str) -> list[Timeline]:
    events = _Events(line_chunks(f, path), path)
    it = iter(events)
    header_ev = next(it, None)
    if header_ev is None or header_ev.get("name") != META_EVENT:
        raise TraceError(path, "not a gpudiag trace (no gpudiag.metadata header)")
    header = header_ev.get("args")
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise TraceError(path, "gpudiag.metadata header names another format")
    version = header.get("version", 0)
    if not isinstance(version, int | float) or not math.isfinite(version):
        bad = str(version)[:20]
        raise TraceError(path, f"gpudiag.metadata has a malformed version {bad!r}")
    if version > FORMAT_VERSION:
        raise TraceError(path, f"trace format version {version} is newer than this gpudiag")
    try:
        tl = Timeline(meta=metadata_from(header, path))
        fill_timeline(tl, it)
    except (KeyError, TypeError, ValueError, OverflowError) as e:
        raise TraceError(path, f"malformed gpudiag event ({type(e).__name__}: {e})") from None
    if events.truncated or not events.closed:
        tl.meta.limitations.append(CUT_SHORT)
    if events.dropped:
        tl.meta.limitations.append(dropped_note(events.dropped))
    return [tl.freeze()]
