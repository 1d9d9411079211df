"""What the multi-GPU findings read: kernel time and copied bytes kept by the readers and
carried through the callback's trace, one sample's bytes from a dataset, the strategy's GPUs
in NVML's numbering; and the findings' silence on the sample traces without their cause."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.rules import gpus_held_idle, layout_transposes, whole_batch_per_replica
from gpudiag.record.run_facts import describe_input, element_bytes, run_config
from gpudiag.record.window_facts import WindowFacts, default_gpus, nvml_indices
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.load import load_file
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.names.facts import copy_bytes
from gpudiag.trace.native.reader import read_gpudiag
from tests.helpers import foreign
from tests.helpers.multi_gpu import BATCH, SAMPLE, STEP_US, tf_conv_run
from tests.helpers.paths import SAMPLES

NEW = {layout_transposes.ID, whole_batch_per_replica.ID, gpus_held_idle.ID}
# a PyTorch NCHW model on an A100: 13% of kernel time in cuDNN's nchwToNhwc / nhwcToNchw
WITH_CAUSE = {"a100_nccl_sparse.json.gz": {layout_transposes.ID}}


@pytest.mark.parametrize(
    "name", sorted(p.name for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")
)
def test_sample_traces(name):
    found = {f.id: f for f in diagnose(load_file(str(SAMPLES / name))).findings}
    assert set(found) & NEW == WITH_CAUSE.get(name, set())
    if layout_transposes.ID in found:  # real, but the run is launch-bound: 18% compute
        assert found[layout_transposes.ID].severity == "info"
        assert found[layout_transposes.ID].evidence["layout_transpose_pct"] == 13.1


def test_kineto_copy_bytes_are_kept(tmp_path):
    ev = [foreign._x("user_annotation", "ProfilerStep#0", 1, 1, 0, STEP_US)]
    ev.append(
        foreign._x(
            "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 8, 10, 50, device=0, bytes=4096
        )
    )
    ev.append(
        foreign._x("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 0, 8, 90, 5, device=0, bytes=64)
    )
    tl = load_file(foreign.write(foreign.kineto(ev), tmp_path / "t.json"))[0]
    assert tl.meta.extra["h2d_bytes"] == {"GPU 0": 4096}


@pytest.mark.parametrize("size", [-1, 1e300, "4096", True, None])
def test_copy_sizes_that_are_not_sizes_are_ignored(size):
    assert copy_bytes({"bytes": size}) is None
    assert copy_bytes({"memcpy_details": f"size:{'9' * 40} dest:0"}) is None
    assert copy_bytes({"memcpy_details": "size:4096 dest:0 async:1"}) == 4096


def test_callback_trace_carries_the_windows_bytes_and_kernel_time(tmp_path):
    """The profiler windows' totals travel in the header's metadata updates."""
    window = load_file(
        tf_conv_run(tmp_path / "w.json", 2_000.0, gpus=2, copy_bytes=BATCH * SAMPLE)
    )[0]
    acc = WindowFacts()
    cfg = RunConfig(replicas=2, global_batch=BATCH, sample_bytes=SAMPLE, framework="tensorflow")
    w = TraceWriter(str(tmp_path / "run.gpudiag.json"), Metadata(producer="gpudiag", config=cfg))
    w.timeline(window)
    for i in range(len(window.steps)):
        w.step(i, float(window.steps.start[i]), float(window.steps.end[i]), profiled=True)
    acc.add(window)
    w.update_meta(extra=acc.extra())
    w.close()
    tl = read_gpudiag(str(tmp_path / "run.gpudiag.json"))[0]
    assert layout_transposes.layout_share(tl) == pytest.approx(2_000 / 8_500, abs=1e-3)
    ids = [f.id for f in diagnose([tl]).findings]
    assert whole_batch_per_replica.ID in ids and layout_transposes.ID in ids


def test_sample_bytes_from_element_spec():
    tf = pytest.importorskip("tensorflow")
    images = tf.zeros((64, 32, 32, 3))
    ds = tf.data.Dataset.from_tensor_slices((images, tf.zeros((64,), tf.int32))).batch(16)
    cfg = run_config(describe_input(ds))
    assert (cfg.sample_bytes, cfg.global_batch) == (SAMPLE, 16)
    # a run without a strategy trains on TensorFlow's first GPU; none here: unknown
    expected = "0" if tf.config.list_logical_devices("GPU") else None
    assert nvml_indices(default_gpus("tensorflow"), None) == expected
    spec = (tf.TensorSpec((None, 32, 32, 3), tf.float32), tf.TensorSpec((None,), tf.int32))
    assert element_bytes(spec, batched=True) == SAMPLE
    assert element_bytes({"x": tf.TensorSpec((5,), tf.uint8)}, batched=False) == 5
    assert element_bytes(tf.TensorSpec((None, None), tf.float32), batched=True) is None


def test_nvml_indices():
    assert nvml_indices(["/job:localhost/replica:0/task:0/device:GPU:1"], None) == "1"
    assert nvml_indices(["/device:GPU:0", "/device:GPU:1"], "2,3") == "2,3"
    assert nvml_indices(["GPU:0"], "GPU-8a1b") is None  # UUIDs: not mapped
    assert nvml_indices(["/device:CPU:0"], None) is None


def test_compute_capability_is_read_back_as_a_number():
    cfg = RunConfig()
    cfg.update({"compute_capability": "7.5", "sample_bytes": "12292", "train_gpus": "0,1"})
    assert (cfg.compute_capability, cfg.sample_bytes, cfg.train_gpus) == (7.5, 12292, "0,1")
    cfg.update({"compute_capability": "Turing"})  # not a number: kept as it was
    assert cfg.compute_capability == 7.5


def test_xplane_copy_sizes_are_kept_per_device():
    """A real TensorFlow GPU profile: its MemcpyH2D events carry ``memcpy_details`` sizes."""
    pytest.importorskip("xprof")
    timelines = load_file(str(SAMPLES / "tf_gpu_multi_worker.xplane.pb"))
    copied = timelines[0].meta.extra["h2d_bytes"]
    assert copied == {"GPU 1": 3112, "GPU 4": 37447, "GPU 6": 40559}
    assert timelines[0].meta.extra["layout_transpose_us"] == 0.0
