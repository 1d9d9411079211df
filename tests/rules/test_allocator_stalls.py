"""``allocator-stalls``: the host blocks in device memory allocation calls while the device
idles."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import removed
from gpudiag.analyze.rules import allocator_stalls as rule
from tests.helpers.synth import periodic
from tests.rules.kit import evidence, situation


def found(stall: float, call: str = "cudaFree", **config):
    """1 ms steps computing half the step; ``call`` blocks ``stall`` of each step in the idle
    half, and as long again while the device computes (that part costs nothing)."""
    tl = periodic(compute_frac=0.5)
    for i in range(10):
        t = i * 1000.0
        tl.add_host_call(call, [t + 500 - stall * 1000, t + 500], [t + 500, t + 500 + stall * 1000])
    return rule.detect(evidence(tl, config))


@pytest.mark.parametrize(
    ("stall", "found_as"),
    [
        (T.INPUT_MODERATE + 0.01, "moderate"),
        (T.INPUT_MODERATE - 0.01, None),
        (T.INPUT_HIGH + 0.01, "high"),
        (T.INPUT_HIGH - 0.01, "moderate"),
    ],
)
def test_thresholds_count_only_the_blocked_time_the_device_idles(stall, found_as):
    f = found(stall)
    assert (f.severity if f else None) == found_as


def test_evidence_names_the_calls():
    f = found(0.1, "hipFree")
    assert "hipFree" in f.title
    assert f.evidence["calls"] == {"hipFree": 20}
    assert f.evidence["allocator_stall_pct"] == pytest.approx(10.0)
    assert f.evidence["host_in_allocator_pct"] == pytest.approx(20.0)


def test_synchronising_calls_are_not_allocator_calls():
    assert found(0.3, "cudaStreamSynchronize") is None


@pytest.mark.parametrize(
    ("framework", "words"),
    [
        ("pytorch", "PYTORCH_NO_CUDA_MEMORY_CACHING"),
        ("jax", "XLA_PYTHON_CLIENT_ALLOCATOR=platform"),
        ("tensorflow", "TF_GPU_ALLOCATOR=cuda_malloc"),
    ],
)
def test_the_remedy_names_the_switch_of_the_framework(framework, words):
    f = found(0.3)
    (sug,) = rule.advise(f, situation({"framework": framework}))
    assert words in sug.detail
    assert sug.expected_gain == pytest.approx(removed(0.3 * 0.9))
