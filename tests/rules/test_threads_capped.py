"""``threads-capped``: a thread pool capped below the cores, on both sides of its thresholds
(the same cause planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import (
    threads_capped,
)
from tests.rules.kit import evidence, situation

CPU = {"device_type": "CPU"}


@pytest.mark.parametrize(
    ("process_pct", "compute", "severity"),
    [(98.0, 0.6, "moderate"), (50.0, 0.6, "info"), (98.0, 0.2, "info")],
)
def test_threads_capped_binding_only_when_the_cap_is_full_and_compute_large(
    process_pct, compute, severity
):
    cfg = {**CPU, "intra_op_threads": 1, "inter_op_threads": 1, "cores": 2}
    host = HostFacts(cpu_process=process_pct)
    f = threads_capped.detect(evidence(config=cfg, host=host, compute_frac=compute))
    assert f is not None and f.severity == severity
    (sug,) = threads_capped.advise(f, situation(config=cfg, host=host, compute=compute))
    assert sug.expected_gain_range[-1] <= 1 / ((1 - compute) + compute / 2) + 0.01
    assert (sug.expected_gain > 1.0) is (severity == "moderate")


def test_threads_not_capped_or_capped_at_the_cores_is_silent():
    for cap in (0, 2, None):
        cfg = {**CPU, "intra_op_threads": cap, "cores": 2}
        assert threads_capped.detect(evidence(config=cfg, compute_frac=0.9)) is None


def test_a_capped_pool_is_the_cores_a_bigger_batch_can_fill():
    from gpudiag.trace.model.runconfig import RunConfig

    assert RunConfig(cores=8, intra_op_threads=2).compute_cores == 2
    assert RunConfig(cores=8, intra_op_threads=0).compute_cores == 8
