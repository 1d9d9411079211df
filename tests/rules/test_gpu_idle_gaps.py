"""``gpu-idle-gaps``: an accelerator idles in gaps between bursts."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import gpu_idle_gaps as rule
from tests.rules.kit import evidence, situation


def found(idle: float, device: str = "GPU 0", **config):
    # 10 ms steps: the idle tail of each step is one gap well above GAP_MIN_US
    return rule.detect(
        evidence(config=config, step_us=10_000, compute_frac=1 - idle, device=device)
    )


@pytest.mark.parametrize(
    ("idle", "found_as"),
    [
        (rule.GAPS_SHARE_FINDING + 0.01, "moderate"),
        (rule.GAPS_SHARE_FINDING - 0.01, None),
        (0.31, "high"),
        (0.29, "moderate"),
    ],
)
def test_thresholds(idle, found_as):
    f = found(idle)
    assert (f.severity if f else None) == found_as


def test_gaps_shorter_than_a_launch_latency_are_not_gaps():
    # the same 11% idle on 0.5 ms steps is 55 µs per step: below GAP_MIN_US
    assert rule.detect(evidence(step_us=500, compute_frac=0.89)) is None


def test_evidence_places_the_gaps():
    f = found(0.2)
    assert f.evidence["gaps_per_step"] == 1.0
    assert f.evidence["longest_gap_ms"] == 2.0
    assert f.evidence["at_step_boundary_pct"] == 100.0


def test_never_on_a_cpu_only_run():
    assert found(0.4, device_type="CPU") is None
    assert found(0.4, device="CPU:0") is None


def test_advises_nothing_itself():
    # the gaps are explained and fixed by the input or launch findings
    assert rule.advise(found(0.4), situation(other=0.4, compute=0.6)) == []
