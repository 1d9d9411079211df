"""``small-batch``: a compute-bound device fed small batches.

Why it costs time: each step pays a fixed cost (dispatch, Python, launches) and small kernels
leave cores (or SMs) unused: a bigger batch amortises the first and fills the second. On a
CPU-only run the host counters show how many of the cores the model kept busy.

Example: "Compute-bound at a small batch (8 samples)". Fix: a 4× bigger batch (with the
learning rate scaled); not raised from 32 samples per replica, on several replicas
(``small-model-multi-gpu`` speaks there) or on inference.
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.gain import Gain, batch_scaled
from gpudiag.analyze.needs import Needs, OneOf

ID = "small-batch"
# a training batch (with its learning rate); serving batches are another remedy
NEEDS = {"bigger-batch": Needs(requires={"training": OneOf(True)})}
SMALL_BATCH = 32  # per-replica batches below this under-use a device (docs/thresholds.md)
FACTOR = 4  # the batch growth the advice proposes


def detect(ev: RankEvidence) -> Finding | None:
    cfg, b = ev.config, ev.breakdown
    per = cfg.per_replica_batch
    if b is None or per is None or per >= SMALL_BATCH or (cfg.replicas or 1) > 1:
        return None
    if cfg.training is False:
        return None  # no training-batch advice on an inference trace
    if b.shares["compute"] < T.COMPUTE_DOMINANT:
        return None
    evidence: dict[str, object] = {
        "batch": int(per),
        "compute_share_pct": round(100 * b.shares["compute"], 1),
    }
    own = ev.host.own_cores()
    if ev.cpu_device and own is not None and cfg.cores:
        evidence["cpu_this_run_p50_cores"] = round(own, 2)
        evidence["cores"] = cfg.cores
    return Finding(ID, "moderate", f"Compute-bound at a small batch ({int(per)} samples)", evidence)


def _core_use(s: Situation) -> float | None:
    """Fraction of the cores the model kept busy on a CPU-only run."""
    own, cores = s.host.own_cores(), s.config.compute_cores  # a capped pool: its threads
    if not s.cpu_device or own is None or not cores:
        return None
    return min(1.0, own / cores)


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    k = FACTOR
    fixed = s.shares["other"] + s.shares["input"]
    low = batch_scaled(fixed, k)
    use = _core_use(s)
    if use is not None:
        # per sample: the fixed part shrinks k-fold, compute runs on all cores
        high = 1.0 / max(1e-6, fixed / k + (1.0 - fixed) * use)
        basis = (
            f"per-step fixed cost {fixed:.0%} paid once per {k}× batch; compute used "
            f"{use:.0%} of the cores and can fill them"
        )
    else:
        high = low
        basis = (
            f"per-step fixed cost {fixed:.0%} paid once per {k}× batch; the gain from "
            "bigger kernels is not estimated"
        )
    g = Gain.of((low * high) ** 0.5, low, high, basis + " (gain per sample)")
    per = s.config.per_replica_batch
    return [
        g.suggestion(
            f"Train with a {k}× bigger batch",
            f"batch_size={int(per or 0) * k or 'larger'} (scale the learning rate with it, e.g. "
            "linearly with warm-up): throughput per sample rises because each step's fixed cost "
            "is shared by more samples and kernels get big enough to use the device.",
            ID,
            "bigger-batch",
            batch_factor=k,
        )
    ]
