"""torch: ``torch.profiler`` windows (Kineto JSON, read by the Kineto reader) with
``ProfilerStep#N`` markers, ranks from ``torch.distributed``.

On a machine without CUDA the window holds no device events: the training thread's own
``cpu_op`` events (the ATen ops Keras's step runs) are then the device, as the op threads
are in a CPU-only TensorFlow or JAX profile.
"""

from __future__ import annotations

import contextlib
import glob
import os
import sys
from typing import Any

from gpudiag.record.backends.base import ProfilerSession, RecordBackend
from gpudiag.record.compile_watch import CompileWatch, Emit
from gpudiag.record.memory import DeviceMemory, torch_memory
from gpudiag.record.rank_info import RankInfo
from gpudiag.trace.model.timeline import Timeline


class _TorchSession(ProfilerSession):
    def __init__(self, logdir: str) -> None:
        import torch
        import torch.profiler as tp

        acts = [tp.ProfilerActivity.CPU]
        if torch.cuda.is_available():
            acts.append(tp.ProfilerActivity.CUDA)
        self.logdir = logdir
        self.prof = tp.profile(activities=acts)
        self.prof.__enter__()

    def stop(self) -> None:
        self.prof.__exit__(None, None, None)
        self.prof.export_chrome_trace(os.path.join(self.logdir, "torch.pt.trace.json"))


class TorchBackend(RecordBackend):
    def start_profiler(self, logdir: str) -> ProfilerSession:
        return _TorchSession(logdir)

    def step_marker(self, step: int) -> Any:
        import torch

        # the name Kineto readers (ours, HTA, TensorBoard) take for a step
        return torch.profiler.record_function(f"ProfilerStep#{step}")

    def wait_for(self, result: Any) -> bool:
        import torch

        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return True

    def completion(self, result: Any) -> Any:
        import torch

        if not torch.cuda.is_available():
            return None  # CPU ops run as they are called
        event = torch.cuda.Event()
        event.record()
        return event.synchronize

    def device_memory(self) -> list[DeviceMemory]:
        return torch_memory()

    def decode(self, logdir: str) -> tuple[Timeline | None, str | None]:
        files = glob.glob(os.path.join(logdir, "*.json"))
        if not files:
            return None, "torch profiler wrote no trace"
        from gpudiag.trace.load import load_file

        tl = load_file(files[0])[0]
        torch = sys.modules.get("torch")
        if not tl.has_device_activity() and torch is not None and not torch.cuda.is_available():
            add_cpu_ops(tl, files[0])
        return tl, None

    def compile_watch(self, model: Any, emit: Emit) -> CompileWatch | None:
        """torch.compile's graphs where Keras compiles the step (jit_compile=True);
        otherwise Keras runs torch eagerly and nothing compiles."""
        if model is None or not getattr(model, "jit_compile", False):
            return None
        from gpudiag.record.compile_torch import TorchCompileWatch

        return TorchCompileWatch(emit)

    def user_profiler_running(self) -> str:
        import torch.autograd.profiler as ap

        if ap._is_profiler_enabled:
            return "a torch.profiler session of the program's own is running"
        return ""

    def rank_info(self, model: Any) -> RankInfo | None:
        torch = sys.modules.get("torch")
        if torch is None:
            return None
        with contextlib.suppress(Exception):
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
                master = f"{os.environ.get('MASTER_ADDR', '')}:{os.environ.get('MASTER_PORT', '')}"
                return RankInfo(
                    rank=int(dist.get_rank()),
                    world_size=int(dist.get_world_size()),
                    cluster={"master": [master]} if master != ":" else None,
                    source="torch.distributed",
                )
        return None


CPU_ONLY = "CPU-only profile: device time is the busy time of the framework's op threads"


def add_cpu_ops(tl: Timeline, path: str) -> None:
    """A CPU-only window: the ``cpu_op`` events of the threads that ran the step markers
    become the device "CPU" (nested ops merge into their union). Ops of other threads (a
    DataLoader's collate) are input work, not the step's computation."""
    import numpy as np

    from gpudiag.trace.model.timeline import Kind
    from gpudiag.trace.source.chrome import open_chrome

    ops: dict[Any, list[tuple[float, float]]] = {}
    step_threads: set[Any] = set()
    for ev in open_chrome(path, index=False).events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        name, cat = str(ev.get("name", "")), ev.get("cat")
        key = (ev.get("pid"), ev.get("tid"))
        if name.startswith("ProfilerStep#") and cat != "gpu_user_annotation":
            step_threads.add(key)
        elif cat == "cpu_op":
            ts = float(ev.get("ts", 0.0))
            ops.setdefault(key, []).append((ts, ts + float(ev.get("dur", 0.0))))
    spans = [iv for key in step_threads for iv in ops.get(key, [])]
    if not spans:
        return
    arr = np.asarray(spans, dtype=np.float64)
    tl.add_activity("CPU", Kind.COMPUTE, arr[:, 0], arr[:, 1])
    tl.meta.device_type = tl.meta.device_type or "CPU"
    tl.meta.limitations = [
        lim for lim in tl.meta.limitations if not lim.startswith("no GPU events")
    ] + [CPU_ONLY]
