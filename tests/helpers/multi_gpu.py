"""Small traces and NVML replays of the multi-GPU findings' shapes, built in the test:
a Keras conv net as TensorFlow's profiler writes it (layout conversions, one copy of the
batch per GPU), a PyTorch one as Kineto writes it, NVML readings of GPUs this process holds."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gpudiag.analyze import diagnose
from gpudiag.analyze.evidence import HostFacts, RankEvidence, Situation
from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.record.samplers import gpu_samples
from gpudiag.trace.load import load_file
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Metadata, Timeline
from tests.helpers import foreign
from tests.helpers.foreign import tf_event as _x
from tests.helpers.foreign import tf_meta as _m

STEP_US = 10_000.0
CONV = "volta_scudnn_128x64_relu_interior_nn_v1"
TF_SHUFFLE = "void tensorflow::functor::ShuffleInTensor3Simple<float, 2, 1, 0, false>(int)"
TF_SWAP = "void tensorflow::functor::SwapDimension1And2InTensor3UsingTiles<float, 256>(float)"
BATCH, SAMPLE = 256, 32 * 32 * 3 * 4 + 4  # CIFAR-sized float32 images and int32 labels


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


def kineto_run(
    path: Path, layout_kernel: str, layout_us: float, steps: int = 6, busy_us: float = 8_000.0
) -> str:
    """A PyTorch conv net (NCHW) whose cuDNN kernels convert to NHWC and back: ``busy_us``
    of kernels in each 10 ms step, ``layout_us`` of them converting."""
    ev = []
    for i in range(steps):
        t = i * STEP_US
        ev.append(foreign._x("user_annotation", f"ProfilerStep#{i}", 1, 1, t, STEP_US))
        conv = busy_us - layout_us
        ev.append(foreign._x("kernel", CONV, 0, 7, t + 500, conv, device=0))
        ev.append(foreign._x("kernel", layout_kernel, 0, 7, t + 500 + conv, layout_us, device=0))
    return foreign.write(foreign.kineto(ev, "NVIDIA A100"), path)


def nvml_replay(tmp_path: Path, held_mib: list[float], util: list[float]) -> Timeline:
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


def rank_evidence(tl: Timeline, cfg: RunConfig | None = None) -> RankEvidence:
    """What a rule sees of ``tl`` with the run configuration ``cfg`` (the trace's own when
    None)."""
    return RankEvidence(tl, None, [], cfg or tl.meta.config, HostFacts())


def situation(cfg: RunConfig, compute: float = 0.9, transfer: float = 0.0) -> Situation:
    shares = {"input": 0.0, "transfer": transfer, "compute": compute, "sync": 0.0}
    shares["other"] = 1.0 - sum(shares.values())
    return Situation(shares, "compute-bound", cfg, HostFacts())


def finding_ids(path: str) -> list[str]:
    return [f.id for f in diagnose(load_file(path)).findings]
