"""Optional dependencies: without xprof an .xplane.pb is refused in one line saying what to
install; TensorFlow is never imported for JSON traces or compare."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import SAMPLES

XPLANE = str(SAMPLES / "tf_gpu_multi_worker.xplane.pb")
KINETO = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_xplane_without_xprof_is_one_line_naming_the_extra():
    r = _run(
        "import sys; sys.modules['xprof'] = None; from gpudiag.cli import main; "
        f"raise SystemExit(main(['analyze', {XPLANE!r}]))"
    )
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and XPLANE in lines[0], r.stderr
    assert "pip install 'gpudiag[xplane]'" in lines[0]


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
        "import sys; sys.modules['six'] = None; from gpudiag.cli import main; "
        f"raise SystemExit(main(['analyze', {XPLANE!r}]))"
    )
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "xprof cannot load (no module 'six')" in lines[0], r.stderr
