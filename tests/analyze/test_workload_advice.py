"""Advice that fits the workload: each shape a user reported, built here as a trace of the
same shape, gets a remedy it can use, never one it cannot, one already in place, or one
known to break (analyze/needs.py, analyze/workload.py)."""

from __future__ import annotations

from typing import Any

import pytest

from gpudiag.analyze import diagnose, ranking
from gpudiag.analyze.needs import describe
from gpudiag.analyze.rules import host_overhead
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import STOPPED_EARLY
from gpudiag.trace.names.facts import LAYOUT_TRANSPOSE, RunFacts
from gpudiag.trace.names.name_scan import lowered, scanned
from tests.helpers import foreign
from tests.helpers.foreign import _x, kineto
from tests.helpers.paths import REPO
from tests.rules.kit import situation

NVIDIA_WORDS = ("Tensor Core", "NVIDIA", "compute capability", "CUDA graph", "TF32")
KERAS_WORDS = ("steps_per_execution", "jit_compile", "keras.", "PyDataset", "model.compile")


def _diag(doc: dict[str, Any], tmp_path, name: str = "t.json"):
    return diagnose(load_file(foreign.write(doc, tmp_path / name)))


def _text(d) -> str:
    return " ".join(f"{s.title} {s.detail} {s.basis}" for s in d.suggestions)


# ---- traces of the reported shapes ---------------------------------------------------------
def _compiled_bf16_block(steps: int = 10, step_us: float = 5000.0) -> dict[str, Any]:
    """A torch.compile'd training block on an MI300X: Triton kernels (no type in their
    names), hipBLASLt GEMMs named in Tensile's code (BBS: bfloat16 in, float accumulate) and
    matmul ops whose inputs are BFloat16; compute holds the step."""
    ev: list[dict[str, Any]] = []
    cpu = 3
    for i in range(steps):
        t = i * step_us
        ev.append(_x("user_annotation", f"ProfilerStep#{i}", cpu, cpu, t, step_us))
        ev.append(
            _x("cpu_op", "aten::mm", cpu, cpu, t + 5, 20.0, **{"Input type": ["c10::BFloat16"]})
        )
        ev.append(_x("cuda_runtime", "hipLaunchKernel", cpu, cpu, t + 10, 5.0))
        ev.append(_x("cpu_op", "MmBackward0", cpu, cpu, t + 30, 20.0))
        ev.append(
            _x(
                "kernel",
                "Cijk_Alik_Bljk_BBS_BH_MT256x256x64_MI16x16x16x1_SN",
                0,
                1,
                t + 40,
                0.6 * step_us,
                device=0,
            )
        )
        norm_at = t + 40 + 0.6 * step_us
        ev.append(_x("kernel", "triton_red_fused_layer_norm_0", 0, 1, norm_at, 0.35 * step_us))
    return kineto(ev, device="AMD Instinct MI300X")


def _encoder_inference(steps: int = 30, step_us: float = 6000.0) -> dict[str, Any]:
    """bert-small style inference: many tiny kernels per forward, the GPU idle between
    them, no KV cache and no per-token steps."""
    ev: list[dict[str, Any]] = []
    cpu = 4
    for i in range(steps):
        t = i * step_us
        ev.append(_x("user_annotation", "forward", cpu, cpu, t, step_us * 0.98))
        for k in range(40):
            s = t + k * step_us / 40
            ev.append(_x("cpu_op", "aten::linear", cpu, cpu, s, 100.0))
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", cpu, cpu, s + 10, 8.0))
            ev.append(
                _x("kernel", "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n", 0, 7, s + 20, 5.0, device=0)
            )
    return kineto(ev)


def _blocking_copy_window() -> dict[str, Any]:
    """A serving window held by one 463 ms blocking device-to-host copy, the GPU idle under
    it; tiny kernels around it (what once read as launch-bound)."""
    ev: list[dict[str, Any]] = []
    cpu = 6
    t = 0.0
    ev.append(_x("user_annotation", "ProfilerStep#0", cpu, cpu, 0.0, 480_000.0))
    for k in range(200):
        s = t + k * 60.0
        ev.append(_x("cpu_op", "aten::linear", cpu, cpu, s, 30.0))
        ev.append(_x("cuda_runtime", "cudaLaunchKernel", cpu, cpu, s + 5, 5.0))
        ev.append(_x("kernel", "void gemv_kernel", 0, 7, s + 10, 4.0, device=0))
    ev.append(_x("cpu_op", "aten::_local_scalar_dense", cpu, cpu, 12_100.0, 463_500.0))
    ev.append(_x("cuda_runtime", "cudaMemcpyAsync", cpu, cpu, 12_150.0, 20.0))
    ev.append(_x("cuda_runtime", "cudaMemcpy", cpu, cpu, 12_200.0, 463_000.0))
    ev.append(_x("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 0, 8, 475_190.0, 5.0, device=0))
    return kineto(ev)


def _gp100(steps: int = 10, step_us: float = 2000.0) -> dict[str, Any]:
    """An eager PyTorch training step of tiny kernels on a Quadro GP100 (compute capability
    6.0): the GPU idles between launches."""
    ev: list[dict[str, Any]] = []
    cpu = 2
    for i in range(steps):
        t = i * step_us
        ev.append(_x("user_annotation", f"ProfilerStep#{i}", cpu, cpu, t, step_us))
        ev.append(_x("cpu_op", "MmBackward0", cpu, cpu, t + 1, 5.0))
        for k in range(60):
            s = t + 10 + k * 30.0
            ev.append(_x("cpu_op", "aten::add", cpu, cpu, s, 20.0))
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", cpu, cpu, s + 5, 5.0))
            ev.append(_x("kernel", "elementwise_kernel", 0, 7, s + 12, 4.0, device=0))
    doc = kineto(ev)
    doc["deviceProperties"] = [
        {"id": 0, "name": "Quadro GP100", "computeMajor": 6, "computeMinor": 0}
    ]
    return doc


# ---- precision, vendor ----------------------------------------------------------------------
def test_bf16_compiled_block_on_mi300x_is_not_told_mixed_precision(tmp_path):
    d = _diag(_compiled_bf16_block(), tmp_path)
    assert d.config["precision"] == "mixed_bfloat16"
    assert d.workload["vendor"] == "amd"
    assert d.finding("full-precision") is None
    assert not any(w in _text(d) for w in NVIDIA_WORDS)


def test_amd_fp32_run_hears_of_matrix_cores_not_tensor_cores():
    s = situation({"framework": "pytorch", "vendor": "amd", "precision": "float32"}, compute=0.9)
    from gpudiag.analyze.diagnosis import Finding
    from gpudiag.analyze.rules import full_precision

    (sug,) = full_precision.advise(Finding("full-precision", "info", "", {}), s)
    assert "matrix cores" in sug.detail and "Tensor Core" not in sug.detail + sug.basis


def test_tensile_type_codes_name_the_precision():
    facts = RunFacts()
    facts.kernel("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1", 10.0)
    facts.kernel("Cijk_Alik_Bljk_BBS_BH_MT256x256x64", 10.0)
    facts.kernel("Cijk_Alik_Bljk_SB_MT64x16x32", 10.0)  # float32 (S)
    assert facts.precision_us == {"fp16": 10.0, "bf16": 10.0}


# ---- inference without a decode loop; blocking copies ---------------------------------------
def test_encoder_inference_gets_no_decoding_advice(tmp_path):
    d = _diag(_encoder_inference(), tmp_path)
    assert d.workload["training"] is False and d.workload["decode_loop"] is False
    f = d.finding("inference-trace")
    assert f is not None and "decode" not in f.title
    text = _text(d).lower()
    for word in ("kv cache", "decoding", "vllm", "gradient", "loss.item"):
        assert word not in text


def test_a_blocking_copy_holding_the_window_is_named_not_launch_bound(tmp_path):
    d = _diag(_blocking_copy_window(), tmp_path)
    f = d.finding("host-sync-stalls")
    assert f is not None and f.severity == "high"
    assert "cudaMemcpy" in f.title and f.evidence["longest_call_ms"] == pytest.approx(463, abs=1)
    assert d.finding("kernel-launch-bound") is None
    top = d.suggestions[0]
    assert top.finding == "host-sync-stalls" and "cudaMemcpy" in top.detail
    assert "loss.item" not in top.detail  # inference: no loss to read


def test_cpu_preprocessing_before_the_first_kernel_is_named(tmp_path):
    """TimeSformer-like serving: 267 ms of CPU video preprocessing (resize, normalise, no
    launch inside) before each request's kernels; the host syncs on the result."""
    ev: list[dict[str, Any]] = []
    cpu, step = 5, 400_000.0
    for i in range(4):
        t = i * step
        ev.append(_x("user_annotation", f"ProfilerStep#{i}", cpu, cpu, t, step))
        ev.append(_x("cpu_op", "aten::upsample_bilinear2d", cpu, cpu, t + 10, 200_000.0))
        ev.append(_x("cpu_op", "aten::normalize", cpu, cpu, t + 200_020, 67_000.0))
        for k in range(50):
            s = t + 267_100 + k * 2000.0
            ev.append(_x("cpu_op", "aten::conv3d", cpu, cpu, s, 40.0))
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", cpu, cpu, s + 5, 5.0))
            ev.append(_x("kernel", "implicit_convolve_sgemm", 0, 7, s + 20, 1900.0, device=0))
        ev.append(_x("cuda_runtime", "cudaStreamSynchronize", cpu, cpu, t + 367_200, 1000.0))
    d = _diag(kineto(ev), tmp_path)
    f = d.finding("host-preprocessing")
    assert f is not None and f.evidence["host_preprocessing_pct"] > 60
    assert "preprocesses" in f.title
    sync = d.finding("host-sync-stalls")
    assert sync is None or sync.evidence["idle_after_sync_pct"] < 10
    assert d.suggestions[0].finding == "host-preprocessing"


# ---- Keras options only where Keras drives the loop ------------------------------------------
def _advice(config: dict[str, Any], **shares: float):
    from gpudiag.analyze.diagnosis import Finding

    f = Finding(host_overhead.ID, "moderate", "", {})
    return ranking.advise_run([f], situation(config, **shares))


def test_plain_jax_is_never_told_a_keras_option():
    advice = _advice({"framework": "jax"}, compute=0.3, other=0.7)
    assert advice.suggestions == []
    (held,) = advice.withheld
    assert held["remedy"] == "steps-per-execution" and "Keras" in held["why"]


def test_keras_on_jax_keeps_the_option():
    advice = _advice({"framework": "jax", "api": "keras"}, compute=0.3, other=0.7)
    assert [s.remedy for s in advice.suggestions] == ["steps-per-execution"]


def test_steps_per_execution_under_mirrored_strategy_is_withheld_with_its_source():
    cfg = {"framework": "tensorflow", "api": "keras", "keras_version": "3.15.1"}
    advice = _advice({**cfg, "strategy": "mirrored", "replicas": 2}, compute=0.3, other=0.7)
    assert advice.suggestions == []
    assert advice.withheld[0]["source"].endswith("keras-team/keras/issues/19246")
    assert _advice({**cfg, "strategy": "none"}, compute=0.3, other=0.7).suggestions


def test_unknown_driver_is_offered_with_what_to_check_and_a_range():
    advice = _advice({"framework": "tensorflow"}, compute=0.3, other=0.7)
    (sug,) = advice.suggestions
    assert sug.assumes and "Check first" in sug.detail
    assert sug.expected_gain == sug.expected_gain_range[0] < sug.expected_gain_range[1]
    assert "MirroredStrategy" in sug.detail  # the open incompatibility is said


def test_torch_compile_is_withheld_below_compute_capability_7(tmp_path):
    d = _diag(_gp100(), tmp_path)
    assert d.workload["compute_capability"] == 6.0
    assert not any("torch.compile" in s.detail for s in d.suggestions)
    assert any("Triton" in w["why"] for w in d.withheld)


def test_no_device_activity_gets_no_device_gain(tmp_path):
    ev = [
        _x("user_annotation", f"ProfilerStep#{i}", 1, 1, i * 1000.0, 1000.0) for i in range(5)
    ] + [_x("cuda_runtime", "cudaFree", 1, 1, i * 1000.0 + 10, 900.0) for i in range(5)]
    d = _diag(kineto(ev), tmp_path)
    assert d.workload["device_measured"] is False
    assert not [s for s in d.suggestions if s.finding == "allocator-stalls"]


# ---- already in place; a run that stopped ----------------------------------------------------
def test_pydataset_already_in_worker_processes_gets_the_next_step():
    from gpudiag.analyze.diagnosis import Finding
    from gpudiag.analyze.evidence import HostFacts

    cfg = {
        "framework": "tensorflow",
        "api": "keras",
        "input_kind": "pydataset",
        "workers": 2,
        "use_multiprocessing": True,
        "cores": 2,
        "device_type": "CPU",
    }
    f = Finding("python-generator", "high", "", {})
    s = situation(cfg, HostFacts(cpu_process=190.0), ("python-generator",), input=0.6)
    sugs = ranking.advise([f], s)
    assert [x.title for x in sugs] == ["Do less CPU work per sample"]
    assert "already runs in 2 worker processes" in sugs[0].detail


def test_a_run_that_stopped_gets_findings_but_no_modelled_gain():
    from gpudiag.analyze.diagnosis import Finding

    f = Finding("small-model-multi-gpu", "high", "", {"replicas": 2})
    s = situation({"stopped_early": True, "replicas": 2}, compute=0.01, sync=0.9)
    s.steps_recorded = 8
    (sug,) = [x for x in ranking.advise([f], s) if x.remedy == "fewer-replicas"]
    assert sug.expected_gain == 1.0 and sug.expected_gain_range == []
    assert "stopped early after 8 steps" in sug.basis


def test_a_gpudiag_trace_that_stopped_is_read_as_stopped(tmp_path):
    from gpudiag.trace.model.timeline import Metadata
    from tests.helpers.synth import periodic, record_profiled

    path = tmp_path / "t.json"
    meta = Metadata(producer="gpudiag", framework="tensorflow", limitations=[STOPPED_EARLY])
    record_profiled(path, periodic(input_frac=0.5), meta)
    d = diagnose(load_file(str(path)))
    assert d.workload["stopped_early"] is True
    assert all(s.expected_gain == 1.0 for s in d.suggestions)


def test_no_gain_is_ever_astronomical():
    from gpudiag.analyze.gain import MAX_GAIN, Gain

    g = Gain.of(1e6, 1.0, 1e6, "x")
    assert g.point == g.high == MAX_GAIN == pytest.approx(20.0)


# ---- causes misnamed --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "layout"),
    [
        ("input_transpose_fusion", True),
        ("loop_transpose_fusion_3", True),
        ("transpose.12", True),
        ("copy.4", True),
        ("nhwcToNchwKernel", True),
        ("MemcpyD2D", False),
        ("memcpy32_post", False),
        ("sm90_xmma_gemm", False),
    ],
)
def test_xla_layout_fusions_count_as_layout_transposes(name, layout):
    assert (LAYOUT_TRANSPOSE.search(scanned(name), lowered(name)) is not None) is layout


def test_tf_multi_device_iterator_is_not_python_input():
    from gpudiag.analyze.input_stage import stage_kind

    assert stage_kind("Iterator::Root::Prefetch::Generator") == "device-iterator"
    assert stage_kind("Iterator::Root::Prefetch::FlatMap::Generator") == "python"


# ---- the table of needs -----------------------------------------------------------------------
def test_every_remedy_a_rule_offers_has_a_row_in_the_docs_table():

    table = (REPO / "docs" / "remedies.md").read_text()
    for remedy, needs in ranking.remedy_needs().items():
        assert f"`{remedy}`" in table, remedy
        requires, rules_out = describe(needs)
        for cell in (requires, rules_out):
            for source in [p for p in cell.split() if p.startswith("(https://")]:
                assert source.strip("()") in table
