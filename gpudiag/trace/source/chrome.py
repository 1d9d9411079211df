"""Chrome Trace Event JSON: stream it, validate shape, index process and thread names.

Kineto, the TF trace viewer and gpudiag write this container; what the events *mean* is left
to their readers (``kineto/``, ``tf/viewer/``, ``native/``). Files are streamed, never whole
(a slice of about a MB of events at a time with orjson where they are a plain list of events,
else one at a time with ijson): ``doc.events`` re-reads the file each time it is iterated.

    doc = open_chrome(path)        # top-level keys, then one pass for the M (name) events
    for ev in doc.events: ...      # each event a dict, with finite numeric ts/dur
    doc.process_names              # {pid: "/device:GPU:0"}

``open_chrome(path, index=False)`` skips the pass for names; ``index_head`` then reads only
the metadata events that open the list, and a reader may apply later ones as they come
(``ChromeDoc.name``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from gpudiag.trace.errors import TraceError, TruncatedTrace
from gpudiag.trace.model.sink import MAX_KEYS
from gpudiag.trace.source.event_check import check_event, check_slice, json_kind
from gpudiag.trace.source.event_lines import NotLines, event_slices, read_top
from gpudiag.trace.source.files import open_stream

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency, but stay usable without it
    orjson = None  # type: ignore[assignment]

MAX_TOP_EVENTS = 100_000  # parser events kept per top-level value (deviceProperties...)
MAX_NAME = 1024  # characters kept of a process or thread name (real ones: < 100)
HEAD_EVENTS = 100_000  # leading metadata events read by index_head


@dataclass
class ChromeDoc:
    events: Iterable[dict[str, Any]]  # a list, or an EventStream (re-iterable)
    top: dict[str, Any] = field(default_factory=dict)  # keys beside traceEvents
    process_names: dict[Any, str] = field(default_factory=dict)
    thread_names: dict[tuple[Any, Any], str] = field(default_factory=dict)

    def name(self, ev: dict[str, Any]) -> Any:
        """Apply one metadata (``ph: M``) event to the name tables. Returns the key whose
        name it changed (a pid for a process, a (pid, tid) pair for a thread), else None.

        Each table keeps at most ``MAX_KEYS`` names of at most ``MAX_NAME`` characters,
        whatever the file holds; keys that cannot be looked up (lists) name nothing."""
        args = ev.get("args")
        if not isinstance(args, dict):
            return None
        what = ev.get("name")
        pid = ev.get("pid")
        key: Any
        table: dict[Any, str]
        if what == "process_name":
            key, table = pid, self.process_names
        elif what == "thread_name":
            key, table = (pid, ev.get("tid")), self.thread_names
        else:
            return None
        try:
            old = table.get(key)
        except TypeError:
            return None
        new = str(args.get("name", ""))[:MAX_NAME]
        if new == old or (old is None and len(table) >= MAX_KEYS):
            return None
        table[key] = new
        return key


class EventStream:
    """The events of a Chrome trace file, streamed anew on each iteration (bounded memory:
    a slice of events at a time, decoded by orjson where the file is a list of events
    (``event_lines.py``), else by ijson; ``open_stream`` bounds nesting, strings and gzip).
    Events with impossible times are left out; ``dropped`` counts them (the most any pass
    met: every pass reads the same events, a partial pass fewer)."""

    def __init__(self, path: str, prefix: str) -> None:
        self.path = path
        self.prefix = prefix
        self.dropped = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        given = dropped = 0
        try:
            if self.prefix == "traceEvents.item":  # orjson, a slice of events at a time
                try:
                    for events in event_slices(self.path):
                        kept = check_slice(events, self.path)
                        dropped += len(events) - len(kept)
                        yield from kept
                        given += len(events)
                    return
                except NotLines:
                    pass  # ijson gives the same events up to there: skip those
            import ijson

            with open_stream(self.path, json_guard=True) as f, json_errors(self.path):
                for ev in islice(ijson.items(f, self.prefix, use_float=True), given, None):
                    checked = check_event(ev, self.path)
                    if checked is None:
                        dropped += 1
                    else:
                        yield checked
        finally:
            self.dropped = max(self.dropped, dropped)


@contextlib.contextmanager
def json_errors(path: str) -> Iterator[None]:
    """ijson's errors as one-line TraceErrors."""
    import ijson

    try:
        yield
    except ijson.IncompleteJSONError as e:
        what = _first_line(e)
        if "premature EOF" in what or not what:
            raise TruncatedTrace(path, "truncated JSON (ends mid-document)") from None
        raise TraceError(path, f"invalid JSON ({what})") from None
    except ijson.JSONError as e:
        raise TraceError(path, f"invalid JSON ({_first_line(e) or 'parse error'})") from None
    except UnicodeDecodeError:
        raise TraceError(path, "not UTF-8 text") from None


def _first_line(e: Exception) -> str:
    """yajl's message without the input excerpt it quotes on the following lines."""
    msg = e.args[0] if e.args else ""
    if isinstance(msg, bytes):
        msg = msg.decode("utf-8", "replace")
    return str(msg).strip().split("\n")[0][:80]


def open_chrome(path: str, index: bool = True) -> ChromeDoc:
    """A streamed ChromeDoc: top-level keys read now, events on demand. ``index``: one pass
    now over the events to collect process/thread names (TF traces need them)."""
    top, prefix = _top_level(path)
    doc = ChromeDoc(events=EventStream(path, prefix), top=top)
    if prefix == "item":  # a bare JSON array: must look like trace events
        try:
            first = list(islice(_raw_items(path), 50))
        except TraceError as e:
            if INT_OVERFLOW not in e.problem:
                raise
            first = []  # integers beyond 64 bits among the first items: not trace events
        if not first or not all(isinstance(e, dict) and "ph" in e for e in first):
            raise TraceError(path, _describe_json(first))
    if index:
        index_names(doc)
    return doc


def _raw_items(path: str) -> Iterator[Any]:
    import ijson

    with open_stream(path, json_guard=True) as f, json_errors(path):
        yield from ijson.items(f, "item", use_float=True)


INT_OVERFLOW = "integer overflow"  # yajl's words for an integer beyond 64 bits


def _top_level(path: str) -> tuple[dict[str, Any], str]:
    """Keys of the top-level object written before ``traceEvents`` (Kineto and TF write
    their run facts first), and the ijson prefix of the event list: from the head decoded
    whole where it is small (``read_top``), else streamed by ijson. Valid JSON whose
    integers exceed 64 bits (rocprofiler-sdk's output, say), which the parser cannot take,
    is judged by whether it names ``traceEvents`` at all."""
    try:
        return read_top(path), "traceEvents.item"
    except NotLines:
        pass
    try:
        return _top_level_streamed(path)
    except TraceError as e:
        if INT_OVERFLOW not in e.problem:
            raise
        if not mentions(path, b'"traceEvents"'):
            raise TraceError(path, NO_TRACE_EVENTS) from None
        raise TraceError(
            path, "invalid JSON for gpudiag: an integer beyond 64 bits before its traceEvents"
        ) from None


def mentions(path: str, needle: bytes) -> bool:
    """Whether the decompressed file holds ``needle`` anywhere (read a chunk at a time,
    within the gzip bound)."""
    tail = b""
    with open_stream(path) as f:
        while chunk := f.read(1 << 20):
            if needle in tail + chunk:
                return True
            tail = chunk[-len(needle) :]
    return False


def _top_level_streamed(path: str) -> tuple[dict[str, Any], str]:
    import ijson
    from ijson.common import ObjectBuilder

    with open_stream(path, json_guard=True) as f, json_errors(path):
        parser = ijson.parse(f, use_float=True)
        _, event, _ = next(parser)
        if event == "start_array":
            return {}, "item"
        top: dict[str, Any] = {}
        key: str | None = None
        builder = ObjectBuilder()
        count = 0
        for prefix, event, value in parser:
            if prefix == "" and event in ("map_key", "end_map"):
                if key is not None and count <= MAX_TOP_EVENTS:
                    top[key] = builder.value
                if event == "end_map":
                    break
                if value == "traceEvents":
                    _, first, _ = next(parser)
                    if first != "start_array":
                        what = {
                            "start_map": "an object",
                            "string": "a string",
                            "null": "null",
                            "boolean": "a boolean",
                        }.get(first, "a number")
                        raise TraceError(
                            path, f"'traceEvents' is {what}, expected a list of events"
                        )
                    return top, "traceEvents.item"
                key, builder, count = value, ObjectBuilder(), 0
                continue
            count += 1
            if count <= MAX_TOP_EVENTS:
                builder.event(event, value)
    raise TraceError(path, _describe_json(top))


def index_names(doc: ChromeDoc) -> None:
    """Collect process and thread names from all the metadata (``ph: M``) events."""
    doc.process_names.clear()
    doc.thread_names.clear()
    for ev in doc.events:
        if ev.get("ph") == "M":
            doc.name(ev)


def index_head(doc: ChromeDoc, limit: int = HEAD_EVENTS) -> None:
    """Collect the names of the metadata events that open the event list (TensorFlow and
    xprof write them all first): the names a reader needs, without a pass over the file."""
    events = iter(doc.events)
    try:
        for ev in islice(events, limit):
            if ev.get("ph") != "M":
                break
            doc.name(ev)
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()  # the file behind a stream, now rather than when collected


NO_TRACE_EVENTS = "not a trace: a JSON object with no traceEvents"


def _describe_json(doc: Any) -> str:
    """What a JSON document that is not a trace is not, never what it holds: any JSON file
    the process can open may be named (through the MCP server too), so its keys and values
    are not repeated."""
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "cols" in doc[0]:
        return "an xprof tool result (a table such as overview_page), not a trace"
    if isinstance(doc, dict) and ("cols" in doc or "rows" in doc):
        return "an xprof tool result (a table), not a trace"
    if isinstance(doc, dict):
        return NO_TRACE_EVENTS
    if isinstance(doc, list):
        return "not a trace: a JSON list whose items are not trace events"
    return f"not a trace: {json_kind(doc)} of JSON"


def loads(raw: bytes | str) -> Any:
    """JSON decode with orjson (about twice as fast on large traces), stdlib as fallback."""
    if orjson is not None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # the stdlib parser below gives the precise error message
    return json.loads(raw)
