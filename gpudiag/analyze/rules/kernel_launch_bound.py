"""``kernel-launch-bound``: many tiny kernels and an idle accelerator.

Why it costs time: a kernel that finishes faster than the host launches the next leaves the
device idle between them; the host's launch rate, not the device, sets the pace.

Example: "Device idle 40.0% between tiny kernels (median 10.0 µs)". Fix (worded per
framework, analyze/wording.py): fuse kernels (XLA ``jit_compile``, ``torch.compile``, one
``jax.jit``); not offered when the step is compiled already, nor on inference (left to
``inference-trace``).
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import host_calls as H
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, batch_scaled
from gpudiag.analyze.needs import Below, Breaks, Needs, OneOf
from gpudiag.analyze.rules import host_preprocessing
from gpudiag.analyze.rules.untraced_time import UNTRACED_SHARE, untraced_share
from gpudiag.analyze.wording import remedy
from gpudiag.trace.model.timeline import Kind

ID = "kernel-launch-bound"
# torch.compile's default backend (Inductor) emits Triton kernels; Triton needs compute
# capability 7.0 (its README, "Compatibility"). Compiling needs device time to recover.
NEEDS = {
    "fuse-kernels": Needs(
        requires={"device_measured": OneOf(True)},
        breaks=(
            Breaks(
                {
                    "framework": OneOf("pytorch"),
                    "vendor": OneOf("nvidia"),
                    "compute_capability": Below(7.0),
                },
                "torch.compile's default backend generates Triton kernels, which need "
                "compute capability 7.0 or newer",
                "https://github.com/triton-lang/triton#compatibility",
            ),
        ),
    )
}


def detect(ev: RankEvidence) -> Finding | None:
    tl, b = ev.timeline, ev.breakdown
    if b is None or not b.steps_analyzed or ev.shares["other"] < T.LAUNCH_IDLE_SHARE:
        return None
    durations = [
        iv.ends - iv.starts
        for (d, k), iv in tl.activity.items()
        if k is Kind.COMPUTE and not d.upper().startswith("CPU")
    ]
    if not durations:
        return None
    median = float(np.median(np.concatenate(durations)))
    if median >= T.LAUNCH_MEDIAN_KERNEL_US:
        return None
    if (untraced_share(tl) or 0.0) >= UNTRACED_SHARE:
        return None  # the idle time is untraced, not between launches (untraced-time)
    idle = ev.shares["other"]
    blocked = H.blocked_idle(ev, "sync")
    if blocked is not None and H.total(blocked[0]) / blocked[1].span >= idle / 2:
        return None  # the host blocked in copies or syncs: host-sync-stalls names it
    pre = host_preprocessing.preprocessing(ev)
    if pre is not None and H.total(pre[0]) / pre[1] >= idle / 2:
        return None  # the host was computing, not launching: host-preprocessing
    kernels = sum(tl.kernel_counts.values()) / max(1, len(tl.devices)) / max(1, len(tl.steps))
    return Finding(
        id=ID,
        severity="high" if idle >= 0.3 else "moderate",
        title=f"Device idle {pct(idle)}% between tiny kernels (median {median:.1f} µs)",
        evidence={
            "idle_pct": pct(idle),
            "median_kernel_us": round(median, 2),
            "kernels_per_step": round(kernels, 1),
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    other = s.shares["other"]
    out = []
    text = remedy("fuse-kernels", s.config)
    if s.has("inference-trace"):
        return []  # the inference finding names the launch-bound decode and its remedy
    if s.config.jit_compile is not True and text is not None:
        g = Gain.of(
            batch_scaled(other, 2),
            1.0,
            batch_scaled(other, 4),
            f"idle between kernels {other:.0%}; fusion removes part of the launches "
            "(not measured on this machine)",
        )
        out.append(g.suggestion(text[0], text[1], ID, "fuse-kernels"))
    return out
