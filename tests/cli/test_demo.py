"""The README's main job: gpudiag demo trains starved, applies the fix, reports the speed-up."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.train, pytest.mark.timeout(240)]
pytest.importorskip("tensorflow")


def test_demo_shows_both_diagnoses_and_a_measured_speedup(tmp_path):
    env = {**os.environ, "COLUMNS": "120", "TF_CPP_MIN_LOG_LEVEL": "3"}
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "demo", "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=200,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout
    assert "DATA-STARVED" in out
    assert "sequential-map" in out
    m = re.search(r"(\d+\.\d+)× faster", out)
    assert m is not None, out[-1500:]
    assert float(m.group(1)) >= 1.3  # the parallel map really is faster, even on 2 cores
    # the remedy applied is the one gpudiag suggested, and its estimate is printed beside
    assert re.search(r"Applying gpudiag's remedy #\d: Parallelise the tf.data map", out)
    assert re.search(r"gpudiag estimated \d+\.\d+×", out)
    assert (tmp_path / "starved.gpudiag.json").exists()
    assert (tmp_path / "fixed.gpudiag.json").exists()
    # no TensorFlow / absl log spam in what gpudiag prints
    assert "I0000" not in r.stderr and "W0000" not in r.stderr and "E0000" not in r.stderr
