"""``full-precision``: a compute-bound GPU run in float32."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import removed
from gpudiag.analyze.rules import full_precision as rule
from tests.rules.kit import evidence, situation


def found(compute: float = 0.8, device: str = "GPU 0", **config):
    return rule.detect(evidence(config=config, compute_frac=compute, device=device))


@pytest.mark.parametrize(
    ("compute", "fires"), [(T.COMPUTE_DOMINANT + 0.01, True), (T.COMPUTE_DOMINANT - 0.01, False)]
)
def test_compute_threshold(compute, fires):
    assert (found(compute) is not None) is fires


def test_unknown_precision_counts_as_float32():
    assert found().evidence["precision"] == "unknown"
    assert found(precision="float32") is not None


@pytest.mark.parametrize(
    "config",
    [
        {"precision": "mixed_float16"},  # already in place
        {"precision": "mixed_bfloat16"},
        {"device_type": "TPU"},  # bfloat16 passes by default
        {"device_type": "CPU"},  # no tensor cores
    ],
)
def test_withheld(config):
    assert found(**config) is None


def test_the_remedy_speaks_the_framework_and_inference_gets_no_training_policy():
    f = found()
    (keras,) = rule.advise(f, situation({"framework": "tensorflow"}, compute=0.8))
    (torch,) = rule.advise(f, situation({"framework": "pytorch"}, compute=0.8))
    (serve,) = rule.advise(f, situation({"training": False}, compute=0.8))
    assert "mixed_float16" in keras.detail and "torch.autocast" in torch.detail
    assert serve.title == "Run inference in bfloat16"
    assert keras.expected_gain == pytest.approx(removed(0.4))


@pytest.mark.parametrize(
    ("cc", "says", "never"),
    [
        (7.0, "mixed_float16", "mixed_bfloat16"),  # V100: float16 Tensor Cores only
        (7.5, "mixed_float16", "mixed_bfloat16"),  # T4, RTX 20xx
        (8.0, "mixed_bfloat16", "float8"),
        (8.9, "float8", None),
    ],
)
def test_the_precision_follows_the_compute_capability(cc, says, never):
    f = found(compute_capability=cc, framework="tensorflow")
    assert f.evidence["compute_capability"] == cc
    (s,) = rule.advise(f, situation({"compute_capability": cc}, compute=0.8))
    text = f"{s.title} {s.detail}"
    assert says in text and f"compute capability {cc:.1f}" in s.basis
    if never:
        assert never not in text


def test_no_remedy_on_a_gpu_without_tensor_cores():
    f = found(compute_capability=6.1)
    assert f is not None and rule.advise(f, situation({"compute_capability": 6.1})) == []


def test_unknown_capability_says_which_precision_fits_which_gpu():
    (s,) = rule.advise(found(), situation(compute=0.8))
    assert "compute capability 7.x" in s.detail and "not in the profile" in s.basis
