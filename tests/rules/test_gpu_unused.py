"""``gpu-unused``: a GPU NVML sees that the framework leaves unused, on both sides of its
thresholds (the same cause planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import (
    gpu_unused,
)
from tests.rules.kit import evidence, situation

CPU = {"device_type": "CPU"}


def test_gpu_unused_needs_a_gpu_nvml_sees_and_the_framework_does_not():
    base = {"framework": "tensorflow", "gpu_build": "cpu-only"}
    f = gpu_unused.detect(evidence(config={**base, "nvml_gpus": 1, "framework_gpus": 0}))
    assert f is not None and f.evidence["cause"] == "a CPU-only build"
    assert gpu_unused.detect(evidence(config={**base, "nvml_gpus": 0, "framework_gpus": 0})) is None
    assert gpu_unused.detect(evidence(config={**base, "nvml_gpus": 1})) is None  # not read
    win = {"framework": "tensorflow", "os": "win32", "nvml_gpus": 1, "framework_gpus": 0}
    f = gpu_unused.detect(evidence(config=win))
    assert "native Windows" in f.title
    (sug,) = gpu_unused.advise(f, situation(config=win, compute=0.8))
    assert "WSL2" in sug.detail and sug.expected_gain_range[-1] == pytest.approx(5.0)


def test_gpu_unused_with_a_gpu_listed_is_silent():
    cfg = {"framework": "tensorflow", "nvml_gpus": 2, "framework_gpus": 2}
    assert gpu_unused.detect(evidence(config=cfg)) is None
