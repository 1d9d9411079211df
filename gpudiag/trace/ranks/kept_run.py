"""A profile directory DiagnoseCallback kept (``profile_dir=``): one run, not one per window.

Each profiler window writes its own raw profile there (``plugins/profile/<time>/<host>
.xplane.pb``, a Kineto JSON). Read alone, they look like unrelated traces, and each holds five
steps of the run without the host's signals, the whole run's step times or its configuration.
So at the end of the run the callback copies its own trace into the directory and writes a
manifest naming the trace and the window files; ``gpudiag analyze DIR`` then reads the trace,
which holds every window already, and reaches the callback's verdict and figures.

    write_manifest(profile_dir, trace_path, run_id, ["plugins/profile/…/host.xplane.pb"])
    files_of_kept_run(profile_dir, trace_files(profile_dir))   # [the trace, other files]
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from gpudiag.trace.errors import TraceError

MANIFEST = "gpudiag-run.manifest"  # no trace suffix: older readers skip it
FORMAT = "gpudiag-kept-run"
TRACE_NAME = "gpudiag-trace.json"  # the copy of the callback's trace, beside the windows


def write_manifest(folder: str, trace_path: str, run_id: str, windows: list[str]) -> str | None:
    """Copy the run's trace into ``folder`` (unless it is there already) and name it and the
    window files in the manifest; a problem as one line, or None."""
    try:
        trace, home = os.path.abspath(trace_path), os.path.abspath(folder)
        if os.path.commonpath([trace, home]) == home:  # written there already
            rel = os.path.relpath(trace, home)
        else:
            rel = TRACE_NAME
            shutil.copyfile(trace, os.path.join(folder, rel))
        body = {"format": FORMAT, "version": 1, "run_id": run_id, "trace": rel, "windows": windows}
        with open(os.path.join(folder, MANIFEST), "w", encoding="utf-8") as f:
            json.dump(body, f, indent=1)
        return None
    except OSError as e:
        return f"profile_dir: the trace could not be kept beside the windows ({e})"


def _manifest(folder: str) -> dict[str, Any] | None:
    path = os.path.join(folder, MANIFEST)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            body = json.load(f)
    except (OSError, ValueError) as e:
        raise TraceError(path, f"unreadable manifest ({type(e).__name__})") from None
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise TraceError(path, "not a gpudiag kept-run manifest")
    if not isinstance(body.get("trace"), str) or not isinstance(body.get("windows"), list):
        raise TraceError(path, "manifest without its trace or windows")
    return body


def files_of_kept_run(folder: str, found: list[str]) -> list[str]:
    """The files of ``folder`` to read: where it is a kept run, its trace instead of its
    windows (which the trace holds); ``found`` as it is otherwise. TraceError when the
    manifest names a trace that is gone."""
    body = _manifest(folder)
    if body is None:
        return found
    trace = os.path.normpath(os.path.join(folder, body["trace"]))
    if not os.path.isfile(trace):
        raise TraceError(
            trace,
            "the run's trace, which holds its profiler windows and its whole-run signals, is "
            "missing from the directory the callback kept; analyze the trace it wrote",
        )
    windows = {os.path.normpath(os.path.join(folder, str(w))) for w in body["windows"]}
    rest = [p for p in found if os.path.normpath(p) not in windows | {trace}]
    return [trace, *rest]
