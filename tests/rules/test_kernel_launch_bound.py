"""``kernel-launch-bound``: many tiny kernels and an idle device: the host launches too slowly."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import batch_scaled
from gpudiag.analyze.rules import kernel_launch_bound as rule
from tests.rules.kit import evidence, situation, tiny_kernels


@pytest.mark.parametrize(
    ("idle", "found_as"),
    [
        (T.LAUNCH_IDLE_SHARE + 0.01, "moderate"),
        (T.LAUNCH_IDLE_SHARE - 0.01, None),
        (0.31, "high"),
        (0.29, "moderate"),
    ],
)
def test_idle_thresholds(idle, found_as):
    f = rule.detect(evidence(tiny_kernels(idle)))
    assert (f.severity if f else None) == found_as


@pytest.mark.parametrize(
    ("kernel_us", "fires"),
    [(T.LAUNCH_MEDIAN_KERNEL_US - 1, True), (T.LAUNCH_MEDIAN_KERNEL_US, False)],
)
def test_kernels_must_be_tiny(kernel_us, fires):
    f = rule.detect(evidence(tiny_kernels(0.4, kernel_us)))
    assert (f is not None) is fires


def test_evidence_counts_kernels_per_step():
    f = rule.detect(evidence(tiny_kernels(0.4)))
    assert f.evidence == {"idle_pct": 40.0, "median_kernel_us": 10.0, "kernels_per_step": 60.0}


def test_advises_fusion_in_the_framework_of_the_run():
    f = rule.detect(evidence(tiny_kernels(0.4)))
    (keras,) = rule.advise(f, situation({"framework": "tensorflow"}, other=0.4))
    (torch,) = rule.advise(f, situation({"framework": "pytorch"}, other=0.4))
    assert "jit_compile=True" in keras.detail and "torch.compile" in torch.detail
    assert keras.expected_gain == pytest.approx(batch_scaled(0.4, 2))


def test_withheld_when_the_step_is_already_compiled():
    f = rule.detect(evidence(tiny_kernels(0.4)))
    assert rule.advise(f, situation({"jit_compile": True}, other=0.4)) == []


def test_left_to_inference_trace_on_an_inference_run():
    f = rule.detect(evidence(tiny_kernels(0.4)))
    assert rule.advise(f, situation(findings=("inference-trace",), other=0.4)) == []


def test_stands_down_when_the_idle_time_is_untraced():
    """The host traced nothing in the idle time: it is untraced (``untraced-time``), not
    time between launches."""
    from gpudiag.trace.model.timeline import HOST_ACTIVITY, Intervals

    tl = tiny_kernels(0.6)
    assert rule.detect(evidence(tl)) is not None
    tl.meta.extra[HOST_ACTIVITY] = Intervals(
        [float(tl.steps.start[0])], [float(tl.steps.start[0]) + 1]
    )
    assert rule.detect(evidence(tl)) is None
    # host work traced through the idle time: the launches are the explanation again
    tl.meta.extra[HOST_ACTIVITY] = Intervals(
        [float(tl.steps.start.min())], [float(tl.steps.end.max())]
    )
    assert rule.detect(evidence(tl)) is not None
