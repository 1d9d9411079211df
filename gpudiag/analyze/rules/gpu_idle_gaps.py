"""``gpu-idle-gaps``: an accelerator idles in gaps between bursts.

Why it costs time: a gap is device time nobody uses; at step boundaries it usually means the
next batch (or the next launch) was late.

Example: "GPU 0 idles in 10 gaps (31.0% of steps)". Fix: none of its own: the gaps are
explained and fixed by the input or launch findings, so this rule advises nothing. Never on
CPU-only runs (the CPU is never idle in that sense).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct

ID = "gpu-idle-gaps"
GAPS_SHARE_FINDING = 0.10  # idle gaps worth reporting


def detect(ev: RankEvidence) -> Finding | None:
    gaps = [g for g in ev.gaps if not g.device.upper().startswith("CPU")]
    if not gaps or ev.cpu_device:
        return None
    worst = max(gaps, key=lambda g: g.share)
    if worst.share < GAPS_SHARE_FINDING:
        return None
    return Finding(
        id=ID,
        severity="high" if worst.share >= 0.3 else "moderate",
        title=f"{worst.device} idles in {worst.count} gaps ({pct(worst.share)}% of steps)",
        evidence={
            "device": worst.device,
            "gaps": worst.count,
            "gaps_per_step": round(worst.per_step, 2),
            "longest_gap_ms": round(worst.longest_us / 1000.0, 3),
            "gap_share_pct": pct(worst.share),
            "at_step_boundary_pct": pct(worst.boundary_share),
            "min_gap_ms": round(worst.min_gap_us / 1000.0, 3),
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return []
