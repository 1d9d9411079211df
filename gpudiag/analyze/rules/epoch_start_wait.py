"""``epoch-start-wait``: every epoch begins with a long wait for its first batch (and ends
with the input's teardown), a large share of the fit that the median step never shows.

Why it costs time: Keras starts the input again each epoch. A tf.data ``Shuffle`` fills its
whole buffer before the first batch comes out, through every stage under it; a PyDataset's
worker pool is started and stopped; files are opened again. Training waits for all of it.

Example: "Each epoch starts with a 0.81 s wait (81.0% of the fit; the first epoch's compilation
0.97 s of it): a shuffle buffer of 60000 elements filled through a per-element map": the share
is what a timer from each epoch's start to its first batch's end reads; the per-epoch wait is
the refill alone, and the finding rises when the refill alone holds ≥ 15% of the fit.
Fix (``analyze/epoch_start_plan.py``), each bounded by the wait it removes: shuffle before
the map and map whole batches; cache after the map; a small buffer over a shuffled source;
repeat before the shuffle; fewer, longer epochs for a PyDataset pool.
"""

from __future__ import annotations

from typing import Any

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.epoch_start_plan import ID, cause, remedies
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.fit_gain import EPOCH_START_SHARE, PART_HIGH

__all__ = ["ID", "advise", "detect"]


def detect(ev: RankEvidence) -> Finding | None:
    acc = ev.fit
    share = acc.share("epoch_start")
    if not acc.measured or acc.epochs < 2 or share < EPOCH_START_SHARE:
        return None
    kind, what = cause(ev.config)
    per_epoch = acc.parts["epoch_start"] / acc.epochs
    # what a timer from each epoch's start to its first batch's end reads: the refill of
    # every epoch and, in the first, its compilation
    first_batches = share + acc.compile_s / acc.wall_s
    evidence: dict[str, Any] = {
        "first_batch_wait_pct": pct(first_batches),
        "epoch_start_pct": pct(share),
        "epoch_start_s": round(acc.parts["epoch_start"], 3),
        "per_epoch_s": round(per_epoch, 3),
        "compilation_s": round(acc.compile_s, 3),
        "steady_epoch_s": round(acc.steady_epoch_s, 3),
        "epochs": acc.epochs,
        "cause": kind,
    }
    if ev.config.shuffle_buffer:
        evidence["shuffle_buffer"] = ev.config.shuffle_buffer
    if kind == "worker-pool":
        evidence["workers"] = ev.config.workers
    compiled = (
        f"; the first epoch's compilation {acc.compile_s:.2f} s of it"
        if acc.compile_s >= 0.01
        else ""
    )
    title = (
        f"Each epoch starts with a {per_epoch:.2f} s wait ({pct(first_batches)}% of the fit"
        f"{compiled}): {what}"
    )
    return Finding(ID, "high" if share >= PART_HIGH else "moderate", title, evidence)


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    if s.fit is None or not s.fit.measured:
        return []
    return remedies(s.fit, s.config, s.config.global_batch)
