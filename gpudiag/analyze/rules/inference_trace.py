"""``inference-trace``: the run was read as inference: a PyTorch trace without backward or
optimizer events among many host ops, or a TF or JAX profile that says so (a predict or
serving function: ``trace/names/facts.py``); older TF versions name no backward op at all, so its
absence there proves nothing.

Why it matters: said plainly, so that no gradient or training-batch advice follows. When the
device idles between tiny kernels it names the usual cause: eager, host/launch-bound decoding
(each token launches hundreds of small kernels from Python), with the kernel-launch-bound
thresholds.

Example: "Inference is host/launch-bound (eager decode): device idle 40.0% between tiny
kernels (median 10.0 µs)". Fix (worded per framework): CUDA graphs, a jitted decode loop or a
compiled predict step; when the step already replays CUDA graphs, bigger batches per step.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, batch_scaled
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.wording import remedy
from gpudiag.trace.model.timeline import Kind


def _median_kernel_us(ev: RankEvidence) -> float | None:
    d = [
        iv.ends - iv.starts
        for (dev, k), iv in ev.timeline.activity.items()
        if k is Kind.COMPUTE and not dev.upper().startswith("CPU")
    ]
    return float(np.median(np.concatenate(d))) if d else None


ID = "inference-trace"
NEEDS = {"compile-inference": Needs(requires={"training": OneOf(False)})}


def detect(ev: RankEvidence) -> Finding | None:
    if ev.config.training is not False:
        return None
    tl, b = ev.timeline, ev.breakdown
    graphs = int(tl.meta.extra.get("cuda_graph_launches") or 0)
    evidence: dict[str, object] = {
        "backward_ops": 0,
        "optimizer_steps": 0,
        "cuda_graph_launches": graphs,
    }
    said_by = tl.meta.extra.get("inference_evidence")
    if said_by:
        evidence["inference_function"] = str(said_by)
    median = _median_kernel_us(ev)
    idle = b.shares["other"] if b is not None else None
    if idle is None or median is None:
        return Finding(ID, "info", "Inference trace: no backward pass or optimizer step", evidence)
    evidence.update(
        {
            "idle_pct": pct(idle),
            "median_kernel_us": round(median, 2),
            "kernels_per_step": round(
                sum(tl.kernel_counts.values()) / max(1, len(tl.devices)) / max(1, len(tl.steps)), 1
            ),
        }
    )
    if idle < T.LAUNCH_IDLE_SHARE or median >= T.LAUNCH_MEDIAN_KERNEL_US:
        return Finding(ID, "info", "Inference trace: no backward pass or optimizer step", evidence)
    how = "eager" if not graphs else "CUDA-graph"
    what = " decode" if ev.config.decode_loop else ""
    return Finding(
        ID,
        "high" if idle >= 0.3 else "moderate",
        f"Inference is host/launch-bound ({how}{what}): device idle {pct(idle)}% between "
        f"tiny kernels (median {median:.1f} µs)",
        evidence,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    if f.severity == "info":
        return []
    other = s.shares["other"]
    g = Gain.of(
        batch_scaled(other, 2),
        1.0,
        batch_scaled(other, 4),
        f"device idle {other:.0%} between tiny kernels; CUDA graphs / compilation "
        "remove part of the launches (not measured on this run)",
    )
    text = remedy("launch-bound-inference", s.config)
    if text is None or (f.evidence.get("cuda_graph_launches") and s.config.framework == "pytorch"):
        text = (
            "Batch more requests per step",
            "The step already replays CUDA graphs: the device idles because each step is "
            "small; serve bigger batches (continuous batching) per step.",
        )
    return [g.suggestion(text[0], text[1], ID, "compile-inference")]
