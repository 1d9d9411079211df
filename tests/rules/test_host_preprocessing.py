"""``host-preprocessing``: device idle while the host runs CPU ops that launch nothing."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.rules import host_preprocessing as rule
from gpudiag.trace.model.timeline import HOST_COMPUTE, Intervals, Kind, Timeline
from tests.rules.kit import evidence, situation


def _timeline(pre_us: float, step_us: float = 10_000.0, steps: int = 6, quiet: bool = True):
    """Each step: ``pre_us`` of host work (no launch inside when ``quiet``) with the device
    idle, then device compute for the rest of the step."""
    tl = Timeline()
    starts = np.arange(steps) * step_us
    tl.add_steps(range(steps), starts, starts + step_us)
    tl.add_activity("GPU 0", Kind.COMPUTE, starts + pre_us, starts + step_us)
    if quiet:
        tl.meta.extra[HOST_COMPUTE] = Intervals(starts, starts + pre_us)
        tl.meta.extra["host_compute_ops_ms"] = {"aten::upsample_bilinear2d": 5.0}
    return tl.freeze()


@pytest.mark.parametrize(
    ("share", "severity"),
    [
        (rule.SHARE - 0.01, None),
        (rule.SHARE + 0.01, "moderate"),
        (T.INPUT_HIGH - 0.01, "moderate"),
        (T.INPUT_HIGH + 0.01, "high"),
    ],
)
def test_thresholds(share, severity):
    f = rule.detect(evidence(_timeline(share * 10_000.0)))
    assert (f.severity if f else None) == severity


def test_launching_host_work_is_not_preprocessing():
    assert rule.detect(evidence(_timeline(4000.0, quiet=False))) is None


def test_short_idle_stretches_are_launch_gaps_not_preprocessing():
    """Between an eager model's kernels: stretches under GAP_US."""
    tl = _timeline(rule.GAP_US * 0.9, step_us=rule.GAP_US * 3)
    assert rule.detect(evidence(tl)) is None


def test_input_waits_are_left_to_input_wait():
    tl = Timeline()
    starts = np.arange(6) * 10_000.0
    tl.add_steps(range(6), starts, starts + 10_000.0)
    tl.add_activity("GPU 0", Kind.COMPUTE, starts + 4000, starts + 10_000.0)
    tl.meta.extra[HOST_COMPUTE] = Intervals(starts, starts + 4000)
    tl.add_input_wait(starts, starts + 4000, names=["DataLoader"] * 6)
    assert rule.detect(evidence(tl.freeze())) is None


def test_preprocessing_remedy_and_framework_work_remedy():
    f = rule.detect(evidence(_timeline(4000.0)))
    assert "preprocesses (aten::upsample_bilinear2d)" in f.title
    (sug,) = rule.advise(f, situation({"framework": "pytorch"}))
    assert "DataLoader workers" in sug.detail and sug.expected_gain > 1.3
    f.evidence["top_host_ops_ms"] = {"aten::unflatten_dense_tensors": 15.0}
    (sug,) = rule.advise(f, situation({"framework": "pytorch"}))
    assert sug.title == "Take the host's CPU work out of the step"
    assert "aten::unflatten_dense_tensors" in sug.detail
