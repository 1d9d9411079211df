"""Chrome Trace Event JSON: parse once, validate shape, index process and thread names.

Both Kineto and TensorFlow's trace viewer write this container; what the events *mean* is
left to ``kineto.py`` and ``tfprof.py``.

    doc = parse_chrome(raw, path)
    doc.events            # list of event dicts
    doc.process_names     # {pid: "GPU 0"}
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gpudiag.trace.errors import TraceError

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency, but stay usable without it
    orjson = None  # type: ignore[assignment]


@dataclass
class ChromeDoc:
    events: list[dict[str, Any]]
    top: dict[str, Any] = field(default_factory=dict)  # keys beside traceEvents
    process_names: dict[Any, str] = field(default_factory=dict)
    process_labels: dict[Any, str] = field(default_factory=dict)
    thread_names: dict[tuple[Any, Any], str] = field(default_factory=dict)


def _describe_json(doc: Any) -> str:
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "cols" in doc[0]:
        return "an xprof tool result (a table such as overview_page), not a trace"
    if isinstance(doc, dict) and ("cols" in doc or "rows" in doc):
        return "an xprof tool result (a table), not a trace"
    if isinstance(doc, dict):
        keys = ", ".join(sorted(doc)[:5]) or "none"
        return f"JSON object without 'traceEvents' (keys: {keys})"
    return f"JSON {type(doc).__name__}, not a trace"


def parse_chrome(raw: bytes, path: str) -> ChromeDoc:
    return chrome_doc(decode_json(raw, path), path)


def loads(raw: bytes) -> Any:
    """JSON decode with orjson (about twice as fast on large traces), stdlib as fallback."""
    if orjson is not None:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # the stdlib parser below gives the precise error message
    return json.loads(raw)


def decode_json(raw: bytes, path: str) -> Any:
    try:
        doc = loads(raw)
    except UnicodeDecodeError:
        raise TraceError(path, "not UTF-8 text") from None
    except json.JSONDecodeError as e:
        # cut off: the parser ran out of input, or a string runs to the end of the file
        end = len(raw.rstrip())
        at_end = e.pos >= end - 1 or (
            e.msg.startswith("Unterminated string") and b'"' not in raw[e.pos + 1:end]
        )
        what = "truncated JSON (ends mid-document)" if at_end else f"invalid JSON ({e.msg})"
        raise TraceError(path, f"{what} at line {e.lineno}") from None
    except RecursionError:
        raise TraceError(path, "JSON nested too deeply") from None
    return doc


def chrome_doc(doc: Any, path: str) -> ChromeDoc:
    """Validate a decoded Chrome trace and index its process and thread names."""
    if isinstance(doc, dict) and "traceEvents" in doc:
        events = doc["traceEvents"]
        top = {k: v for k, v in doc.items() if k != "traceEvents"}
    elif isinstance(doc, list) and all(isinstance(e, dict) and "ph" in e for e in doc[:50]) and doc:
        events, top = doc, {}
    else:
        raise TraceError(path, _describe_json(doc))
    if not isinstance(events, list):
        raise TraceError(path, f"'traceEvents' is a {type(events).__name__}, expected a list")
    out = ChromeDoc(events=events, top=top)
    for ev in events:
        if not isinstance(ev, dict):
            raise TraceError(path, f"trace event is a {type(ev).__name__}, expected an object")
        if ev.get("ph") != "M":
            continue
        args = ev.get("args")
        if not isinstance(args, dict):
            continue
        name = ev.get("name")
        if name == "process_name":
            out.process_names[ev.get("pid")] = str(args.get("name", ""))
        elif name == "process_labels":
            out.process_labels[ev.get("pid")] = str(args.get("labels", ""))
        elif name == "thread_name":
            out.thread_names[(ev.get("pid"), ev.get("tid"))] = str(args.get("name", ""))
    return out


def number(ev: dict[str, Any], key: str, path: str) -> float:
    """A numeric field of an event; a wrong type is a TraceError, not a crash."""
    v = ev.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, int | float):
        try:
            return float(v)
        except (TypeError, ValueError):
            raise TraceError(
                path, f"event {str(ev.get('name'))[:40]!r} has non-numeric {key!r}: {v!r}"
            ) from None
    return float(v)
