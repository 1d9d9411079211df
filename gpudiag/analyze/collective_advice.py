"""The remedies of a slow collective that is not held by its link: fuse small messages, or
check the link. Pure; the gain models use the finding's bandwidth evidence
(``bandwidth.py``).

Both are bounded by what reaching ``NEAR_PEAK`` of the link would remove: the collectives'
transfer time (not the arrival wait, which a late rank causes) shrinks in proportion to the
bandwidth gained. Neither is measured on this run: the low end is no gain, the point halfway
between (geometric mean).

    sugs = fuse_collectives(finding, situation) + check_link(finding, situation)
"""

from __future__ import annotations

from gpudiag.analyze.bandwidth import NEAR_PEAK
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.wording import dialect


def _reachable(f: Finding, s: Situation) -> tuple[float, str]:
    """The share of step time that reaching NEAR_PEAK of the link removes, and its basis."""
    sync = s.shares["sync"]
    pct = f.evidence.get("link_peak_pct")
    wait = f.evidence.get("arrival_wait_pct")
    transfer = sync * (1.0 - float(wait) / 100.0) if isinstance(wait, int | float) else sync
    if not isinstance(pct, int | float) or pct <= 0:
        return 0.0, "the link's peak is unknown: the gain is not modelled"
    share = min(1.0, float(pct) / 100.0 / NEAR_PEAK)
    cut = transfer * (1.0 - share)
    waited = f" (arrival wait {wait:.0f}% of it left out)" if isinstance(wait, int | float) else ""
    return cut, (
        f"exposed collectives {sync:.0%} of the step{waited} at {pct:.0f}% of the link's peak; "
        f"at {NEAR_PEAK:.0%} of it they would take {share:.0%} of their time (not measured)"
    )


_FUSE = {
    "pytorch": "Raise DDP's bucket_cap_mb (default 25) so gradients go out in fewer, larger "
    "all-reduces, and keep gradient_as_bucket_view=True; under FSDP, wrap larger modules",
    "jax": "Let XLA combine the gradient all-reduces: raise --xla_gpu_all_reduce_combine_"
    "threshold_bytes (and the all-gather / reduce-scatter thresholds) in XLA_FLAGS",
    "keras": "Pack the gradients into fewer, larger all-reduces: tf.distribute.experimental."
    "CommunicationOptions(bytes_per_pack=32 << 20) for MirroredStrategy / MultiWorkerMirrored"
    "Strategy (on JAX, XLA_FLAGS=--xla_gpu_all_reduce_combine_threshold_bytes=...)",
}


def fuse_collectives(f: Finding, s: Situation) -> list[Suggestion]:
    cut, basis = _reachable(f, s)
    msg = f.evidence.get("message_mb")
    g = Gain.of(removed(cut) ** 0.5, 1.0, removed(cut), basis + "; the point halfway (geometric)")
    return [
        g.suggestion(
            "Fuse gradients into fewer, larger collectives",
            f"{_FUSE[dialect(s.config)]}. The collectives carry {msg} MB messages, too small for "
            "the link: each pays the fixed cost of a collective, not the bytes.",
            f.id,
            "fuse-collectives",
        )
    ]


def check_link(f: Finding, s: Situation) -> list[Suggestion]:
    cut, basis = _reachable(f, s)
    one_rank = "arrival_wait_pct" not in f.evidence
    late = (
        " From one rank's trace the time may also be waiting for a late rank: record every "
        "rank (gpudiag analyze DIR) to tell them apart."
        if one_rank
        else ""
    )
    g = Gain.of(removed(cut) ** 0.5, 1.0, removed(cut), basis + "; the point halfway (geometric)")
    return [
        g.suggestion(
            "Check the link the collectives run over",
            f"Large messages ({f.evidence.get('message_mb')} MB) move at "
            f"{f.evidence.get('busbw_gbps')} GB/s, {f.evidence.get('link_peak_pct')}% of the "
            f"{f.evidence.get('link')}'s peak. Run with NCCL_DEBUG=INFO and look for 'via "
            "P2P/IPC' (or NVLS) rather than 'via SHM' or 'NET/Socket'; check NCCL_P2P_DISABLE, "
            "NCCL_PROTO and NCCL_ALGO are unset, `nvidia-smi topo -m` shows NV# between the "
            "GPUs, and nccl-tests' all_reduce_perf reaches the link's bandwidth on this "
            "machine." + late,
            f.id,
            "check-link",
        )
    ]
