"""``tensor-cores-idle``: mixed precision whose tensor pipes GPM reads near zero."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze.rules import tensor_cores_idle as rule
from tests.helpers.synth import periodic
from tests.rules.kit import evidence, situation


def with_gpm(tensor: float, sm: float = 80.0, precision: str = "mixed_bfloat16"):
    tl = periodic(steps=10, step_us=50_000.0, compute_frac=0.9)
    ts = 50_000.0 * np.arange(1, 10)
    tl.add_counter("gpm_sm_active", "GPU 0", ts, np.full(ts.size, sm))
    tl.add_counter("gpm_tensor_active", "GPU 0", ts, np.full(ts.size, tensor))
    return evidence(tl=tl.freeze(), config={"device_type": "GPU", "precision": precision})


@pytest.mark.parametrize(
    ("tensor", "sm", "found"),
    [
        (rule.TENSOR_IDLE - 0.5, 80.0, True),
        (rule.TENSOR_IDLE + 0.5, 80.0, False),
        (0.0, rule.SM_BUSY - 1, False),  # idle SMs: nothing for the Tensor Cores to do
        (0.0, rule.SM_BUSY + 1, True),
    ],
)
def test_thresholds(tensor, sm, found):
    assert (rule.detect(with_gpm(tensor, sm)) is not None) is found


def test_only_under_a_reduced_precision_policy():
    assert rule.detect(with_gpm(0.0, precision="float32")) is None
    assert rule.detect(with_gpm(0.0, precision="mixed_float16")) is not None


def test_advice():
    f = rule.detect(with_gpm(0.1))
    (sug,) = rule.advise(f, situation(compute=0.8))
    assert sug.remedy == "tensor-core-shapes" and "multiples of 8" in sug.detail
    assert sug.expected_gain == 1.0
    assert sug.expected_gain_range[1] == pytest.approx(1 / 0.6, abs=0.01)
