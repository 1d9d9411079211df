"""Advice for foreign traces: in their own framework, never what runs already, no training
advice on inference; allocator and host-sync stalls; hidden communication reported."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.load import load_file
from tests.helpers import foreign

KERAS_WORDS = ("keras", "jit_compile", "tf.data", "mixed_float16", "PyDataset")


def _diag(doc, tmp_path, name="t.json"):
    return diagnose(load_file(foreign.write(doc, tmp_path / name)))


def _texts(d) -> str:
    return " ".join(s.title + " " + s.detail for s in d.suggestions)


def test_multiworker_dataloader_gets_pytorch_input_remedies(tmp_path):
    d = _diag(foreign.legacy_kineto_dataloader(), tmp_path)
    assert d.verdict == "data-starved"
    f = d.finding("dataloader-starved")
    assert f is not None and f.severity == "high"
    assert f.evidence["num_workers"] == "several"
    top = d.suggestions[0]
    assert top.finding == "dataloader-starved"
    assert "prefetch_factor" in top.detail and "persistent_workers" in top.detail
    assert not any(w in _texts(d) for w in KERAS_WORDS)


def test_overlapped_all_to_all_is_reported_and_fp8_not_re_advised(tmp_path):
    d = _diag(foreign.deepep_h800(), tmp_path)
    f = d.finding("communication-hidden")
    assert f is not None
    assert f.evidence["collective_pct"] == pytest.approx(88, abs=2)
    assert f.evidence["exposed_sync_pct"] < 1
    assert "DeepEP" in f.title
    assert d.finding("full-precision") is None  # FP8 GEMMs run already
    assert "precision" not in _texts(d).lower()
    assert not any(w in _texts(d) for w in KERAS_WORDS)


def test_exposed_all_to_all_is_advised_overlap_not_bigger_batches(tmp_path):
    doc = foreign.deepep_h800()
    for ev in doc["traceEvents"]:
        if "gemm" in ev["name"]:
            ev["dur"] *= 0.4  # compute now hides only part of the all-to-all
    d = _diag(doc, tmp_path)
    f = d.finding("exposed-collectives")
    assert f is not None and f.title.startswith("Expert all-to-all")
    sug = next(s for s in d.suggestions if s.finding == "exposed-collectives")
    assert "Overlap" in sug.title and "accumulate" not in sug.detail


def test_rocm_hipfree_is_an_allocator_stall(tmp_path):
    d = _diag(foreign.rocm_hipfree(), tmp_path)
    f = d.finding("allocator-stalls")
    assert f is not None and f.severity == "high"
    assert f.evidence["allocator_stall_pct"] > 90
    assert "hipFree" in f.title and f.evidence["calls"]["hipFree"] == 5
    top = d.suggestions[0]
    assert top.finding == "allocator-stalls"
    assert "PYTORCH_NO_HIP_MEMORY_CACHING" in top.detail


def test_sync_every_step_is_a_host_sync_stall(tmp_path):
    d = _diag(foreign.sync_every_step(), tmp_path)
    f = d.finding("host-sync-stalls")
    assert f is not None
    # 30% of each step idle, during each sync and after it (the last step's idle after
    # its sync falls after the profile ends; the idle while it blocks is counted)
    assert f.evidence["idle_after_sync_pct"] == pytest.approx(30, abs=1)
    assert f.evidence["syncs_per_step"] == 1.0
    assert any(".item()" in s.detail for s in d.suggestions)


def test_eager_decode_is_named_and_gets_no_training_advice(tmp_path):
    d = _diag(foreign.eager_decode(), tmp_path)
    f = d.finding("inference-trace")
    assert f is not None and f.severity == "high" and "eager decode" in f.title
    text = _texts(d)
    assert "CUDA graph" in text
    for word in ("gradient", "accumulate", "learning rate", "all-reduce", "Train with"):
        assert word not in text
    assert d.finding("full-precision") is None  # bf16 GEMMs run already


def test_jax_tpu_trace_gets_jax_remedies(tmp_path):
    d = _diag(foreign.xla_tpu(), tmp_path)
    assert d.finding("exposed-collectives") is not None
    assert "optax.MultiSteps" in _texts(d)
    assert d.finding("full-precision") is None  # TPU matmuls default to bfloat16 passes
    assert not any(w in _texts(d) for w in KERAS_WORDS)


def test_pytorch_fp32_trace_gets_autocast_not_keras(shared_trace):
    d = diagnose(load_file(shared_trace("kineto/resnet50_dataloader_workers4.pt.trace.json.gz")))
    assert d.verdict == "compute-bound"
    mp = next(s for s in d.suggestions if s.finding == "full-precision")
    assert "torch.autocast" in mp.detail
    assert not any(w in _texts(d) for w in KERAS_WORDS)


def test_tensorflow_trace_keeps_keras_remedies(shared_trace):
    pytest.importorskip("xprof")
    d = diagnose(load_file(shared_trace("xplane/tf_gpu_multi_worker.xplane.pb")))
    assert any("jit_compile" in s.detail for s in d.suggestions)


def test_allocator_calls_below_five_percent_are_no_finding(tmp_path):
    doc = foreign.rocm_hipfree()
    for ev in doc["traceEvents"]:
        if ev["name"] == "hipFree":
            ev["dur"] = 0.03 * 50_000.0  # 3% of each step
    assert _diag(doc, tmp_path).finding("allocator-stalls") is None
    for ev in doc["traceEvents"]:
        if ev["name"] == "hipFree":
            ev["dur"] = 0.08 * 50_000.0
    f = _diag(doc, tmp_path, "b.json").finding("allocator-stalls")
    assert f is not None and f.severity == "moderate"


def test_sync_while_another_stream_works_costs_nothing(tmp_path):
    doc = foreign.sync_every_step()
    for i in range(8):  # a second stream busy across each sync's return
        doc["traceEvents"].append(
            foreign._x(
                "kernel", "ampere_sgemm_64x64", 0, 9, i * 10_000.0 + 9_000, 4_500.0, device=0
            )
        )
    assert _diag(doc, tmp_path).finding("host-sync-stalls") is None


def test_hidden_communication_thresholds(tmp_path):
    doc = foreign.deepep_h800()
    for ev in doc["traceEvents"]:
        if "dpsk::ep" in ev["name"]:
            ev["dur"] *= 0.2  # 18% of the step: below the 20% worth reporting
    d = _diag(doc, tmp_path)
    assert d.finding("communication-hidden") is None and d.finding("exposed-collectives") is None


def test_compiled_pytorch_step_is_not_told_to_compile(tmp_path):
    doc = foreign.eager_decode()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e["name"] != "forward"]
    doc["traceEvents"].append(foreign._x("cpu_op", "MmBackward0", 9, 9, 0, 5.0))  # training
    for ev in doc["traceEvents"]:
        if ev.get("cat") == "kernel":
            ev["name"] = "triton_poi_fused_add_mul_0"
    tl = load_file(foreign.write(doc, tmp_path / "c.json"))[0]
    assert tl.meta.config.jit_compile is True
    d = diagnose([tl])
    assert d.finding("kernel-launch-bound") is not None
    assert "torch.compile" not in _texts(d)
