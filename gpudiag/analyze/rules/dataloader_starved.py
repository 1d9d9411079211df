"""``dataloader-starved``: a PyTorch DataLoader that already has worker processes still cannot
keep up (a fetch waits on every step).

Why it costs time: the GPU waits for each batch the workers have not finished; more workers
help until the host CPU is saturated, GPU decoding beyond that.

Example: "DataLoader workers cannot keep up: the GPU waits 30.0% of each step". Fix: more
workers, ``prefetch_factor``, ``persistent_workers``, ``pin_memory``, GPU decoding (DALI,
torchvision v2 on CUDA). ``dataloader-in-main-process`` covers ``num_workers=0``.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, pipelined, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.rules.dataloader_in_main_process import keras_made_loader

ID = "dataloader-starved"
NEEDS = {"dataloader-workers": Needs(requires={"framework": OneOf("pytorch", "torch")})}
MORE_WORKERS = 2  # the advice proposes twice the workers


def detect(ev: RankEvidence) -> Finding | None:
    tl, b = ev.timeline, ev.breakdown
    if b is None or tl.pipeline.get("dataloader_workers") in (None, 0):
        return None
    if keras_made_loader(ev.config):  # the input's own remedies apply
        return None
    share = b.shares["input"]
    if share < T.INPUT_MODERATE:
        return None
    dl = sum(us for n, us in tl.input_wait_names.items() if "DataLoader" in n)
    steps = max(1, b.steps_analyzed)
    step_total = float(np.sum(b.step_durations_us)) or 1.0
    return Finding(
        ID,
        "high" if share >= T.INPUT_HIGH else "moderate",
        f"DataLoader workers cannot keep up: the GPU waits {pct(share)}% of each step",
        {
            "exposed_input_share_pct": pct(share),
            "dataloader_share_pct": pct(min(1.0, dl / step_total)),
            "dataloader_wait_per_step_ms": round(dl / steps / 1000.0, 2),
            "num_workers": tl.pipeline.get("dataloader_workers"),
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    inp = s.shares["input"]
    # workers overlap loading with compute: twice the workers halve the producer's time,
    # nothing if the host CPU is already saturated
    g = Gain.of(
        pipelined(inp, MORE_WORKERS),
        1.0,
        removed(inp),
        f"DataLoader wait {inp:.0%} of step time with {MORE_WORKERS}x the workers; "
        "nothing if the host CPU is saturated (not measured on this run)",
    )
    return [
        g.suggestion(
            "Feed the GPU faster from the DataLoader",
            "More workers (DataLoader(num_workers=...) up to the free cores), prefetch_factor=4, "
            "persistent_workers=True, pin_memory=True; if the workers are CPU-bound, decode and "
            "augment on the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI) or cache "
            "pre-processed samples.",
            ID,
            "dataloader-workers",
        )
    ]
