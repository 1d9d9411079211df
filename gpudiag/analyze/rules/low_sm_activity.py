"""``low-sm-activity``: compute-bound by the profile, but the SMs are mostly idle (GPM).

What it reads: NVML's GPU Performance Monitoring over the steady steps (analyze/gpm.py). A
kernel running on one SM keeps ``utilization.gpu`` and the profile's device-busy time at
100%; GPM's SM activity says what share of the SMs had work.
Why it matters: under ``SM_ACTIVE_LOW`` of the SMs busy, the device is not out of compute:
its kernels are too small to fill it (a small batch or narrow layers) or the host launches
them one by one. Faster math (mixed precision) cannot help; bigger kernels can.

Example: "Compute-bound by the profile, but the SMs are active 12% of the time (GPM,
median of 8 readings): launch- or size-bound". Fix: a 2× bigger batch (each kernel gets
work for more SMs), or fewer, larger kernels (kernel-launch-bound's remedy, where found).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, shown
from gpudiag.analyze.gain import Gain
from gpudiag.analyze.gpm import gpm_facts
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.verdict import decide

ID = "low-sm-activity"
NEEDS = {"bigger-batch": Needs(requires={"training": OneOf(True)})}
# Under 40% of the SMs active the device is not compute-bound: a kernel that fills the GPU
# keeps SM activity near 100% (the H100 recordings: 86-96% in a float32 conv step), and
# NVIDIA's DCGM guide (feature overview, profiling metrics) says under 0.5 "likely
# indicates ineffective GPU usage": 40% is a clear case.
SM_ACTIVE_LOW = 40.0
BATCH_FACTOR = 2


def detect(ev: RankEvidence) -> Finding | None:
    if ev.breakdown is None or ev.cpu_device:
        return None
    if decide(ev.shares)[0] != "compute-bound":
        return None
    facts = gpm_facts(ev.timeline)
    if facts is None or facts.median.get("sm_active", 100.0) >= SM_ACTIVE_LOW:
        return None
    active = facts.median["sm_active"]
    util = f"; NVML utilisation {facts.util_median:.0f}%" if facts.util_median is not None else ""
    return Finding(
        ID,
        "high" if active < SM_ACTIVE_LOW / 2 else "moderate",
        f"Compute-bound by the profile, but the SMs are active {active:.0f}% of the time "
        f"(GPM, median of {facts.samples} readings{util}): launch- or size-bound",
        {"compute_share_pct": round(100 * ev.shares["compute"], 1), **facts.evidence()},
        "counters",
        measured=active / 100.0,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    if s.has("small-batch"):
        return []  # small-batch proposes its 4x batch
    active = f.measured if f.measured is not None else SM_ACTIVE_LOW / 100.0
    k = BATCH_FACTOR
    c = s.shares["compute"]
    # at best each kernel does k times the work in the time it takes now (idle SMs absorb
    # it) until the SMs are full: per sample, compute shrinks by min(k, 1 / active)
    fill = min(float(k), 1.0 / max(active, 1e-3))
    high = 1.0 / max(1e-6, (1.0 - c) + c / fill)
    g = Gain.of(
        high**0.5,
        1.0,
        high,
        f"SMs active {shown(active):.0%} while compute is {c:.0%} of the step: a {k}× batch can "
        f"fill idle SMs ({fill:.1f}× per sample at most; not measured; the point halfway)",
    )
    per = s.config.per_replica_batch
    size = f"batch_size={int(per) * k}" if per else f"a {k}× batch"
    launch = (
        " The profile also finds the host launching tiny kernels: fuse them first "
        "(kernel-launch-bound)."
        if s.has("kernel-launch-bound")
        else ""
    )
    return [
        g.suggestion(
            f"Give each kernel more work: a {k}× bigger batch",
            f"{size} (scale the learning rate with it): the GPU's kernels leave most SMs "
            "idle, so a bigger batch runs on SMs that now wait; wider layers would too." + launch,
            ID,
            "bigger-batch",
            batch_factor=k,
        )
    ]
