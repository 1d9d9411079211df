"""Opening a fit's recording: the trace, what is known before the first step, the samplers.

``start_session`` builds the ``RecordingSession`` (``record/session.py``) the callback then
drives hook by hook; everything it starts is stopped again if opening fails.

    session = start_session(path, meta, backend, make_samplers, model=model)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gpudiag.record.backends import RecordBackend
from gpudiag.record.call_timer import CallTimer
from gpudiag.record.compile_watch import start_watch
from gpudiag.record.generation import generation_of
from gpudiag.record.memory import MemoryProbe
from gpudiag.record.profiler import DEFAULT_WARMUP_STEPS, WindowSchedule
from gpudiag.record.samplers import SamplerSet
from gpudiag.record.session import RecordingSession
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.model.timeline import Metadata, RecordedLint


def steps_per_execution(model: Any) -> int:
    """The batches Keras runs per train-function call (``compile(steps_per_execution=)``)."""
    return generation_of(model).steps_per_execution(model)


def optimizer_scope(meta: Metadata, findings: Sequence[RecordedLint]) -> str | None:
    """The optimizer's name scope where the windows should time its ops: only where the
    pre-fit findings say it updates a large embedding densely (TensorFlow profiles)."""
    if meta.framework != "tensorflow" or not any(
        f.id == "dense-embedding-updates" for f in findings
    ):
        return None
    return meta.config.optimizer_scope if meta.config is not None else None


def start_session(
    path: str,
    meta: Metadata,
    backend: RecordBackend,
    make_samplers: Callable[[TraceWriter], SamplerSet],
    *,
    model: Any = None,
    findings: Sequence[RecordedLint] = (),
    input_facts: dict[str, Any] | None = None,
    schedule: WindowSchedule | None = None,
    notes: Sequence[str] = (),
    profile_steps: int = 5,
    profile_dir: str | None = None,
    in_epoch_start: int = DEFAULT_WARMUP_STEPS,
    steps_per_epoch: int | None = None,
    on_disk_error: Callable[[str], None] | None = None,
) -> RecordingSession:
    """Open the trace, write what is known before the first step (lints, the
    input pipeline, the samplers' and windows' limitations) and start the samplers.

    Returns:
        The running session; on failure everything it started is stopped again and the
        exception propagates (the callback then trains without recording).
    """
    writer = TraceWriter(path, meta, on_error=on_disk_error)
    watch = start_watch(lambda emit: backend.compile_watch(model, emit), writer)
    for f in findings:
        writer.finding(f)
    if input_facts:
        writer.pipeline({"input": input_facts})
    session = RecordingSession(
        writer,
        make_samplers(writer),
        backend,
        schedule=schedule,
        profile_steps=profile_steps,
        profile_dir=profile_dir,
        calls=CallTimer(model, wait=backend.wait_for, completion=backend.completion, watch=watch),
        in_epoch_start=in_epoch_start,
        steps_per_epoch=steps_per_epoch,
        steps_per_execution=steps_per_execution(model),
        watch=watch,
        memory=MemoryProbe(backend.device_memory),
        op_scope=optimizer_scope(meta, findings),
    )
    try:
        samplers = session.samplers
        if samplers.gpu is not None and samplers.gpu.available:
            # the GPUs NVML shows this process, against those the framework lists (gpu-unused)
            writer.update_meta(
                device_type="GPU",
                devices=samplers.gpu.sources,
                config={"nvml_gpus": len(samplers.gpu.sources)},
            )
        samplers.start_all()
        session.read_memory()  # before the first step: what does not grow with the batch
        limitations = samplers.limitations() + list(notes)
        if limitations:
            writer.update_meta(limitations=limitations)
        writer.flush()
    except Exception:
        session.teardown()
        raise
    return session
