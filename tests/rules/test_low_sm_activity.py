"""``low-sm-activity``: a compute-bound profile whose SMs GPM reads mostly idle."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze.rules import low_sm_activity as rule
from tests.helpers.synth import periodic
from tests.rules.kit import evidence, situation


def with_gpm(sm: float, compute: float = 0.9, readings: int = 8):
    """10 steps of 50 ms, compute ``compute`` of each; GPM every 50 ms over steps 1-9."""
    tl = periodic(steps=10, step_us=50_000.0, compute_frac=compute)
    ts = 50_000.0 * np.arange(1, readings + 2)
    for name, v in (("gpm_sm_active", sm), ("gpm_tensor_active", 0.0), ("gpu_util", 99.0)):
        tl.add_counter(name, "GPU 0", ts, np.full(ts.size, v))
    return evidence(tl=tl.freeze(), config={"device_type": "GPU", "training": True})


@pytest.mark.parametrize(
    ("sm", "found"),
    [(rule.SM_ACTIVE_LOW - 1, "moderate"), (rule.SM_ACTIVE_LOW + 1, None), (10.0, "high")],
)
def test_threshold(sm, found):
    f = rule.detect(with_gpm(sm))
    assert (f.severity if f else None) == found


def test_not_judged_when_not_compute_bound_or_too_few_readings():
    assert rule.detect(with_gpm(5.0, compute=0.3)) is None
    assert rule.detect(with_gpm(5.0, readings=1)) is None


def test_advises_a_bigger_batch_bounded_by_the_idle_sms():
    f = rule.detect(with_gpm(10.0))
    (sug,) = rule.advise(f, situation({"global_batch": 64, "training": True}, compute=0.9))
    assert sug.batch_factor == rule.BATCH_FACTOR and "batch_size=128" in sug.detail
    # 2x the work per kernel on idle SMs: compute 90% halves at most
    assert sug.expected_gain_range[1] == pytest.approx(1 / (0.1 + 0.9 / 2), abs=0.01)
    assert rule.advise(f, situation(findings=("small-batch",), compute=0.9)) == []
