"""Small synthetic traces in the formats other profilers write, with known answers.

Each builder returns the JSON document (dict or list) that the producer would write; the event
names, categories and layout follow the real formats (PyTorch 1.8/1.9 Kineto, the pre-Kineto
autograd profiler, Kineto >= 1.10, DeepSeek's DeepEP traces, xprof trace-viewer JSON for TPU).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

DL_MULTI = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def write(doc: Any, path: Path) -> str:
    data = json.dumps(doc).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)
    return str(path)


def tf_meta(pid: int, what: str, name: str, tid: int | None = None) -> dict[str, Any]:
    """A TensorFlow trace-viewer metadata event (``process_name`` / ``thread_name``)."""
    ev: dict[str, Any] = {"ph": "M", "pid": pid, "name": what, "args": {"name": name}}
    if tid is not None:
        ev["tid"] = tid
    return ev


def tf_event(pid: int, tid: int, name: str, ts: float, dur: float, **args: Any) -> dict[str, Any]:
    """A TensorFlow trace-viewer complete event; ``args`` only when given."""
    ev: dict[str, Any] = {"ph": "X", "pid": pid, "tid": tid, "name": name, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def _x(
    cat: str | None, name: str, pid: Any, tid: Any, ts: float, dur: float, **args: Any
) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "ph": "X",
        "name": name,
        "pid": pid,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }
    if cat is not None:
        ev["cat"] = cat
    return ev


def legacy_kineto_dataloader(
    iters: int = 30,
    step_us: float = 100_000.0,
    loader_frac: float = 0.64,
    warmup_factor: float = 20.0,
) -> dict[str, Any]:
    """PyTorch 1.8 Kineto (``torch.autograd.profiler.profile(use_kineto=True)``): categories
    Operator / Kernel / Runtime / Memcpy, no ProfilerStep, no deviceProperties. A
    multi-process DataLoader takes ``loader_frac`` of every iteration; the first iteration
    (workers starting) is ``warmup_factor`` times longer."""
    ev: list[dict[str, Any]] = []
    t = 1_000_000.0
    cpu, gpu = 4242, 0
    for i in range(iters):
        length = step_us * (warmup_factor if i == 0 else 1.0)
        wait = length - step_us * (1 - loader_frac)
        ev.append(_x("Operator", DL_MULTI, cpu, cpu, t, wait))
        c = t + wait
        ev.append(_x("Runtime", "cudaMemcpyAsync", cpu, cpu, c, 50.0))
        ev.append(
            _x(
                "Memcpy",
                "Memcpy HtoD (Pageable -> Device)",
                gpu,
                "stream 7",
                c + 10,
                500.0,
                device=0,
            )
        )
        ev.append(_x("Operator", "aten::conv2d", cpu, cpu, c + 600, 2000.0))
        compute_us = step_us * (1 - loader_frac) - 2000.0
        for k in range(10):
            ev.append(_x("Runtime", "cudaLaunchKernel", cpu, cpu, c + 600 + 10 * k, 5.0))
            ev.append(
                _x(
                    "Kernel",
                    "volta_sgemm_128x64_nn",
                    gpu,
                    "stream 7",
                    c + 700 + k * compute_us / 10,
                    compute_us / 10 - 20,
                    device=0,
                )
            )
        ev.append(_x("Operator", "ConvolutionBackward0", cpu, cpu, c + 3000, 500.0))
        ev.append(_x("Operator", "Optimizer.step#SGD.step", cpu, cpu, c + 4000, 400.0))
        t += length
    return {"traceEvents": ev}


def autograd_legacy(iters: int = 8, step_us: float = 10_000.0) -> list[dict[str, Any]]:
    """The pre-Kineto autograd profiler's ``export_chrome_trace``: a JSON array, no ``cat``,
    host ops under pid "CPU functions", CUDA-event-timed op ranges under "CUDA functions"."""
    ev: list[dict[str, Any]] = []
    for i in range(iters):
        t = i * step_us
        ev.append(_x(None, "Optimizer.zero_grad#Adam.zero_grad", "CPU functions", 1, t, 100.0))
        ev.append(_x(None, "aten::addmm", "CPU functions", 1, t + 200, 300.0))
        ev.append(_x(None, "aten::addmm", "CUDA functions", 0, t + 300, 0.85 * step_us))
        ev.append(_x(None, "AddmmBackward", "CPU functions", 1, t + 600, 300.0))
    for e in ev:
        e.pop("args")
    return ev


def deepep_h800(layers: int = 10, layer_us: float = 10_000.0) -> dict[str, Any]:
    """Kineto trace shaped like DeepSeek-V3 training on H800 (profile-data train.json): one
    1F1B annotation, no ProfilerStep; DeepEP dispatch/combine on a communication stream run
    88% of the window under FP8 GEMMs on the compute stream."""
    ev: list[dict[str, Any]] = []
    cpu = 1166
    t0 = 1_740_461_679_000_000.0
    ev.append(_x("user_annotation", "1F1B", cpu, 2571, t0, layers * layer_us))
    ev.append(
        _x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", cpu, 2571, t0 + 10, 50.0)
    )
    for i in range(layers):
        t = t0 + i * layer_us
        ev.append(
            _x(
                "kernel",
                "void dpsk::ep::internode::dispatch<false, 8, true, 8>(int*)",
                0,
                27,
                t + 500,
                0.44 * layer_us,
                device=0,
                stream=27,
            )
        )
        ev.append(
            _x(
                "kernel",
                "void dpsk::ep::internode::combine<false, 8>(int*)",
                0,
                27,
                t + 500 + 0.44 * layer_us,
                0.44 * layer_us,
                device=0,
                stream=27,
            )
        )
        ev.append(
            _x(
                "kernel",
                "void dpsk::gemm::fp8_gemm_kernel<128, 128, e4m3>(float*)",
                0,
                7,
                t + 100,
                0.96 * layer_us,
                device=0,
                stream=7,
            )
        )
        ev.append(
            _x(
                "kernel",
                "void cdpsk::ep::CUB_scan_kernel(int*)",
                0,
                7,
                t + 0.97 * layer_us,
                10.0,
                device=0,
                stream=7,
            )
        )
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA H800"}],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 64},
        "traceEvents": ev,
    }


def kineto(events: list[dict[str, Any]], device: str = "NVIDIA H100") -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": device}],
        "traceEvents": events,
    }


def rocm_hipfree(iters: int = 6, step_us: float = 50_000.0) -> dict[str, Any]:
    """PyTorch on ROCm with the caching allocator off (PYTORCH_NO_HIP_MEMORY_CACHING=1):
    every op frees its output with hipFree, which waits for the device; 99% of the window."""
    ev: list[dict[str, Any]] = []
    cpu = 77
    for i in range(iters):
        t = i * step_us
        ev.append(_x("cpu_op", "Optimizer.zero_grad#SGD.zero_grad", cpu, cpu, t, 10.0))
        ev.append(_x("cpu_op", "aten::mm", cpu, cpu, t + 20, 30.0))
        ev.append(_x("cuda_runtime", "hipLaunchKernel", cpu, cpu, t + 25, 5.0))
        ev.append(_x("kernel", "Cijk_Alik_Bljk_SB_MT64x16x32", 2, 0, t + 40, 300.0, device=2))
        ev.append(_x("cpu_op", "MmBackward0", cpu, cpu, t + 50, 30.0))
        ev.append(_x("cuda_runtime", "hipFree", cpu, cpu, t + 100, 0.99 * step_us - 120))
    return kineto(ev, device="AMD Instinct MI250X")


def eager_decode(tokens: int = 40, token_us: float = 20_000.0) -> dict[str, Any]:
    """Kineto trace of eager LLM decoding (no backward, no optimizer): each token launches
    hundreds of tiny kernels, the GPU is idle between them; each token writes its keys and
    values into the KV cache (vLLM's reshape_and_cache kernel)."""
    ev: list[dict[str, Any]] = []
    cpu = 9
    for i in range(tokens):
        t = i * token_us
        ev.append(_x("user_annotation", "forward", cpu, cpu, t, token_us * 0.98))
        ev.append(_x("kernel", "reshape_and_cache_kernel", 0, 7, t + 5, 3.0, device=0))
        for k in range(60):
            s = t + k * token_us / 60
            ev.append(_x("cpu_op", "aten::linear", cpu, cpu, s, 200.0))
            ev.append(_x("cuda_runtime", "cudaLaunchKernel", cpu, cpu, s + 20, 8.0))
            ev.append(
                _x(
                    "kernel",
                    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64",
                    0,
                    7,
                    s + 40,
                    6.0,
                    device=0,
                )
            )
    return kineto(ev)


def xla_tpu(steps: int = 6, step_us: float = 10_000.0) -> dict[str, Any]:
    """xprof trace-viewer JSON of a JAX data-parallel step on TPU: the device has only derived
    lines; its "XLA Ops" line holds fusions and async all-reduce start/done pairs, its "XLA
    Modules" line one jit_train_step execution per step. The all-reduce runs 30% of the step,
    the second half of it exposed (done waits after the compute)."""
    ev: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "XLA Modules"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}},
        {"ph": "M", "name": "process_name", "pid": 9, "args": {"name": "/host:CPU"}},
        {"ph": "M", "name": "thread_name", "pid": 9, "tid": 5, "args": {"name": "python3"}},
    ]
    for i in range(steps):
        t = i * step_us
        ev.append(
            {
                "ph": "X",
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": step_us * 0.95,
                "name": f"jit_train_step({i + 100})",
            }
        )
        ops = [
            ("fusion.1", 0.0, 0.50),
            ("all-reduce-start.3", 0.50, 0.51),
            ("convolution.2", 0.51, 0.65),
            ("all-reduce-done.3", 0.65, 0.80),
            ("fusion.7", 0.80, 0.95),
        ]
        for name, a, b in ops:
            ev.append(
                {
                    "ph": "X",
                    "pid": 1,
                    "tid": 2,
                    "ts": t + a * step_us,
                    "dur": (b - a) * step_us,
                    "name": name,
                    "args": {"tf_op": "jit(train_step)/transpose(jvp(dense))/dot_general"},
                }
            )
        ev.append(
            {
                "ph": "X",
                "pid": 9,
                "tid": 5,
                "ts": t,
                "dur": 300.0,
                "name": "PjitFunction(train_step)",
            }
        )
    return {"displayTimeUnit": "ns", "traceEvents": ev}


def sync_every_step(iters: int = 8, step_us: float = 10_000.0) -> dict[str, Any]:
    """Kineto >= 1.10 trace where each step ends in loss.item(): cudaStreamSynchronize waits
    for the GPU, which then idles 30% of the step until the host launches the next one."""
    ev: list[dict[str, Any]] = []
    cpu = 5
    for i in range(iters):
        t = i * step_us
        ev.append(_x("user_annotation", f"ProfilerStep#{i}", cpu, cpu, t, step_us))
        ev.append(_x("cpu_op", "aten::mm", cpu, cpu, t + 10, 50.0))
        ev.append(_x("cpu_op", "MmBackward0", cpu, cpu, t + 100, 50.0))
        ev.append(
            _x("kernel", "ampere_sgemm_128x64_nn", 0, 7, t + 3000, 0.7 * step_us - 10, device=0)
        )
        ev.append(
            _x("cuda_runtime", "cudaStreamSynchronize", cpu, cpu, t + 200, 0.7 * step_us + 2790)
        )
    return kineto(ev)
