"""Traces from other producers: steps without markers, every communication library, facts
that decide the advice (framework, precision, inference), host allocator/sync stalls."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.load import load_file
from gpudiag.trace.model.steps_infer import drop_warmup, ensure_steps
from gpudiag.trace.model.timeline import Kind, Timeline
from gpudiag.trace.names.comm import classify
from gpudiag.trace.names.facts import host_call_kind, kernel_precision
from tests.helpers import foreign


def _load(doc, tmp_path, name="t.json"):
    return load_file(foreign.write(doc, tmp_path / name))


# ---- step inference ------------------------------------------------------------------------
def test_legacy_kineto_dataloader_trace_is_data_starved(tmp_path):
    tls = _load(foreign.legacy_kineto_dataloader(), tmp_path)
    tl = tls[0]
    assert tl.meta.extra["steps_method"] == "marker"
    assert tl.meta.extra["steps_marker"] == foreign.DL_MULTI
    assert tl.meta.extra["warmup_dropped"] == 1
    assert len(tl.steps) == 28  # 30 fetches -> 29 full iterations, the first is warm-up
    d = diagnose(tls)
    assert d.verdict == "data-starved"
    assert d.breakdown["input"] == pytest.approx(0.64, abs=0.03)
    assert any(
        "inferred from the repeating DataLoader" in lim and "warm-up" in lim
        for lim in d.limitations
    )


def test_warmup_is_dropped_only_when_much_longer():
    import numpy as np

    assert drop_warmup(np.array([2000.0, 100, 101, 99, 100]))[0] == 1
    assert drop_warmup(np.array([150.0, 100, 101, 99, 100]))[0] == 0
    assert drop_warmup(np.array([900.0, 800, 100, 101, 99]))[0] == 2
    assert drop_warmup(np.array([900.0, 100]))[0] == 0  # never leave fewer than two


def test_inference_uses_the_coarsest_repeating_marker():
    tl = Timeline()
    # zero_grad once per iteration, forward annotation twice per iteration
    tl.add_marker("Optimizer.zero_grad#SGD.zero_grad", [0, 100, 200, 300], [5, 105, 205, 305])
    tl.add_marker("forward", [10, 60, 110, 160, 210, 260, 310], [40, 90, 140, 190, 240, 290, 340])
    tl.add_activity("GPU 0", Kind.COMPUTE, [0], [400])
    ensure_steps(tl)
    assert tl.steps.start.tolist() == [0, 100, 200]
    assert tl.steps.end.tolist() == [100, 200, 300]


def test_a_marker_repeating_in_one_corner_does_not_cut_steps():
    tl = Timeline()
    tl.add_marker("Optimizer.step#SGD.step", [100, 200, 300, 400, 500], [110, 210, 310, 410, 510])
    tl.add_marker("forward", [0, 5, 10], [4, 9, 14])  # three calls in the first 2% of it
    tl.add_activity("GPU 0", Kind.COMPUTE, [0], [600])
    ensure_steps(tl)
    assert tl.meta.extra["steps_marker"] == "Optimizer.step#SGD.step"


def test_no_marker_means_the_window_is_one_step_and_says_so():
    tl = Timeline()
    tl.add_activity(
        "GPU 0", Kind.COMPUTE, [10 + 500 * k for k in range(10)], [400 + 500 * k for k in range(10)]
    )
    ensure_steps(tl)
    assert (tl.steps.start.tolist(), tl.steps.end.tolist()) == ([10.0], [4900.0])
    assert tl.meta.extra["steps_method"] == "window"
    assert "analysed as one step" in tl.meta.limitations[0]


def test_a_few_kernels_are_no_window():
    tl = Timeline()
    tl.add_activity("GPU 0", Kind.COMPUTE, [0, 5000], [10, 5010])
    ensure_steps(tl)
    assert len(tl.steps) == 0


def test_pre_kineto_autograd_profiler_array(tmp_path):
    tls = _load(foreign.autograd_legacy(), tmp_path)
    tl = tls[0]
    assert tl.meta.producer == "kineto" and tl.devices == ["GPU 0"]
    assert tl.meta.extra["steps_marker"].startswith("Optimizer.zero_grad#")
    assert tl.meta.extra["workload"] == "training"
    d = diagnose(tls)
    assert d.verdict == "compute-bound"
    assert d.breakdown["compute"] == pytest.approx(0.85, abs=0.02)


def test_markers_do_not_override_real_steps(tmp_path):
    doc = foreign.legacy_kineto_dataloader(iters=5)
    doc["traceEvents"].append(foreign._x("Operator", "ProfilerStep#3", 4242, 4242, 1e6, 5e4))
    tl = _load(doc, tmp_path)[0]
    assert len(tl.steps) == 1 and tl.meta.extra["steps_method"] == "markers"


# ---- communication -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "library", "op"),
    [
        (
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "NCCL",
            "AllReduce",
        ),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "NCCL", "SendRecv"),
        ("void dpsk::ep::internode::dispatch<false, 8, true, 8>(int*)", "DeepEP", "dispatch"),
        ("void dpsk::ep::internode::combine_ll<true>(int*)", "DeepEP", "combine_ll"),
        ("void deep_ep::intranode::notify_dispatch<8>(int const*)", "DeepEP", "notify_dispatch"),
        ("void deep_ep::internode_ll::dispatch<3, 10, 7168>(void*)", "DeepEP", "dispatch"),
        ("void mori::moe::EpDispatchInterNodeKernel<float>(args)", "MoRI", "Dispatch"),
        ("nvshmemi_transfer_rma_kernel", "NVSHMEM", "one-sided"),
        (
            "void c10d::symmetric_memory::multimem_all_reduce_kernel<bf16>",
            "multimem (NVLS)",
            "all-reduce",
        ),
        ("rcclGenericKernel<1, false>", "RCCL", "collective"),
        ("all-reduce-start.3", "XLA", "all-reduce"),
        ("all-gather.1", "XLA", "all-gather"),
        ("reduce-scatter-done", "XLA", "reduce-scatter"),
        ("all-to-all.2", "XLA", "all-to-all"),
        ("collective-permute-start.1", "XLA", "collective-permute"),
        ("send-done.4", "XLA", "send"),
        ("jit(step)/jit(main)/psum", "XLA", "psum"),
        ("CollectiveReduceV2", "TensorFlow", "CollectiveReduceV2"),
        ("gloo:all_reduce", "gloo", "collective"),
        ("cross_device_reduce_1stage<bf16, 8>", "custom all-reduce", "all-reduce"),
    ],
)
def test_communication_table(name, library, op):
    c = classify(name)
    assert c is not None and (c.library, c.op) == (library, op)


@pytest.mark.parametrize(
    "name",
    [
        "void cdpsk::ep::CUB_scan_kernel(int*)",  # CUB scan in a look-alike namespace
        "void dpsk::ep::cuda::get_dispatch_layout<8>(long*)",  # local layout computation
        "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)",
        "void at::native::index_select_gather_kernel<float>",
        "fusion.12",
        "volta_sgemm_128x64_nn",
    ],
)
def test_compute_is_not_communication(name):
    assert classify(name) is None


def test_deepep_all_to_all_fully_overlapped(tmp_path):
    tls = _load(foreign.deepep_h800(), tmp_path)
    tl = tls[0]
    assert tl.meta.extra["steps_method"] == "window"
    assert "DeepEP" in tl.meta.extra["communication_us"]
    assert "fp8" in tl.meta.extra["precision"]
    d = diagnose(tls)
    dev = d.devices[0]
    assert dev.collective_total == pytest.approx(0.88, abs=0.02)
    assert d.breakdown["sync"] < 0.01
    assert d.verdict == "compute-bound"


def test_xla_tpu_async_collectives_and_module_steps(tmp_path):
    tls = _load(foreign.xla_tpu(), tmp_path)
    tl = tls[0]
    assert tl.meta.framework == "jax" and tl.meta.device_type == "TPU"
    assert tl.meta.extra["steps_marker"] in (
        "xla-module:jit_train_step",
        "PjitFunction(train_step)",
    )
    assert tl.meta.extra["workload"] == "training"
    assert tl.meta.extra["communication_us"]["XLA"] > 0
    d = diagnose(tls)
    # all-reduce from its start (50%) to its done (80%): 30% of the step, half under compute
    assert d.devices[0].collective_total == pytest.approx(0.30, abs=0.02)
    assert d.breakdown["sync"] == pytest.approx(0.15, abs=0.02)


# ---- facts ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "precision"),
    [
        ("sm90_xmma_gemm_e4m3bf16_bf16f32_f32_tn_n", "fp8"),
        ("void dpsk::gemm::fp8_gemm_kernel<128>", "fp8"),
        ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "bf16"),
        (
            "void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<c10::Half>>",
            "fp16",
        ),
        ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "fp16"),
        ("volta_h884gemm_64x64_ldg8_nn", "fp16"),
        ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc", "tf32"),
        ("cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1", "tf32"),
        ("volta_sgemm_128x64_nn", None),
    ],
)
def test_kernel_precision(name, precision):
    assert kernel_precision(name) == precision


def test_host_call_table():
    assert host_call_kind("hipFree") == "allocator"
    assert host_call_kind("cudaMalloc") == "allocator"
    assert host_call_kind("cudaStreamSynchronize") == "sync"
    assert host_call_kind("cudaMemcpy") == "sync"
    assert host_call_kind("cudaMemcpyAsync") is None
    assert host_call_kind("cudaLaunchKernel") is None


def test_eager_decode_is_inference(tmp_path):
    tl = _load(foreign.eager_decode(), tmp_path)[0]
    assert tl.meta.extra["workload"] == "inference"
    assert tl.meta.extra["precision"] == ["bf16"]
    assert tl.meta.extra["tensor_core_share"] > 0.99  # all but the KV-cache writes
    assert tl.meta.config.decode_loop is True
    assert tl.meta.extra["decode_evidence"] == "reshape_and_cache_kernel"


def test_rocm_hipfree_calls_are_kept(tmp_path):
    tl = _load(foreign.rocm_hipfree(), tmp_path)[0]
    assert tl.meta.device_type == "AMD Instinct MI250X"
    free = tl.host_calls["hipFree"]
    lo, hi = tl.steps.start.min(), tl.steps.end.max()
    assert free.overlap_with(lo, hi) / (hi - lo) > 0.95


# ---- corrupt protobufs ---------------------------------------------------------------------
def test_xplane_through_a_text_decoder_exits_2_with_one_line(tmp_path):
    from tests.cli.test_cli_bad_input import assert_bad
    from tests.helpers.paths import SAMPLES

    raw = (SAMPLES / "tf_gpu_multi_worker.xplane.pb").read_bytes()[:200_000]
    mangled = tmp_path / "run.xplane.pb"
    mangled.write_text(raw.decode("utf-8", errors="replace"), encoding="utf-8")
    assert_bad(str(mangled), "mangled by a text decoder", "binary mode")


# ---- real traces ---------------------------------------------------------------------------
def test_rocm_sample_trace_facts():
    from tests.helpers.paths import SAMPLES

    tl = load_file(str(SAMPLES / "mi250_rocm_minitoy.json.gz"))[0]
    assert "AMD" in tl.meta.device_type
    assert {"hipMemcpyWithStream", "hipDeviceSynchronize"} <= set(tl.host_calls)
    assert tl.meta.extra["workload"] == "training"
    assert tl.meta.extra["steps_method"] == "markers"


def test_resnet_without_profiler_steps_infers_the_same_iterations(tmp_path, shared_trace):
    import gzip
    import json

    path = shared_trace("kineto/resnet50_dataloader_workers0.pt.trace.json.gz")
    with_steps = diagnose(load_file(path))
    with gzip.open(path) as f:
        doc = json.load(f)
    doc["traceEvents"] = [
        e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")
    ]
    tls = _load(doc, tmp_path, "nosteps.json.gz")
    assert tls[0].meta.extra["steps_marker"].startswith("enumerate(DataLoader)#")
    d = diagnose(tls)
    assert d.verdict == with_steps.verdict == "data-starved"
    assert d.steps["analyzed"] == 5  # 6 fetches -> 5 full iterations, none a warm-up
    assert d.breakdown["input"] == pytest.approx(with_steps.breakdown["input"], abs=0.06)


@pytest.mark.parametrize(
    ("rel", "library"),
    [("kineto/a100_overlapped_comm.json.gz", "NCCL"), ("kineto/cpu_only_rank34.json.gz", "gloo")],
)
def test_real_traces_name_their_communication_library(rel, library, shared_trace):
    tl = load_file(shared_trace(rel))[0]
    assert library in tl.meta.extra["communication_us"]


def test_real_fp32_trace_has_no_reduced_precision(shared_trace):
    tl = load_file(shared_trace("kineto/resnet50_dataloader_workers4.pt.trace.json.gz"))[0]
    assert tl.meta.extra["precision"] == []
    tl = load_file(shared_trace("kineto/a100_nccl_sparse.json.gz"))[0]
    assert tl.meta.extra["precision"] == ["tf32"]  # cutlass s1688 GEMMs, cuDNN tf32 convs


def test_jax_profile_without_op_scopes_is_not_called_inference(tmp_path):
    doc = foreign.xla_tpu(steps=60)
    for ev in doc["traceEvents"]:
        ev.get("args", {}).pop("tf_op", None)
    tl = _load(doc, tmp_path)[0]
    assert "workload" not in tl.meta.extra and tl.meta.config.training is None
