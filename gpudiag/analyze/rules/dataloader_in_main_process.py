"""``dataloader-in-main-process``: a PyTorch DataLoader with ``num_workers=0`` (Kineto
traces).

Why it costs time: loading, decoding and augmentation run in the training process between
steps, so the GPU waits for each of them.

Example: "PyTorch DataLoader runs in the training process (num_workers=0)". Fix:
``DataLoader(num_workers=N, pin_memory=True, persistent_workers=True)`` with N the cores the
run has; not raised when the loader has workers (``dataloader-starved`` speaks then), nor
when Keras's torch backend made the DataLoader (``keras_made_loader``).
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, pipelined, spread
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.trace.model.runconfig import RunConfig

ID = "dataloader-in-main-process"
NEEDS = {"dataloader-workers": Needs(requires={"framework": OneOf("pytorch", "torch")})}
DEFAULT_WORKERS = 4  # when the trace does not say how many cores the host had


def keras_made_loader(cfg: RunConfig) -> bool:
    """Keras's torch backend wraps arrays, generators and PyDatasets in a DataLoader of its
    own (``num_workers=0``; a PyDataset runs its own workers): its ``num_workers`` is not the
    user's to set, the input's own remedies apply. Only a DataLoader given to ``fit`` (seen
    by the callback's ``dataset=``) is the user's."""
    return cfg.framework == "torch" and cfg.input_kind != "dataloader"


def detect(ev: RankEvidence) -> Finding | None:
    tl, b = ev.timeline, ev.breakdown
    if tl.pipeline.get("dataloader_workers") != 0 or b is None or keras_made_loader(ev.config):
        return None
    share = b.shares["input"]
    dl = sum(us for n, us in tl.input_wait_names.items() if "DataLoader" in n)
    step_total = float(np.sum(b.step_durations_us)) or 1.0
    return Finding(
        id=ID,
        severity="high" if share >= T.INPUT_HIGH else "moderate",
        title="PyTorch DataLoader runs in the training process (num_workers=0)",
        evidence={
            "num_workers": 0,
            "dataloader_share_pct": pct(dl / step_total),
            "exposed_input_share_pct": pct(share),
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    inp = s.shares["input"]
    n = s.config.cores or DEFAULT_WORKERS
    # workers overlap loading with compute (pipelined); without overlap it is spread
    g = Gain.of(
        spread(inp, n),
        spread(inp, n),
        pipelined(inp, n),
        f"DataLoader wait {inp:.0%} spread over {n} workers",
    )
    return [
        g.suggestion(
            "Load data in worker processes",
            f"DataLoader(..., num_workers={n}, pin_memory=True, persistent_workers=True): "
            "decoding and augmentation now run in the training process between steps.",
            ID,
            "dataloader-workers",
        )
    ]
