"""The multi-GPU lessons as findings: layout transposes, the whole batch copied to every
replica, GPUs held but not trained on. Each fires on a small trace (or NVML replay) of its
shape built here and stays silent on the sample traces without that cause."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gpudiag.analyze import diagnose, rules
from gpudiag.analyze.evidence import HostFacts, RankEvidence, Situation
from gpudiag.analyze.rules import gpus_held_idle, layout_transposes, whole_batch_per_replica
from gpudiag.record.lint import describe_input, element_bytes, run_config
from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.record.samplers import gpu_samples
from gpudiag.record.window_facts import WindowFacts, default_gpus, nvml_indices
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.facts import copy_bytes
from gpudiag.trace.gpudiag_format import read_gpudiag
from gpudiag.trace.load import load_file
from gpudiag.trace.runconfig import RunConfig
from gpudiag.trace.timeline import Metadata, Timeline
from tests import foreign

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"
STEP_US = 10_000.0
CONV = "volta_scudnn_128x64_relu_interior_nn_v1"
TF_SHUFFLE = "void tensorflow::functor::ShuffleInTensor3Simple<float, 2, 1, 0, false>(int)"
TF_SWAP = "void tensorflow::functor::SwapDimension1And2InTensor3UsingTiles<float, 256>(float)"


def _m(pid: int, what: str, name: str, tid: int | None = None) -> dict[str, Any]:
    ev: dict[str, Any] = {"ph": "M", "pid": pid, "name": what, "args": {"name": name}}
    if tid is not None:
        ev["tid"] = tid
    return ev


def _x(pid: int, tid: int, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": ts, "dur": dur, "args": args}


def tf_conv_run(
    path: Path,
    transpose_us: float,
    gpus: int = 1,
    copy_bytes: int = 0,
    steps: int = 8,
    op: str = "gradient_tape/conv2d/Conv2D/Conv2DBackpropFilter:Conv2DBackpropFilter",
) -> str:
    """A Keras conv net as TensorFlow's profiler writes it: per step and GPU a copy of the
    batch, convolutions and the layout conversions around them, 9 ms busy in a 10 ms step."""
    ev = [_m(1, "process_name", "/host:CPU"), _m(1, "thread_name", "python", 1)]
    for g in range(gpus):
        pid = 10 + g
        ev += [
            _m(pid, "process_name", f"/device:GPU:{g}"),
            _m(pid, "thread_name", "Stream #14(Compute)", 1),
            _m(pid, "thread_name", "Stream #15(MemcpyH2D)", 2),
        ]
    for i in range(steps):
        t = i * STEP_US
        ev.append(_x(1, 1, f"train {i}", t, STEP_US))
        for g in range(gpus):
            pid = 10 + g
            ev.append(
                _x(pid, 2, "MemcpyH2D", t + 100, 400, memcpy_details=f"size:{copy_bytes} dest:{g}")
            )
            conv = 8_500.0 - transpose_us
            ev.append(_x(pid, 1, CONV, t + 500, conv, tf_op="gradient_tape/conv2d/Conv2D"))
            ev.append(_x(pid, 1, TF_SHUFFLE, t + 500 + conv, transpose_us / 2, tf_op=op))
            t_swap = t + 500 + conv + transpose_us / 2
            ev.append(_x(pid, 1, TF_SWAP, t_swap, transpose_us / 2, tf_op=op))
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": ev}))
    return str(path)


def kineto_run(path: Path, layout_kernel: str, layout_us: float, steps: int = 6) -> str:
    """A PyTorch conv net (NCHW) whose cuDNN kernels convert to NHWC and back."""
    ev = []
    for i in range(steps):
        t = i * STEP_US
        ev.append(foreign._x("user_annotation", f"ProfilerStep#{i}", 1, 1, t, STEP_US))
        conv = 8_000.0 - layout_us
        ev.append(foreign._x("kernel", CONV, 0, 7, t + 500, conv, device=0))
        ev.append(foreign._x("kernel", layout_kernel, 0, 7, t + 500 + conv, layout_us, device=0))
    return foreign.write(foreign.kineto(ev, "NVIDIA A100"), path)


def _evidence(tl: Timeline, cfg: RunConfig | None = None) -> RankEvidence:
    return RankEvidence(tl, None, [], cfg or tl.meta.config, HostFacts())


def _situation(cfg: RunConfig, compute: float = 0.9, transfer: float = 0.0) -> Situation:
    shares = {"input": 0.0, "transfer": transfer, "compute": compute, "sync": 0.0}
    shares["other"] = 1.0 - sum(shares.values())
    return Situation(shares, "compute-bound", cfg, HostFacts())


def _ids(path: str) -> list[str]:
    return [f.id for f in diagnose(load_file(path)).findings]


# ---- layout transposes -------------------------------------------------------------------


def test_tensorflow_layout_conversions_are_found_with_their_share(tmp_path):
    path = tf_conv_run(tmp_path / "host.trace.json", transpose_us=2_000.0)
    d = diagnose(load_file(path))
    f = next(f for f in d.findings if f.id == layout_transposes.ID)
    assert f.evidence["layout_transpose_pct"] == pytest.approx(100 * 2_000 / 8_500, abs=0.1)
    assert f.severity == "high"
    fix = next(s for s in d.suggestions if s.finding == layout_transposes.ID)
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
    share = layout_transposes.layout_share(tl)
    assert share == (pytest.approx(2_000 / 8_500, abs=1e-3) if counted else 0.0)


def test_below_five_percent_of_kernel_time_is_silent(tmp_path):
    path = tf_conv_run(tmp_path / "host.trace.json", transpose_us=300.0)  # 3.5%
    assert layout_transposes.ID not in _ids(path)


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
    assert layout_transposes.layout_share(tl) == pytest.approx(0.25)
    assert layout_transposes.ID in _ids(path)


def test_a_user_kernel_named_like_a_transpose_elsewhere_is_not_counted(tmp_path):
    path = kineto_run(tmp_path / "t.json", "void at::native::transpose_kernel<float>()", 2_000.0)
    assert layout_transposes.layout_share(load_file(path)[0]) == 0.0


def _titles(cfg: RunConfig) -> list[str]:
    f = layout_transposes.Finding(layout_transposes.ID, "high", "", {"layout_transpose_pct": 23.6})
    return [s.title for s in layout_transposes.advise(f, _situation(cfg))]


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
    assert {"full-precision", "xla-off", layout_transposes.ID} <= {f.id for f in d.findings}
    mine = [s.title for s in d.suggestions if s.finding == layout_transposes.ID]
    assert mine == ["Build the convolutions channels-first"]
    assert sum("mixed precision" in s.title.lower() for s in d.suggestions) == 1


def test_unknown_compute_capability_says_which_remedy_needs_it():
    f = layout_transposes.Finding(layout_transposes.ID, "high", "", {"layout_transpose_pct": 20.0})
    cfg = RunConfig(framework="tensorflow", precision="float32")
    mp = next(s for s in layout_transposes.advise(f, _situation(cfg)) if "mixed" in s.title)
    assert "compute capability >= 7.0" in mp.detail
    every = layout_transposes.advise(f, _situation(cfg))
    assert all(s.expected_gain_range[1] <= 1 / (1 - 0.2 * 0.9) + 0.01 for s in every)


# ---- the whole batch on every replica ----------------------------------------------------

BATCH, SAMPLE = 256, 32 * 32 * 3 * 4 + 4  # CIFAR-sized float32 images and int32 labels


@pytest.mark.parametrize("per_replica, fires", [(BATCH, True), (BATCH // 2, False)])
def test_whole_batch_copied_to_each_gpu(tmp_path, per_replica, fires):
    path = tf_conv_run(tmp_path / "host.trace.json", 500.0, gpus=2, copy_bytes=per_replica * SAMPLE)
    tl = load_file(path)[0]
    assert tl.meta.extra["h2d_bytes"] == {"GPU 0": 8 * per_replica * SAMPLE} | {
        "GPU 1": 8 * per_replica * SAMPLE
    }
    cfg = RunConfig(replicas=2, global_batch=BATCH, sample_bytes=SAMPLE)
    f = whole_batch_per_replica.detect(_evidence(tl, cfg))
    assert (f is not None) is fires
    if f is not None:
        mib = BATCH * SAMPLE / (1 << 20)
        assert f.evidence["copied_per_replica_step_mib"] == pytest.approx(mib, 1e-3)
        assert f.evidence["share_per_replica_step_mib"] == pytest.approx(mib / 2, 1e-3)
        s = whole_batch_per_replica.advise(f, _situation(cfg, compute=0.6, transfer=0.2))
        assert s[0].title == "Let the strategy distribute the dataset"
        assert s[0].expected_gain == pytest.approx(1 / (1 - 0.2 * 0.5), rel=1e-3)


def test_hand_rolled_split_under_no_strategy(tmp_path):
    """make_parallel / tf.split across GPUs: Keras sees one replica, two GPUs get the batch."""
    path = tf_conv_run(tmp_path / "host.trace.json", 500.0, gpus=2, copy_bytes=BATCH * SAMPLE)
    cfg = RunConfig(replicas=1, global_batch=BATCH, sample_bytes=SAMPLE)
    f = whole_batch_per_replica.detect(_evidence(load_file(path)[0], cfg))
    assert f is not None and f.evidence["replicas"] == 2


def test_one_gpu_receiving_its_whole_batch_is_silent(tmp_path):
    path = tf_conv_run(tmp_path / "host.trace.json", 500.0, gpus=1, copy_bytes=BATCH * SAMPLE)
    cfg = RunConfig(replicas=1, global_batch=BATCH, sample_bytes=SAMPLE)
    assert whole_batch_per_replica.detect(_evidence(load_file(path)[0], cfg)) is None


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


# ---- GPUs held but not trained on --------------------------------------------------------


def _replay(tmp_path: Path, held_mib: list[float], util: list[float]) -> Timeline:
    """Two seconds of NVML readings of GPUs where this process holds ``held_mib``."""
    devices = []
    for mib, u in zip(held_mib, util, strict=True):
        procs = [{"pid": 4242, "name": "other", "used_mib": 900}]
        if mib:
            procs.append({"pid": os.getpid(), "name": "python3", "used_mib": mib})
        devices.append(
            {
                "name": "NVIDIA H100 80GB HBM3",
                "memory_total_mib": 81559,
                "power_limit_w": 700.0,
                "processes": procs,
                "util_samples_ms": [[t * 166.7, u] for t in range(12)],
                "reads": [{"t_s": t * 0.5, "mem_used_mib": mib + 900} for t in range(4)],
            }
        )
    fixture = {"driver_version": "550.54.15", "duration_s": 2.0, "devices": devices}
    (tmp_path / "nvml.json").write_text(json.dumps(fixture))
    fake = ReplayNvml.from_file(str(tmp_path / "nvml.json"))
    nv = NvmlSession(lib=fake)
    tl = Timeline(meta=Metadata(producer="gpudiag"))
    for _ in range(4):
        fake.advance(0.5)
        for name, source, ts, value in gpu_samples(nv.read()):
            tl.add_counter(name, source, [ts], [value])
    nv.close()
    return tl.freeze()


def test_one_gpu_run_holding_four(tmp_path):
    tl = _replay(tmp_path, [78_000, 78_000, 78_000, 78_000], [97, 0, 0, 0])
    f = gpus_held_idle.detect(_evidence(tl, RunConfig(train_gpus="0", training=True)))
    assert f is not None and f.severity == "high"
    assert f.evidence["idle_gpus"] == ["GPU 1", "GPU 2", "GPU 3"]
    found = [f]
    shown = rules.advise(found, _situation(RunConfig(training=True)))
    assert [s.title for s in shown] == [
        "Train on every GPU the process holds",
        "Hide the GPUs you do not train on",  # no gain claimed, still shown
    ]
    assert shown[0].expected_gain_range == [1.0, 4.0]  # 4 GPUs held, 1 trained on: at most
    assert shown[1].expected_gain_range == []


def test_strategy_over_every_held_gpu_is_silent(tmp_path):
    tl = _replay(tmp_path, [78_000, 78_000], [97, 95])
    assert gpus_held_idle.detect(_evidence(tl, RunConfig(train_gpus="0,1"))) is None


def test_other_processes_on_other_gpus_are_not_ours(tmp_path):
    tl = _replay(tmp_path, [78_000, 0], [97, 60])  # GPU 1: someone else's job only
    assert gpus_held_idle.detect(_evidence(tl, RunConfig(train_gpus="0"))) is None
    assert gpus_held_idle.detect(_evidence(tl, RunConfig())) is None


def test_without_the_strategy_utilisation_tells(tmp_path):
    tl = _replay(tmp_path, [78_000, 500], [97, 0])
    f = gpus_held_idle.detect(_evidence(tl, RunConfig()))
    assert f is not None and f.evidence["idle_gpus"] == ["GPU 1"]
    assert f.severity == "moderate"  # a bare context, not the allocator's grab
    assert f.evidence["told_by"] == "utilisation"
    hide = gpus_held_idle.advise(f, _situation(RunConfig()))[0]
    assert "CUDA_VISIBLE_DEVICES=0 " in hide.detail  # the GPU that works, by NVML's number


def test_numbering_that_does_not_match_nvml_is_not_guessed(tmp_path):
    tl = _replay(tmp_path, [0, 78_000], [0, 97])  # trains on "0" but holds only GPU 1
    assert gpus_held_idle.detect(_evidence(tl, RunConfig(train_gpus="0"))) is None


def test_nvml_indices():
    assert nvml_indices(["/job:localhost/replica:0/task:0/device:GPU:1"], None) == "1"
    assert nvml_indices(["/device:GPU:0", "/device:GPU:1"], "2,3") == "2,3"
    assert nvml_indices(["GPU:0"], "GPU-8a1b") is None  # UUIDs: not mapped
    assert nvml_indices(["/device:CPU:0"], None) is None


# ---- the sample traces -------------------------------------------------------------------

NEW = {layout_transposes.ID, whole_batch_per_replica.ID, gpus_held_idle.ID}
# a PyTorch NCHW model on an A100: 13% of kernel time in cuDNN's nchwToNhwc / nhwcToNchw
WITH_CAUSE = {"a100_nccl_sparse.json.gz": {layout_transposes.ID}}


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.iterdir() if p.name != "README.md"))
def test_sample_traces(name):
    found = {f.id: f for f in diagnose(load_file(str(SAMPLES / name))).findings}
    assert set(found) & NEW == WITH_CAUSE.get(name, set())
    if layout_transposes.ID in found:  # real, but the run is launch-bound: 18% compute
        assert found[layout_transposes.ID].severity == "info"
        assert found[layout_transposes.ID].evidence["layout_transpose_pct"] == 13.1
