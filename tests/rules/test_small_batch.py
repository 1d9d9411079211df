"""``small-batch``: a compute-bound device fed small batches."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import small_batch as rule
from tests.rules.kit import evidence, situation


def found(batch: int = 8, compute: float = 0.8, host: HostFacts | None = None, **config):
    cfg = {"global_batch": batch, **config}
    return rule.detect(evidence(config=cfg, host=host, compute_frac=compute))


@pytest.mark.parametrize(
    ("batch", "fires"), [(rule.SMALL_BATCH - 1, True), (rule.SMALL_BATCH, False)]
)
def test_batch_threshold(batch, fires):
    assert (found(batch) is not None) is fires


@pytest.mark.parametrize(
    ("compute", "fires"), [(T.COMPUTE_DOMINANT + 0.01, True), (T.COMPUTE_DOMINANT - 0.01, False)]
)
def test_only_when_compute_is_the_bottleneck(compute, fires):
    assert (found(compute=compute) is not None) is fires


def test_not_on_several_replicas_nor_inference():
    assert found(replicas=2) is None  # small-model-multi-gpu speaks there
    assert found(training=False) is None


def test_on_a_cpu_only_run_the_gain_counts_the_idle_cores():
    host = HostFacts(cpu_process=100.0)  # one of four cores busy
    cfg = {"global_batch": 8, "device_type": "CPU", "cores": 4}
    f = found(host=host, **cfg)
    assert f.evidence["cpu_this_run_p50_cores"] == 1.0 and f.evidence["cores"] == 4
    (cpu,) = rule.advise(f, situation(cfg, host, compute=0.8))
    (gpu,) = rule.advise(f, situation({"global_batch": 8}, compute=0.8))
    assert cpu.expected_gain_range[1] > gpu.expected_gain_range[1]
    assert gpu.expected_gain_range[0] == gpu.expected_gain_range[1]  # bigger kernels: not estimated
    assert f"batch_size={8 * rule.FACTOR}" in gpu.detail


def test_withheld_once_the_batch_is_large():
    assert found(4 * rule.SMALL_BATCH) is None
