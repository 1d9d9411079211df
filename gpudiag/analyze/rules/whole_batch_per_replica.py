"""``whole-batch-per-replica``: every GPU receives the whole global batch.

Why it costs time: hand-rolled data parallelism (the old ``multi_gpu_model`` /
``make_parallel``, a ``tf.split`` inside the model) copies the full global batch to each
replica and slices it there: host-to-device bytes per replica per step come to the global
batch's, not its ``1 / replicas`` share, and the surplus copies hold the step where they are
not hidden. The readers keep each device's copied bytes (Kineto ``bytes``, TensorFlow
``memcpy_details``) in ``meta.extra["h2d_bytes"]``; the callback records the global batch,
the replicas and one input element's bytes (``RunConfig.sample_bytes``). A hand-rolled split
runs under no strategy, so the devices receiving input count as replicas.

Example: "Each replica receives 3 MiB per step, the whole global batch (3 MiB), not its
share (1.5 MiB)". Fix: let the strategy distribute the dataset (PyTorch: DDP with a
DistributedSampler). Silent where the global batch or a sample's size is unknown (foreign
traces).
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs
from gpudiag.analyze.wording import dialect
from gpudiag.trace.model.timeline import Timeline

ID = "whole-batch-per-replica"
NEEDS = {"distribute-dataset": Needs()}
# A replica receiving at least 3/4 of the global batch per step gets the whole batch: its
# share is at most 1/2 (two replicas), so this is 1.5x the share or more, beyond what
# labels, sample weights or a few scalars add; and short of the whole batch when the
# profile window cuts a step's copies.
WHOLE_FRACTION = 0.75
MIB = float(1 << 20)


def h2d_bytes_per_step(tl: Timeline) -> dict[str, float]:
    """Host-to-device bytes per profiled batch on each device of the timeline."""
    copied = tl.meta.extra.get("h2d_bytes")
    if not isinstance(copied, dict) or not len(tl.steps):
        return {}
    batches = float(np.sum(tl.steps.batches[tl.steps.profiled]))
    if batches <= 0:
        return {}
    devices = set(tl.devices)
    return {
        d: float(n) / batches
        for d, n in copied.items()
        if d in devices and isinstance(n, int | float) and n > 0
    }


def detect(ev: RankEvidence) -> Finding | None:
    cfg = ev.config
    batch, size = cfg.global_batch, cfg.sample_bytes
    if not batch or not size or ev.cpu_device:
        return None
    per_step = h2d_bytes_per_step(ev.timeline)
    whole = float(batch) * float(size)
    full = {d: b for d, b in per_step.items() if b >= WHOLE_FRACTION * whole}
    # hand-rolled parallelism runs under no strategy (one replica to Keras): the GPUs
    # that receive input are its replicas
    replicas = max(cfg.replicas or 1, len(per_step))
    if not full or replicas < 2:
        return None
    share = whole / replicas
    copied = float(np.median(list(full.values())))
    return Finding(
        ID,
        "moderate",
        f"Each replica receives {copied / MIB:.3g} MiB per step, the whole global batch "
        f"({whole / MIB:.3g} MiB), not its share ({share / MIB:.3g} MiB)",
        {
            "copied_per_replica_step_mib": round(copied / MIB, 3),
            "share_per_replica_step_mib": round(share / MIB, 3),
            "global_batch_mib": round(whole / MIB, 3),
            "replicas": replicas,
            "devices": sorted(full),
        },
        measured=max(0.0, 1.0 - share / copied),  # the surplus share of the copied bytes
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    waste = f.measured
    if waste is None:
        return []
    x = s.shares["transfer"] * waste
    g = Gain.of(
        removed(x),
        1.0,
        removed(x),
        f"{waste:.0%} of the copied bytes are surplus; exposed copies are "
        f"{s.shares['transfer']:.0%} of step time (hidden copies gain nothing; not measured)",
    )
    if dialect(s.config) == "pytorch":
        title, detail = (
            "Give each GPU only its shard of the batch",
            "Use DistributedDataParallel with a DistributedSampler (one process per GPU, "
            "each loading batch_size / world_size samples) instead of copying the whole "
            "batch to every GPU and slicing it there.",
        )
    else:
        title, detail = (
            "Let the strategy distribute the dataset",
            "Build and compile the model under tf.distribute.MirroredStrategy().scope() and "
            "pass the tf.data dataset (global batch) to fit: each replica then receives "
            "global_batch / replicas samples. Remove tf.split / make_parallel from the "
            "model; in a custom loop use strategy.experimental_distribute_dataset(ds).",
        )
    return [g.suggestion(title, detail, ID, "distribute-dataset")]
