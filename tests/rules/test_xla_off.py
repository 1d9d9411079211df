"""``xla-off``: a compute-bound accelerator run without XLA."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import removed
from gpudiag.analyze.rules import xla_off as rule
from tests.rules.kit import evidence, situation

OFF = {"framework": "tensorflow", "jit_compile": False}


def found(compute: float = 0.8, **config):
    return rule.detect(evidence(config={**OFF, **config}, compute_frac=compute))


@pytest.mark.parametrize(
    ("compute", "fires"), [(T.COMPUTE_DOMINANT + 0.01, True), (T.COMPUTE_DOMINANT - 0.01, False)]
)
def test_compute_threshold(compute, fires):
    assert (found(compute) is not None) is fires


@pytest.mark.parametrize(
    "config",
    [
        {"jit_compile": True},  # in place
        {"jit_compile": None},  # unknown is not "off"
        {"framework": "jax"},  # always compiles with XLA
        {"device_type": "CPU"},  # measured slower on CPU
    ],
)
def test_withheld(config):
    assert found(**config) is None


def test_the_gain_is_the_typical_fusion_saving_of_compute():
    (sug,) = rule.advise(found(), situation(OFF, compute=0.8))
    lo, mid, hi = rule.FUSION_SAVING
    assert sug.expected_gain == pytest.approx(removed(0.8 * mid), abs=0.01)
    assert sug.expected_gain_range == [round(removed(0.8 * lo), 2), round(removed(0.8 * hi), 2)]
    assert "jit_compile=True" in sug.detail
