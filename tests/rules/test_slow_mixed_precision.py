"""``slow-mixed-precision``: half precision where the device runs it slowly, on both sides of
its thresholds (the same cause planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import (
    slow_mixed_precision,
)
from tests.rules.kit import evidence, situation

CPU = {"device_type": "CPU"}


@pytest.mark.parametrize(
    ("config", "fires"),
    [
        ({**CPU, "precision": "mixed_float16"}, True),
        ({**CPU, "precision": "float32"}, False),
        ({"device_type": "GPU", "precision": "mixed_float16", "compute_capability": 6.1}, True),
        ({"device_type": "GPU", "precision": "mixed_float16", "compute_capability": 7.0}, False),
        ({"device_type": "GPU", "precision": "mixed_bfloat16", "compute_capability": 7.5}, True),
        ({"device_type": "GPU", "precision": "mixed_bfloat16", "compute_capability": 8.0}, False),
        ({"device_type": "GPU", "precision": "mixed_float16"}, False),  # capability not known
    ],
)
def test_slow_mixed_precision_by_device(config, fires):
    assert (
        slow_mixed_precision.detect(evidence(config=config, compute_frac=0.9)) is not None
    ) is fires


def test_slow_mixed_precision_gain_bounded_by_the_compute():
    cfg = {**CPU, "precision": "mixed_float16"}
    f = slow_mixed_precision.detect(evidence(config=cfg, compute_frac=0.9))
    assert f.severity == "high"
    (sug,) = slow_mixed_precision.advise(f, situation(config=cfg, compute=0.9))
    c = 0.9
    assert sug.expected_gain == pytest.approx(1 / ((1 - c) + c / 2), rel=0.01)
    assert sug.expected_gain_range[-1] == pytest.approx(1 / (1 - c), rel=0.01)
    low = slow_mixed_precision.detect(evidence(config=cfg, compute_frac=0.4))
    assert low.severity == "moderate"
