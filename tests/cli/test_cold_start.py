"""What ``gpudiag --help`` and ``gpudiag analyze --json`` import: only what they use (on a
small trace, importing is most of the time; benchmarks/analyze_speed.py shows how much)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.paths import SAMPLES

SMALL = SAMPLES / "mi250_rocm_minitoy.json.gz"
PROBE = """
import io, json, sys
from contextlib import redirect_stdout
from gpudiag.cli import main
with redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:
        code = e.code
print(json.dumps([code, sorted(sys.modules)]))
"""
# never needed to print a verdict as JSON: the terminal and HTML views, the TF/xprof side
NOT_FOR_JSON = ("rich", "gpudiag.show", "gpudiag.trace.tf", "google", "ijson", "tensorflow")


def _imported(*args: str) -> tuple[int, list[str]]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    ).stdout
    code, modules = json.loads(out.splitlines()[-1])
    return code, modules


def test_analyze_json_imports_no_view_and_no_other_reader():
    code, modules = _imported("analyze", str(SMALL), "--json")
    assert code == 0
    assert "gpudiag.trace.kineto.reader" in modules  # the probe did read the trace
    assert [m for m in modules if m.startswith(NOT_FOR_JSON)] == []


def test_a_kineto_trace_imports_no_tf_reader_and_no_run_grouping():
    kineto = SMALL.parent / "resnet50_dataloader_workers0.pt.trace.json.gz"
    code, modules = _imported("analyze", str(kineto), "--json")
    assert code == 0 and "gpudiag.trace.kineto.reader" in modules
    # the TF readers (a Kineto head says what the file is) and the digest of several files
    assert [m for m in modules if m.startswith("gpudiag.trace.tf") or m == "hashlib"] == []


def test_a_trace_viewer_json_imports_no_xspace_module(tmp_path):
    """The XSpace side imports the trace-viewer reader, never the reverse."""
    from gpudiag.trace.tf.xspace.events import open_xspace

    events = list(open_xspace(str(SMALL.parent / "tf_gpu_multi_worker.xplane.pb")))
    path = tmp_path / "host.trace.json"
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    code, modules = _imported("analyze", str(path), "--json")
    assert code == 0 and "gpudiag.trace.tf.viewer.reader" in modules
    assert [m for m in modules if m.startswith("gpudiag.trace.tf.xspace")] == []


@pytest.mark.parametrize("args", [["--help"], ["analyze", "--help"], []])
def test_help_imports_neither_readers_nor_numpy(args):
    code, modules = _imported(*args)
    assert code == 0
    heavy = ("numpy", "rich", "gpudiag.trace.", "gpudiag.analyze", "gpudiag.show", "orjson")
    assert [m for m in modules if m.startswith(heavy)] == ["gpudiag.trace.errors"]
