"""Optional dependencies: an .xplane.pb is analyzed without xprof; xprof's own tools, without
xprof, fail in one line saying what to install; TensorFlow is never imported for JSON traces
or compare."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import SAMPLES

XPLANE = str(SAMPLES / "tf_gpu_multi_worker.xplane.pb")
KINETO = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_xplane_is_analyzed_without_xprof_or_tensorflow():
    r = _run(
        "import sys; sys.modules['xprof'] = None; from gpudiag.cli import main; "
        f"code = main(['analyze', {XPLANE!r}, '--json']); "
        "heavy = ('tensorflow', 'keras', 'xprof'); "
        "print('IMPORTED', [m for m in heavy if sys.modules.get(m)]); raise SystemExit(code)"
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "IMPORTED []" in r.stdout and '"verdict"' in r.stdout


def test_xprof_tool_without_xprof_is_one_line_naming_the_extra():
    r = _run(
        "import sys; sys.modules['xprof'] = None; "
        "from gpudiag.trace.tf.xspace.by_xprof import xprof_overview; "
        f"xprof_overview({XPLANE!r})"
    )
    last = r.stderr.strip().splitlines()[-1]
    assert "TraceError" in last and "pip install 'gpudiag[xplane]'" in last, r.stderr


def test_compare_and_html_do_not_import_tensorflow(tmp_path):
    out = tmp_path / "r.html"
    r = _run(
        "import sys; from gpudiag.cli import main; "
        f"main(['compare', {KINETO!r}, {KINETO!r}, '--json']); "
        f"main(['analyze', {KINETO!r}, '--html', {str(out)!r}, '--json']); "
        "heavy = ('tensorflow', 'keras', 'xprof'); "
        "print('IMPORTED', [m for m in heavy if m in sys.modules])"
    )
    assert "IMPORTED []" in r.stdout, r.stderr[-2000:]
    assert out.stat().st_size > 10_000


def test_xprof_with_a_missing_dependency_names_it():
    r = _run(
        "import sys; sys.modules['six'] = None; "
        "from gpudiag.trace.tf.xspace.by_xprof import xprof_overview; "
        f"xprof_overview({XPLANE!r})"
    )
    last = r.stderr.strip().splitlines()[-1]
    assert "xprof cannot load (no module 'six')" in last, r.stderr
