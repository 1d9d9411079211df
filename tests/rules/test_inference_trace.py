"""``inference-trace``: no backward pass, no optimizer step; launch-bound decoding named."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.rules import inference_trace as rule
from tests.rules.kit import evidence, situation, text, tiny_kernels

INFERENCE = {"training": False}


def found(idle: float, kernel_us: float = 10.0, **config):
    return rule.detect(evidence(tiny_kernels(idle, kernel_us), {**INFERENCE, **config}))


def test_only_on_inference():
    assert found(0.4, training=None) is None
    assert found(0.4, training=True) is None


@pytest.mark.parametrize(
    ("idle", "kernel_us", "severity"),
    [
        (T.LAUNCH_IDLE_SHARE + 0.01, 10.0, "moderate"),
        (T.LAUNCH_IDLE_SHARE - 0.01, 10.0, "info"),
        (0.31, 10.0, "high"),
        (0.29, 10.0, "moderate"),
        (0.4, T.LAUNCH_MEDIAN_KERNEL_US - 1, "high"),
        (0.4, T.LAUNCH_MEDIAN_KERNEL_US, "info"),
    ],
)
def test_launch_bound_decode_uses_the_kernel_launch_thresholds(idle, kernel_us, severity):
    assert found(idle, kernel_us).severity == severity


def test_without_steps_it_is_said_plainly():
    from gpudiag.trace.model.timeline import Timeline

    f = rule.detect(evidence(Timeline(), INFERENCE))
    assert f.severity == "info" and f.evidence["backward_ops"] == 0
    assert rule.advise(f, situation(INFERENCE)) == []


DECODING = {**INFERENCE, "framework": "pytorch", "decode_loop": True}
ENCODER = {**INFERENCE, "framework": "pytorch", "decode_loop": False}


def test_eager_pytorch_decode_is_told_about_cuda_graphs():
    f = found(0.4, **DECODING)
    assert "eager decode" in f.title
    (sug,) = rule.advise(f, situation(DECODING, other=0.4))
    assert sug.title == "Capture decoding in CUDA graphs"
    assert "gradient" not in text([sug]).lower()


def test_an_encoder_without_a_decode_loop_hears_no_decoding_advice():
    """bert-small / ViT inference: tiny kernels, no KV cache, no per-token steps."""
    f = found(0.4, **ENCODER)
    assert "decode" not in f.title
    (sug,) = rule.advise(f, situation(ENCODER, other=0.4))
    assert sug.title == "Capture the forward pass in CUDA graphs"
    assert not any(w in text([sug]).lower() for w in ("kv cache", "decod", "vllm", "gradient"))


def test_unknown_decode_loop_gets_the_forward_remedy_and_what_a_decode_loop_adds():
    cfg = {**INFERENCE, "framework": "pytorch"}
    (sug,) = rule.advise(found(0.4, **cfg), situation(cfg, other=0.4))
    assert sug.title == "Capture the forward pass in CUDA graphs"
    assert "If this is a token-by-token decode loop" in sug.detail


def test_withheld_when_the_step_already_replays_cuda_graphs():
    ev = evidence(tiny_kernels(0.4), DECODING)
    ev.timeline.meta.extra["cuda_graph_launches"] = 50
    f = rule.detect(ev)
    assert "CUDA-graph decode" in f.title
    (sug,) = rule.advise(f, situation({**INFERENCE, "framework": "pytorch"}, other=0.4))
    assert sug.title == "Batch more requests per step"
