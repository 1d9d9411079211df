"""xprof's own reading of an ``.xplane.pb``: its tools (``overview_page``...) and its trace
viewer events, run in C++ inside this process.

``gpudiag analyze`` does not use it (``reader.py`` decodes the XSpace itself); it is here for
xprof's own figures, which tests and benchmarks compare with gpudiag's. Before xprof starts,
the planes are counted: xprof starts one OS thread per plane, and a profile of a thousand
planes aborted the process (SIGABRT, nothing said).

    timelines = read_xplane_xprof("host.xplane.pb")   # xprof's trace viewer, then tf/viewer/
    tables = xprof_tool("host.xplane.pb", "overview_page")
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.quiet import quiet_stderr
from gpudiag.trace.source.chrome import ChromeDoc, loads, open_chrome
from gpudiag.trace.source.event_check import check_event

INSTALL_HINT = "reading .xplane.pb with xprof needs xprof: pip install 'gpudiag[xplane]'"
TOOL = "trace_viewer"
# xprof starts one thread per plane (8 MB of stack reserved each): 1,000 planes aborted under
# a 1 GB address-space cap. Real profiles hold a host plane and one per device (a TPU host
# with its SparseCores: a few dozen).
MAX_XPROF_PLANES = 64


def xprof_tool(path: str, tool: str) -> Any:
    """Run one xprof tool on an xplane file; returns its decoded JSON."""
    data = _run_xprof(path, lambda r2t, private: r2t.xspace_to_tool_data([private], tool, {})[0])
    try:
        return loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TraceError(path, f"xprof {tool} output is not JSON") from None


def count_planes(path: str) -> int:
    """Planes in the file (each left serialized: nothing but the list is decoded)."""
    from gpudiag.trace.tf.xspace.schema import XSpacePlanes

    space = XSpacePlanes()
    try:
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
    except OSError as e:
        raise TraceError(path, f"cannot read it ({e.strerror})") from None
    except Exception as e:  # protobuf's DecodeError
        raise TraceError(path, f"not a profiler trace: not an XSpace protobuf ({e})") from None
    return len(space.planes)


def _run_xprof(path: str, call: Callable[[Any, str], Any]) -> Any:
    """``call(raw_to_tool_data, private_path)``, with xprof's failures as TraceErrors."""
    planes = count_planes(path)
    if planes > MAX_XPROF_PLANES:
        raise TraceError(
            path,
            f"{planes:,} planes: xprof starts one thread per plane (a thousand aborted the "
            f"process); it is run on at most {MAX_XPROF_PLANES} (gpudiag analyze reads any)",
        )
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


def read_xplane_xprof(path: str) -> list[Timeline]:
    """The profile read through xprof's trace viewer events, one at a time as its converter
    makes them (where an xprof release lacks that stream, through its JSON in a private
    file): the reference the direct reader is compared with."""
    from gpudiag.trace.tf.xspace.gpu_facts import apply_gpu_facts, gpu_facts_of_file
    from gpudiag.trace.tf.xspace.reader import read_events

    if _event_stream_available():
        timelines = read_events(ChromeDoc(events=TraceEvents(_trace(path), path)), path)
    else:
        data = _run_xprof(
            path, lambda r2t, private: r2t.xspace_to_tool_data([private], TOOL, {})[0]
        )
        with tempfile.TemporaryDirectory(prefix="gpudiag-xprof-") as tmp:
            json_path = os.path.join(tmp, "trace.json")
            with open(json_path, "wb") as f:
                f.write(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
            del data
            timelines = read_events(open_chrome(json_path, index=False), path)
    apply_gpu_facts(timelines, gpu_facts_of_file(path))  # plane stats: not in xprof's events
    return timelines


def _event_stream_available() -> bool:
    """xprof's Trace protobuf converter and its one-event-at-a-time JSON stream exist."""
    try:
        from xprof.convert import raw_to_tool_data as r2t
        from xprof.convert.trace_events_json import TraceEventsJsonStream
        from xprof.protobuf import trace_events_old_pb2  # noqa: F401
    except ImportError:
        return False
    return hasattr(r2t, "_pywrap_profiler_plugin") and hasattr(TraceEventsJsonStream, "_events")


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
            checked = check_event(ev, self.path)
            if checked is not None:  # impossible times: events.py drops and counts them
                yield checked


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
