"""Figures that must match xprof's and HTA's on traces of the shapes they were compared on
(docs/peers.md): copies are not compute, a device that only copies does not dilute the run,
TPU host-offload copies and a psum are what they are."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.comm import classify_op, is_copy
from gpudiag.trace.load import load_file
from gpudiag.trace.timeline import Kind
from tests import foreign, peer_shapes


def _load(doc, tmp_path, name="t.json"):
    return load_file(foreign.write(doc, tmp_path / name))


def test_device_to_device_copies_and_memsets_are_not_compute(tmp_path):
    tls = _load(peer_shapes.kineto_d2d(), tmp_path)
    assert len(tls[0].device_activity("GPU 0", Kind.COPY)) == 12
    d = diagnose(tls)
    # HTA: compute = kernels that are neither communication nor memory
    assert d.breakdown["compute"] == pytest.approx(0.60, abs=0.01)
    assert d.breakdown["transfer"] == pytest.approx(0.20, abs=0.01)
    fp = d.finding("full-precision")
    assert fp is not None and fp.evidence["compute_share_pct"] == pytest.approx(60.0, abs=1)
    # no host link is involved: device-local copies are not "host<->device heavy"
    assert d.finding("host-to-device-heavy") is None


def test_a_gpu_that_only_copies_does_not_dilute_the_run(tmp_path):
    tls = _load(peer_shapes.jax_copy_only_gpu(), tmp_path)
    d = diagnose(tls)
    assert d.breakdown["compute"] == pytest.approx(0.50, abs=0.02)
    rows = {r.device: r for r in d.devices}
    assert rows["GPU 1"].compute == 0.0  # still shown, with its copies
    gaps = d.finding("gpu-idle-gaps")
    assert gaps is None or gaps.evidence["device"] == "GPU 0"


def test_tpu_host_offload_copies_are_not_compute_and_psum_is_communication(tmp_path):
    tls = _load(peer_shapes.tpu_host_offload(), tmp_path)
    tl = tls[0]
    assert tl.meta.device_type == "TPU"
    assert tl.meta.extra["communication_us"]["XLA"] > 0
    d = diagnose(tls)
    assert d.breakdown["compute"] == pytest.approx(0.02, abs=0.01)
    assert d.breakdown["transfer"] == pytest.approx(0.93, abs=0.02)
    assert d.devices[0].collective_total == pytest.approx(0.03, abs=0.01)
    assert d.verdict != "compute-bound"
    assert "copies" in d.reason


@pytest.mark.parametrize(
    ("name", "category", "copy"),
    [
        ("copy-start.3", "", True),
        ("copy-done", "", True),
        ("%copy-done.12", "", True),
        ("fusion.2", "async-copy", True),
        ("Memcpy DtoD (Device -> Device)", "", True),
        ("Memcpy PtoP (Device -> Device)", "", True),
        ("Memset (Device)", "", True),
        ("MemcpyD2D", "", True),
        ("copy.4", "data formatting", False),  # a layout change the device computes
        ("copy_fusion", "loop fusion", False),
        ("volta_sgemm_128x64_nn", "", False),
    ],
)
def test_copy_names(name, category, copy):
    assert is_copy(name, category) is copy


def test_xla_collective_from_its_category():
    assert classify_op("reduce_sum_fusion", "all-reduce").op == "all-reduce"
    assert classify_op("fusion.7", "loop fusion") is None


def test_an_eager_decode_step_is_the_iteration_not_its_layers(tmp_path):
    tl = _load(peer_shapes.eager_decode_layers(), tmp_path)[0]
    assert tl.meta.extra["steps_marker"] == "nn.Module: Qwen2ForCausalLM_0"
    assert len(tl.steps) == 1
    assert tl.steps.durations[0] / 1000.0 == pytest.approx(84.0, abs=1.0)
    assert any(
        "Qwen2DecoderLayer" in lim and "part of the iteration" in lim for lim in tl.meta.limitations
    )
