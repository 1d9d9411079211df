"""Small traces with the shapes of the real ones xprof and HTA were compared on, with known
answers: device-local copies beside compute (HTA's V100 trace_diff), a GPU that only copies
(a JAX 8-GPU profile), TPU host-offload copies and a psum (xprof's tpu_inference), an eager
decode step of many identical layers (vLLM), a rank that starts late (DLRM)."""

from __future__ import annotations

from typing import Any

from tests.helpers.foreign import _x, kineto


def kineto_d2d(steps: int = 6, step_us: float = 10_000.0) -> dict[str, Any]:
    """PyTorch on a V100: per step 60% compute kernels, then 15% DtoD copies and 5% memset
    nothing overlaps, then idle. Compute is 60% of the step, copies 20%."""
    ev: list[dict[str, Any]] = []
    cpu = 3
    for i in range(steps):
        t = i * step_us
        ev.append(_x("user_annotation", f"ProfilerStep#{i}", cpu, cpu, t, step_us))
        ev.append(_x("kernel", "volta_sgemm_128x64_nn", 0, 7, t, 0.6 * step_us, device=0))
        ev.append(
            _x(
                "gpu_memcpy",
                "Memcpy DtoD (Device -> Device)",
                0,
                7,
                t + 0.6 * step_us,
                0.15 * step_us,
                device=0,
            )
        )
        ev.append(
            _x("gpu_memset", "Memset (Device)", 0, 7, t + 0.75 * step_us, 0.05 * step_us, device=0)
        )
    return kineto(ev, device="Tesla V100-SXM2-16GB")


def _meta(pid: int, name: str, threads: dict[int, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}}
    ]
    for tid, thread in threads.items():
        out.append(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}}
        )
    return out


def _ev(pid: int, tid: int, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": ts, "dur": dur, "args": args}


def jax_copy_only_gpu(steps: int = 6, step_us: float = 10_000.0) -> dict[str, Any]:
    """xprof trace-viewer JSON of a JAX process with two GPUs: GPU 0 computes half of each
    step; GPU 1 only receives one device-to-device copy per step (5% of it)."""
    ev = _meta(1, "/device:GPU:0", {1: "Stream #13(Compute)", 2: "XLA Modules"})
    ev += _meta(2, "/device:GPU:1", {1: "Stream #14(MemcpyD2D)"})
    ev += _meta(9, "/host:CPU", {5: "python3"})
    for i in range(steps):
        t = i * step_us
        ev.append(_ev(1, 2, f"jit_train_step({i + 7})", t, 0.95 * step_us))
        ev.append(_ev(1, 1, "fusion_3", t + 0.1 * step_us, 0.5 * step_us))
        ev.append(_ev(2, 1, "MemcpyD2D", t + 0.7 * step_us, 0.05 * step_us))
        ev.append(_ev(9, 5, "PjitFunction(train_step)", t, 300.0))
    return {"displayTimeUnit": "ns", "traceEvents": ev}


def tpu_host_offload(steps: int = 5, step_us: float = 10_000.0) -> dict[str, Any]:
    """xprof trace-viewer JSON of a JAX program on TPU that offloads to host memory: per
    step a fusion (2%), then copy-start/copy-done pairs to and from host memory (93%), then a
    psum all-reduce (3%) that xprof categorises "all-reduce"."""
    ev = _meta(1, "/device:TPU:0", {1: "XLA Modules", 2: "XLA Ops"})
    ev += _meta(9, "/host:CPU", {5: "python3"})
    scope = {"tf_op": "jit(f)/jit(main)/add"}
    for i in range(steps):
        t = i * step_us
        ev.append(_ev(1, 1, f"jit_f({i + 1})", t, 0.99 * step_us))
        ev.append(
            _ev(
                1, 2, "broadcast_add_fusion", t, 0.02 * step_us, hlo_category="loop fusion", **scope
            )
        )
        ev.append(_ev(1, 2, "copy-start.1", t + 0.02 * step_us, 0.01 * step_us, **scope))
        ev.append(
            _ev(1, 2, "copy-done.1", t + 0.03 * step_us, 0.45 * step_us, hlo_category="async-copy")
        )
        ev.append(_ev(1, 2, "copy-start.2", t + 0.48 * step_us, 0.01 * step_us))
        ev.append(_ev(1, 2, "copy-done.2", t + 0.49 * step_us, 0.46 * step_us))
        ev.append(
            _ev(
                1,
                2,
                "reduce_sum_fusion",
                t + 0.95 * step_us,
                0.03 * step_us,
                hlo_category="all-reduce",
                tf_op="jit(_psum)/jit(main)/reduce_sum",
            )
        )
        ev.append(_ev(9, 5, "PjitFunction(f)", t, 300.0))
    return {"displayTimeUnit": "ns", "traceEvents": ev}


def eager_decode_layers(layers: int = 35, layer_us: float = 1_900.0) -> dict[str, Any]:
    """Kineto trace of one eager decode step (vLLM, TP8 rank, B200): the model's forward
    holds ``layers`` decoder layers of ``layer_us`` each, then sampling; the step is ~84 ms."""
    ev: list[dict[str, Any]] = []
    cpu = 11
    t0 = 5_000.0
    step_us = layers * layer_us + 17_500.0
    ev.append(_x("python_function", "nn.Module: Qwen2ForCausalLM_0", cpu, cpu, t0, step_us))
    for i in range(layers):
        t = t0 + 500.0 + i * layer_us
        ev.append(
            _x("python_function", "nn.Module: Qwen2DecoderLayer", cpu, cpu, t, layer_us - 30.0)
        )
        for k in range(6):
            s = t + k * layer_us / 6
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", cpu, cpu, s, 8.0))
            ev.append(
                _x("kernel", "sm100_xmma_gemm_bf16bf16_bf16f32", 0, 7, s + 20, 200.0, device=0)
            )
    ev.append(
        _x("kernel", "sampling_top_k_kernel", 0, 7, t0 + step_us - 9_000.0, 8_000.0, device=0)
    )
    return kineto(ev, device="NVIDIA B200")


def tpu_offload_xspace(steps: int = 5, step_ns: int = 10_000_000) -> bytes:
    """The same TPU program as an XSpace (``.xplane.pb``), as JAX's profiler writes it: a
    device plane with "XLA Modules" and "XLA Ops" lines, each op's ``hlo_category`` a stat
    of its metadata. The copy to host memory ends in an op xprof only categorises
    ("async-copy"), the psum is an "all-reduce"."""
    from gpudiag.trace.tf.xspace.schema import XSpace

    space = XSpace()
    plane = space.planes.add(id=2, name="/device:TPU:0")
    ops = {
        1: ("broadcast_add_fusion", "loop fusion"),
        2: ("copy-start.1", "async-copy"),
        3: ("fusion.10", "async-copy"),
        4: ("all-reduce", "all-reduce"),
        5: ("jit_f(123)", ""),
    }
    plane.stat_metadata[1].id = 1
    plane.stat_metadata[1].name = "hlo_category"
    for i, (name, category) in ops.items():
        plane.event_metadata[i].id = i
        plane.event_metadata[i].name = name
        if category:
            plane.event_metadata[i].stats.add(metadata_id=1, str_value=category)
    modules = plane.lines.add(id=1, name="XLA Modules", timestamp_ns=1_000_000)
    line = plane.lines.add(id=2, name="XLA Ops", timestamp_ns=1_000_000)
    ps = 1000 * step_ns
    for k in range(steps):
        t = k * ps
        modules.events.add(metadata_id=5, offset_ps=t, duration_ps=int(0.99 * ps))
        for op, a, b in ((1, 0.0, 0.02), (2, 0.02, 0.03), (3, 0.03, 0.95), (4, 0.95, 0.98)):
            line.events.add(
                metadata_id=op, offset_ps=t + int(a * ps), duration_ps=int((b - a) * ps)
            )
    return space.SerializeToString()
