"""JAX: ``jax.profiler`` windows with ``StepTraceAnnotation`` markers (the same XSpace
format as TensorFlow's), ranks from ``jax.process_index``/``process_count``."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from gpudiag.record.backends.base import STEP_MARKER, ProfilerSession, RecordBackend
from gpudiag.record.backends.xspace import decode_xspace
from gpudiag.record.compile_watch import CompileWatch, Emit
from gpudiag.record.memory import DeviceMemory, jax_memory
from gpudiag.record.rank_info import RankInfo
from gpudiag.trace.model.timeline import Timeline


class _JaxSession(ProfilerSession):
    def stop(self) -> None:
        import jax

        # On an accelerator the profiled steps were not waited for one by one
        # (JaxBackend.wait_for): let their device work finish inside the profile.
        with contextlib.suppress(Exception):
            jax.block_until_ready(jax.live_arrays())
        jax.profiler.stop_trace()


def _on_accelerator(result: Any) -> bool:
    """True when the step's outputs live on a GPU or TPU (not the host's CPU devices)."""
    import jax

    for leaf in jax.tree_util.tree_leaves(result):
        devices = getattr(leaf, "devices", None)
        if callable(devices):
            return any(d.platform != "cpu" for d in devices())
    return False


class JaxBackend(RecordBackend):
    def start_profiler(self, logdir: str) -> ProfilerSession:
        import jax

        jax.profiler.start_trace(logdir)
        return _JaxSession()

    def step_marker(self, step: int) -> Any:
        import jax

        return jax.profiler.StepTraceAnnotation(STEP_MARKER, step_num=step)

    def wait_for(self, result: Any) -> bool:
        """On the CPU, block: its profile has no launch-to-execution link, so a step's
        device work must fall inside the step's marker. On a GPU or TPU, do not: the device
        "Steps" line is derived from the launches' correlation ids (trace/tf/xspace/steps.py),
        and a block per step would serialise host and device, turning host work that
        overlaps the device in an unprofiled run (Keras slicing the next batch) into
        exposed input wait. Measured on an H100: a conv net whose steps run back to back on
        the device (6.9 ms of XLA module time in 7.0 ms steps) read as 38% input wait, its
        profiled steps stretched to 10.8 ms by the blocks (sample_traces/h100_keras_jax)."""
        import jax

        if _on_accelerator(result):
            return False
        jax.block_until_ready(result)
        return True

    def completion(self, result: Any) -> Any:
        import jax

        logs = result[0] if isinstance(result, tuple) and result else result
        # the logs only: the state is donated to the next step and deleted with it
        return lambda: jax.block_until_ready(logs)

    def decode(self, logdir: str) -> tuple[Timeline | None, str | None]:
        return decode_xspace(logdir)

    def device_memory(self) -> list[DeviceMemory]:
        return jax_memory()

    def compile_watch(self, model: Any, emit: Emit) -> CompileWatch | None:
        """Every jit trace, lowering and compilation (jitted step or, run eagerly, each
        primitive), from jax.monitoring."""
        from gpudiag.record.compile_jax import JaxCompileWatch

        return JaxCompileWatch(emit)

    def rank_info(self, model: Any) -> RankInfo | None:
        jax = sys.modules.get("jax")
        if jax is None:
            return None
        with contextlib.suppress(Exception):
            if jax.process_count() > 1:
                coordinator = os.environ.get("JAX_COORDINATOR_ADDRESS", "")
                with contextlib.suppress(Exception):
                    from jax._src import distributed

                    coordinator = distributed.global_state.coordinator_address or coordinator
                return RankInfo(
                    rank=int(jax.process_index()),
                    world_size=int(jax.process_count()),
                    cluster={"coordinator": [coordinator]} if coordinator else None,
                    source="jax.process_index",
                )
        return None
