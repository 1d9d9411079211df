"""TensorFlow / JAX profiler ``.xplane.pb`` -> Timeline, decoded by xprof (never by hand).

xprof's ``trace_viewer`` tool turns the XSpace protobuf into trace-viewer events, which
``tfprof`` reads one at a time as xprof's converter makes them (not from the one JSON
string xprof would make of them all); ``overview_page`` gives xprof's own step breakdown,
used to cross-check ours.

    timelines = read_xplane("run/plugins/profile/.../host.xplane.pb")
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from gpudiag.trace.chrome import ChromeDoc, check_event, index_head, index_names, loads, open_chrome
from gpudiag.trace.errors import TraceError
from gpudiag.trace.quiet import quiet_stderr
from gpudiag.trace.tfprof import read_tf_stream, read_tf_trace
from gpudiag.trace.timeline import Timeline

INSTALL_HINT = "reading .xplane.pb needs xprof: pip install 'gpudiag[xplane]'"
TOOL = "trace_viewer"


def xprof_tool(path: str, tool: str) -> Any:
    """Run one xprof tool on an xplane file; returns its decoded JSON."""
    data = _run_xprof(path, lambda r2t, private: r2t.xspace_to_tool_data([private], tool, {})[0])
    try:
        return loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TraceError(path, f"xprof {tool} output is not JSON") from None


def _run_xprof(path: str, call: Callable[[Any, str], Any]) -> Any:
    """``call(raw_to_tool_data, private_path)``, with xprof's failures as TraceErrors."""
    try:
        with quiet_stderr():
            from xprof.convert import raw_to_tool_data as r2t
    except ImportError as e:
        if e.name and e.name.split(".")[0] != "xprof":  # xprof is there, a dependency is not
            raise TraceError(
                path, f"xprof cannot load (no module {e.name!r}): pip install 'gpudiag[xplane]'"
            ) from None
        raise TraceError(path, INSTALL_HINT) from None
    # xprof caches derived files (ALL_HOSTS.op_stats*.pb) beside its input: give it a private
    # directory so a user's (or a read-only) profile folder is never written to.
    try:
        with tempfile.TemporaryDirectory(prefix="gpudiag-xprof-") as tmp, quiet_stderr() as said:
            private = os.path.join(tmp, "profile.xplane.pb")
            try:
                os.symlink(os.path.abspath(path), private)
            except OSError:
                shutil.copyfile(path, private)
            data = call(r2t, private)
    except Exception as e:  # xprof raises assorted errors for bad protobufs
        raise TraceError(path, f"xprof could not decode it as an XSpace profile ({e})") from None
    if data is None or len(data) == 0:
        said_parse = any("parse" in ln.lower() for ln in said)
        why = "xprof: cannot parse as binary proto" if said_parse else ""
        raise TraceError(
            path,
            "not a profiler trace: xprof could not decode it as an XSpace protobuf"
            + (f" ({why})" if why else ""),
        )
    return data


REPLACEMENT_CHAR = "\ufffd".encode()
MANGLED_MIN = 8  # replacement characters: a stray one is text, a protobuf has hundreds


def text_problem(raw: bytes) -> str:
    """Why a file that decodes as text is not a trace, naming the usual accident: a binary
    ``.xplane.pb`` read and written back through a text decoder (bytes that were not UTF-8
    became U+FFFD, and protobuf field tags became control characters)."""
    head = raw[: 1 << 16]
    controls = sum(head.count(bytes([c])) for c in (0, 1, 2, 3, 8, 0x12, 0x1A))
    if head.count(REPLACEMENT_CHAR) >= MANGLED_MIN or controls > len(head) // 50:
        return (
            "a binary protobuf (.xplane.pb) mangled by a text decoder (bytes replaced by "
            "U+FFFD or control characters): copy the original file in binary mode"
        )
    return "not a trace: text that is neither JSON nor an XSpace protobuf"


def read_xplane(path: str) -> list[Timeline]:
    """xprof's trace viewer events of the profile, read one at a time as xprof's converter
    makes them: its JSON, decoded whole, held every event as a dict (3 GB more than xprof's
    own conversion for a 90 MB profile). The event stream is not public xprof API: where
    an xprof release lacks it, its public JSON output is written to a private file and
    streamed from there (bounded as any JSON trace, slower)."""
    if _event_stream_available():
        return _read_events(ChromeDoc(events=TraceEvents(_trace(path), path)), path)
    data = _run_xprof(path, lambda r2t, private: r2t.xspace_to_tool_data([private], TOOL, {})[0])
    with tempfile.TemporaryDirectory(prefix="gpudiag-xprof-") as tmp:
        json_path = os.path.join(tmp, "trace.json")
        with open(json_path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        del data
        return _read_events(open_chrome(json_path, index=False), path)


def _event_stream_available() -> bool:
    """xprof's Trace protobuf converter and its one-event-at-a-time JSON stream exist."""
    try:
        from xprof.convert import raw_to_tool_data as r2t
        from xprof.convert.trace_events_json import TraceEventsJsonStream
        from xprof.protobuf import trace_events_old_pb2  # noqa: F401
    except ImportError:
        return False
    return hasattr(r2t, "_pywrap_profiler_plugin") and hasattr(TraceEventsJsonStream, "_events")


def _read_events(doc: ChromeDoc, path: str) -> list[Timeline]:
    index_head(doc)  # xprof writes every process and thread name first
    if not any(ev.get("ph") == "X" for ev in doc.events):
        raise TraceError(path, "XSpace profile holds no timed events")
    timelines = read_tf_stream(doc, path, producer="xplane")
    if timelines is None:
        index_names(doc)
        timelines = read_tf_trace(doc, path, producer="xplane")
    return timelines


def _trace(path: str) -> Any:
    """The profile as xprof's trace viewer protobuf (``Trace``), before xprof turns it into
    one JSON string."""

    def convert(r2t: Any, private: str) -> bytes | None:
        raw, ok = r2t._pywrap_profiler_plugin.xspace_to_tools_data(
            [private], TOOL, {"use_saved_result": True}
        )
        return raw if ok else None

    raw = _run_xprof(path, convert)
    from xprof.protobuf import trace_events_old_pb2

    trace = trace_events_old_pb2.Trace()
    try:
        trace.ParseFromString(raw)
    except Exception as e:  # protobuf's DecodeError
        raise TraceError(path, f"xprof trace viewer output is not a Trace ({e})") from None
    return trace


class TraceEvents:
    """The events of a ``Trace`` as trace-viewer event dicts, made anew on each iteration
    by xprof's own converter (the one behind its JSON), one at a time."""

    def __init__(self, trace: Any, path: str) -> None:
        self.trace = trace
        self.path = path

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from xprof.convert.trace_events_json import TraceEventsJsonStream

        for ev in TraceEventsJsonStream(self.trace)._events():
            yield check_event(ev, self.path)


def xprof_overview(path: str) -> dict[str, float]:
    """xprof's own per-step averages (ms): step, device compute, input, other, ..."""
    tables = xprof_tool(path, "overview_page")
    for table in tables if isinstance(tables, list) else []:
        p = table.get("p", {}) if isinstance(table, dict) else {}
        if "steptime_ms_average" in p:
            keys = {
                "step": "steptime_ms_average",
                "device_compute": "device_compute_time_ms_avg",
                "input": "infeed_time_ms_avg",
                "other": "other_time_ms_avg",
                "collectives": "device_collectives_time_ms_avg",
                "kernel_launch": "kernel_launch_time_ms_avg",
                "host_compute": "host_compute_time_ms_avg",
                "device_to_device": "device_to_device_time_ms_avg",
            }
            out = {}
            for k, src in keys.items():
                try:
                    out[k] = float(p.get(src, "nan"))
                except ValueError:
                    out[k] = float("nan")
            return out
    raise TraceError(path, "xprof overview_page has no step-time table")


# xprof holds the whole XSpace and the events it derives from it while it converts: peak RSS
# of `gpudiag analyze` grew 35 MB per MB of xplane, from 443 MB (10.9 MB file) to 1,133 MB
# (30.5 MB file; Keras CPU profiles, benchmarks/README.md). The default keeps the whole
# process under the 300 MB bound every reader meets: 60 MB + 35 x 6 MB = 270 MB.
XPLANE_MB_PER_MB = 35
DEFAULT_MAX_XPLANE_MB = 6.0
XPLANE_LIMIT_ENV = "GPUDIAG_MAX_XPLANE_MB"


def xplane_limit_mb() -> float:
    """The bound from ``GPUDIAG_MAX_XPLANE_MB`` (``--max-xplane-mb`` sets it), else the
    default."""
    try:
        value = float(os.environ.get(XPLANE_LIMIT_ENV, DEFAULT_MAX_XPLANE_MB))
    except ValueError:
        return DEFAULT_MAX_XPLANE_MB
    return value if value > 0 else DEFAULT_MAX_XPLANE_MB


def check_xplane_size(path: str) -> None:
    """Refuse, before xprof starts, an xplane whose decoding would exceed the memory bound
    (``gpudiag analyze`` only: the callback's own profiler windows are not bounded here)."""
    mb = os.path.getsize(path) / 1e6
    limit = xplane_limit_mb()
    if mb > limit:
        need = 60 + XPLANE_MB_PER_MB * mb
        raise TraceError(
            path,
            f"a {mb:,.0f} MB xplane: xprof decodes it whole, about {need:,.0f} MB of memory, "
            f"beyond the {limit:g} MB bound on xplane files; raise it with --max-xplane-mb "
            f"or {XPLANE_LIMIT_ENV}",
        )
