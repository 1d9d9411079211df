"""``layout-transposes``: NHWC<->NCHW conversion kernels, one name table for every reader;
remedies that fit the GPU and the precision, each bounded by the share removed."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.rules import layout_transposes as rule
from gpudiag.trace.load import load_file
from gpudiag.trace.model.runconfig import RunConfig
from tests.helpers.multi_gpu import finding_ids, kineto_run, situation, tf_conv_run


def test_tensorflow_layout_conversions_are_found_with_their_share(tmp_path):
    path = tf_conv_run(tmp_path / "host.trace.json", transpose_us=2_000.0)
    d = diagnose(load_file(path))
    f = next(f for f in d.findings if f.id == rule.ID)
    assert f.evidence["layout_transpose_pct"] == pytest.approx(100 * 2_000 / 8_500, abs=0.1)
    assert f.severity == "high"
    fix = next(s for s in d.suggestions if s.finding == rule.ID)
    # gain bounded by the conversions' part of the step: 2 ms of each 10 ms step
    assert 1.0 < fix.expected_gain <= fix.expected_gain_range[1] <= 1 / (1 - 0.2) + 0.01


@pytest.mark.parametrize(
    "op, counted",
    [
        ("model/conv2d/Relu:_FusedConv2D", True),
        ("model/pool/MaxPool-0-0-TransposeNCHWToNHWC-LayoutOptimizer:Transpose", True),
        ("model/attention/transpose:Transpose", False),  # the user's own tf.transpose
    ],
)
def test_tensorflow_transposes_count_by_the_op_that_ran_them(tmp_path, op, counted):
    tl = load_file(tf_conv_run(tmp_path / "host.trace.json", 2_000.0, op=op))[0]
    share = rule.layout_share(tl)
    assert share == (pytest.approx(2_000 / 8_500, abs=1e-3) if counted else 0.0)


def test_below_five_percent_of_kernel_time_is_silent(tmp_path):
    path = tf_conv_run(tmp_path / "host.trace.json", transpose_us=300.0)  # 3.5%
    assert rule.ID not in finding_ids(path)


@pytest.mark.parametrize(
    "kernel",
    [
        "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true>(float)",
        "void cudnn::ops::nhwcToNchwKernel<__half, __half, float, true, false>(float)",
        "batched_transpose_32x32_dword",  # MIOpen (ROCm)
    ],
)
def test_kineto_names_are_the_same_table(tmp_path, kernel):
    path = kineto_run(tmp_path / "t.json", kernel, layout_us=2_000.0)
    tl = load_file(path)[0]
    assert rule.layout_share(tl) == pytest.approx(0.25)
    assert rule.ID in finding_ids(path)


def test_a_user_kernel_named_like_a_transpose_elsewhere_is_not_counted(tmp_path):
    path = kineto_run(tmp_path / "t.json", "void at::native::transpose_kernel<float>()", 2_000.0)
    assert rule.layout_share(load_file(path)[0]) == 0.0


def _titles(cfg: RunConfig) -> list[str]:
    f = rule.Finding(rule.ID, "high", "", {"layout_transpose_pct": 23.6}, measured=0.236)
    return [s.title for s in rule.advise(f, situation(cfg))]


def test_remedies_fit_the_gpu_and_precision():
    turing = _titles(RunConfig(framework="tensorflow", precision="float32", compute_capability=7.5))
    assert any("mixed precision" in t for t in turing)
    assert any("XLA" in t for t in turing)
    pascal = _titles(RunConfig(framework="tensorflow", precision="float32", compute_capability=6.1))
    assert not any("mixed precision" in t for t in pascal)  # no Tensor Cores before 7.0
    assert any("channels-first" in t for t in pascal)
    mixed = _titles(RunConfig(framework="tensorflow", precision="mixed_float16", jit_compile=True))
    assert mixed == ["Keep channel counts multiples of 8"]  # XLA and fp16 already on
    torch = _titles(RunConfig(framework="pytorch"))
    assert torch == ["Train in channels_last memory format"]


def test_a_change_another_finding_offers_is_listed_once(tmp_path):
    path = tf_conv_run(tmp_path / "host.trace.json", transpose_us=2_000.0)
    tl = load_file(path)[0]
    tl.meta.config.update({"precision": "float32", "jit_compile": False})
    d = diagnose([tl])
    assert {"full-precision", "xla-off", rule.ID} <= {f.id for f in d.findings}
    mine = [s.title for s in d.suggestions if s.finding == rule.ID]
    assert mine == ["Build the convolutions channels-first"]
    assert sum("mixed precision" in s.title.lower() for s in d.suggestions) == 1


def test_unknown_compute_capability_says_which_remedy_needs_it():
    f = rule.Finding(rule.ID, "high", "", {"layout_transpose_pct": 20.0}, measured=0.2)
    cfg = RunConfig(framework="tensorflow", precision="float32")
    mp = next(s for s in rule.advise(f, situation(cfg)) if "mixed" in s.title)
    assert "compute capability >= 7.0" in mp.detail
    every = rule.advise(f, situation(cfg))
    assert all(s.expected_gain_range[1] <= 1 / (1 - 0.2 * 0.9) + 0.01 for s in every)


@pytest.mark.parametrize(
    ("share", "severity"),
    [
        (rule.SHARE - 0.01, None),
        (rule.SHARE + 0.01, "moderate"),
        (T.SYNC_HIGH - 0.01, "moderate"),
        (T.SYNC_HIGH + 0.01, "high"),
    ],
)
def test_share_thresholds(tmp_path, share, severity):
    path = tf_conv_run(tmp_path / "host.trace.json", transpose_us=share * 8_500.0)
    found = {f.id: f for f in diagnose(load_file(path)).findings}
    f = found.get(rule.ID)
    assert (f.severity if f else None) == severity


def test_info_where_the_conversions_do_not_limit_the_step(tmp_path):
    """20% of kernel time, but the device computes 15% of the step: 3% of the step."""
    kernel = "void cudnn::ops::nchwToNhwcKernel<float>()"
    path = kineto_run(tmp_path / "t.json", kernel, layout_us=300.0, busy_us=1_500.0)
    found = {f.id: f for f in diagnose(load_file(path)).findings}
    assert found[rule.ID].severity == "info"
    assert found[rule.ID].evidence["layout_transpose_pct"] == 20.0
