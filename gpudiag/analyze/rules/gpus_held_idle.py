"""``gpus-held-idle``: the process holds memory on GPUs it does not train on.

Why it matters: TensorFlow creates a context and takes nearly all memory on every visible
GPU by default, and listing devices the old way initialises them all: a one-GPU run then
blocks the other GPUs for everyone else, and a ``MirroredStrategy`` over fewer GPUs than the
process holds wastes the rest. NVML lists the recording process's memory on each GPU
(counter ``gpu_mem_process``); the strategy's devices (``RunConfig.train_gpus``) say which it
trains on. Without them, a held GPU whose utilisation never rises while another held GPU
works is taken as not trained on.

Example: "GPU 1, GPU 2, GPU 3 held by this process (229 GiB) but not trained on". Fix:
``CUDA_VISIBLE_DEVICES`` / ``tf.config.set_visible_devices`` and memory growth (no speed-up
claimed: shown for what it frees), or train on every held GPU when they are free for the job.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.gain import Gain
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.trace.model.timeline import Timeline

ID = "gpus-held-idle"
SHOWN_FIRST = "frees-resources"  # shown for what it frees for others, not for speed
# training on the held GPUs is a MirroredStrategy remedy; hiding them frees them for others
NEEDS = {
    "hide-idle-gpus": Needs(),
    "train-on-all-gpus": Needs(requires={"training": OneOf(True)}),
}
# A CUDA context alone costs 100-500 MiB (lazy loading included); less than this is not one.
HELD_MIB = 64.0
# Beyond a bare context the allocator has taken memory there (TensorFlow's default takes
# nearly all of it): other jobs on that GPU fail with out-of-memory.
HIGH_MIB = 1024.0
# Without the strategy's devices: a GPU whose utilisation (p95 of NVML's samples) stays at
# or below 1% is doing nothing, and one above 5% is working (NVML counts any kernel running
# in its sampling period, so a trained GPU reads far above it).
IDLE_UTIL_PCT = 1.0
BUSY_UTIL_PCT = 5.0


def _per_source(tl: Timeline, name: str, q: float) -> dict[str, float]:
    out: dict[str, list[np.ndarray]] = {}
    for c in tl.counter(name):
        v = c.values[np.isfinite(c.values)]
        if v.size:
            out.setdefault(c.source, []).append(v)
    return {s: float(np.percentile(np.concatenate(v), q)) for s, v in out.items()}


def held_mib(tl: Timeline) -> dict[str, float]:
    """MiB the process holds on each GPU (median over the run) where it holds a context."""
    return {s: v for s, v in _per_source(tl, "gpu_mem_process", 50).items() if v >= HELD_MIB}


def trained_on(train_gpus: str | None) -> set[str] | None:
    """The strategy's GPUs as NVML sources ("GPU 0"); None when not recorded."""
    if not train_gpus:
        return None
    out = {f"GPU {x.strip()}" for x in train_gpus.split(",") if x.strip().isdigit()}
    return out or None


def detect(ev: RankEvidence) -> Finding | None:
    held = held_mib(ev.timeline)
    if len(held) < 2 and ev.config.train_gpus is None:
        return None  # one GPU held and nothing says it is not the one trained on
    trained = trained_on(ev.config.train_gpus)
    if trained is None:
        util = _per_source(ev.timeline, "gpu_util", 95)
        trained = {s for s in held if util.get(s, 0.0) > BUSY_UTIL_PCT}
        idle = {s for s in held if s in util and util[s] <= IDLE_UTIL_PCT}
        if not trained:
            return None
        basis = "utilisation"
    elif not trained <= set(held):
        return None  # a trained GPU holds nothing: the numbering differs from NVML's
    else:
        idle = set(held) - trained
        basis = "strategy"
    if not idle:
        return None
    names = sorted(idle, key=lambda s: (len(s), s))
    mib = {s: round(held[s], 1) for s in names}
    return Finding(
        ID,
        "high" if max(mib.values()) >= HIGH_MIB else "moderate",
        f"{', '.join(names)} held by this process ({sum(mib.values()) / 1024:.3g} GiB) "
        "but not trained on",
        {
            "idle_gpus": names,
            "held_mib": mib,
            "trained_gpus": sorted(trained, key=lambda s: (len(s), s)),
            "told_by": basis,
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    names = list(f.evidence["idle_gpus"])
    trained = list(f.evidence["trained_gpus"])
    keep = ",".join(t.split()[-1] for t in trained)
    out = [
        Suggestion(
            "Hide the GPUs you do not train on",
            f"CUDA_VISIBLE_DEVICES={keep} python train.py (NVML's numbering; CUDA's too when "
            "CUDA_DEVICE_ORDER=PCI_BUS_ID), or before anything touches the GPU: "
            "tf.config.set_visible_devices(<the GPUs trained on>, 'GPU'), and "
            "tf.config.experimental.set_memory_growth(gpu, True) for each GPU kept, so "
            "TensorFlow takes memory as it needs it instead of all of it.",
            1.0,
            "frees the GPUs for other jobs; this run's speed is unchanged",
            ID,
            [],  # no speed-up claimed: shown as a fix
            "hide-idle-gpus",
        )
    ]
    if trained and s.config.training is not False:
        k = (len(trained) + len(names)) / len(trained)
        g = Gain.of(1.0, 1.0, k, f"{k:g}x the devices: linear scaling at most (not measured)")
        out.append(
            g.suggestion(
                "Train on every GPU the process holds",
                "If those GPUs are free for this job: tf.distribute.MirroredStrategy() with "
                "no device list replicates over every visible GPU; scale the global batch "
                "with the replicas.",
                ID,
                "train-on-all-gpus",
            )
        )
    return out
