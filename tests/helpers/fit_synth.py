"""A fit as gpudiag's callback records it, built small: epochs of steps, each epoch's
first-batch wait and teardown, validation, other callbacks' epoch hooks and gpudiag's own
hook time, with every figure known exactly (seconds in, microseconds on the timeline)."""

from __future__ import annotations

from typing import Any

from gpudiag.trace.model.timeline import Kind, Timeline
from gpudiag.trace.native.events import SPAN_CALLBACK, SPAN_OWN

S = 1e6


def fit_timeline(
    epochs: int = 3,
    steps: int = 50,
    step_s: float = 0.002,
    startup_s: float = 0.1,
    compile_s: float = 0.5,
    first_wait_s: float = 0.0,
    teardown_s: float = 0.0,
    validation_s: float = 0.0,
    callback_s: float = 0.0,
    callback: str = "ModelCheckpoint",
    own_s: float = 0.0,
    stall_s: float = 0.0,
    spike_s: float = 0.0,
    callback_first: bool = False,
    timed: bool = True,
    facts: list[dict[str, Any]] | None = None,
    fit_span: bool = True,
) -> Timeline:
    """``epochs`` epochs of ``steps`` steps; per epoch the first step takes ``first_wait_s``
    more (epoch 1 also ``compile_s``), the last ``teardown_s`` more; then validation, a
    callback's ``on_epoch_end`` and gpudiag's own ``epoch_end``; ``stall_s`` once after the
    last epoch's callbacks, ``spike_s`` once in the last epoch's first step;
    ``callback_first``: the callback is listed before gpudiag, so its ``on_epoch_end`` runs
    inside the epoch's last step (no validation then). Every step is profiled, the device
    computing all of it."""
    tl = Timeline()
    t = 0.0
    starts, ends = [], []
    spans: dict[str, list[tuple[float, float]]] = {}

    def span(name: str, a: float, b: float) -> None:
        spans.setdefault(name, []).append((a, b))

    t += startup_s * S
    for e in range(epochs):
        eb = t
        t += 1.0  # gpudiag's on_epoch_begin
        for i in range(steps):
            d = step_s
            if i == 0:
                d += first_wait_s + (compile_s if e == 0 else 0.0)
                d += spike_s if e == epochs - 1 else 0.0
            if i == steps - 1:
                d += teardown_s
            starts.append(t)
            if i == steps - 1 and callback_first and callback_s:
                span(SPAN_CALLBACK + callback, t + d * S, t + (d + callback_s) * S)
                d += callback_s
            ends.append(t + d * S)
            t += d * S
        if validation_s:
            span("evaluation", t, t + validation_s * S)
            t += validation_s * S
        span("epoch", eb, t)
        if own_s:
            span(SPAN_OWN, t, t + own_s * S)
            t += own_s * S
        if callback_s and not callback_first:
            if timed:
                span(SPAN_CALLBACK + callback, t, t + callback_s * S)
            t += callback_s * S
    t += stall_s * S
    if fit_span:
        span("fit", 0.0, t)
    tl.spans = spans
    n = len(starts)
    tl.add_steps(range(n), starts, ends, profiled=True)
    tl.add_activity("CPU", Kind.COMPUTE, starts, ends)
    tl.meta.extra["callbacks"] = (
        facts
        if facts is not None
        else [{"class": callback, "save_freq": "epoch", "save_weights_only": False, "timed": timed}]
    )
    if validation_s:
        tl.meta.extra["validation_batches"] = 100 * epochs
    return tl.freeze()
