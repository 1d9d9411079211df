"""DiagnoseCallback on Keras's JAX and torch backends (run where those are installed).

The project's test environment has TensorFlow only, so these skip there; they run wherever
jax or torch is importable (e.g. a GPU machine with JAX).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.train, pytest.mark.timeout(300)]


def _run(backend: str, trace: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    r = subprocess.run(
        [sys.executable, "-m", "tests.scenarios", "other_backend", trace],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=280,
        env=env,
    )
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, r.stderr[-3000:]
    return json.loads(line[len("RESULT ") :])


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax not installed")
def test_jax_backend_profiles_steps_and_gives_a_verdict(tmp_path):
    result = _run("jax", str(tmp_path / "jax.json"))
    d = result["diagnosis"]
    assert result["backend"] == "jax"
    assert d["steps"]["analyzed"] == 5  # jax.profiler window with StepTraceAnnotation markers
    assert d["verdict"] in ("compute-bound", "data-starved")
    assert d["breakdown"]["compute"] > 0.3


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
def test_torch_backend_records_and_says_what_it_could_not_measure(tmp_path):
    result = _run("torch", str(tmp_path / "torch.json"))
    d = result["diagnosis"]
    assert result["backend"] == "torch"
    assert d["steps"]["count"] == 64
    if d["verdict"] == "inconclusive":  # CPU-only torch: Kineto records no device activity
        assert "no device activity" in d["reason"]
        assert any("no GPU events" in lim for lim in d["limitations"])
    else:  # on a GPU the window's kernels are matched to the steps
        assert d["steps"]["analyzed"] == 5
