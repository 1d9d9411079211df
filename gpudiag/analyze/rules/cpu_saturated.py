"""``cpu-saturated``: the host's cores are busy nearly all the time (host counters).

Why it costs time: a saturated host cannot produce input faster, so parallelism remedies
stop paying. On a CPU-only run the CPU is also the training device: busy is expected there
(info), and it matters only as far as the input pipeline competes with the model for it.

Example: "Host CPU saturated (median 97% of all cores)". Fix (through analyze/input_plan.py):
with no headroom, "Do less CPU work per sample" (cache, pre-decode, augmentation in the
model), never more parallelism; the cache is not advised when the pipeline caches.
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.input_plan import input_remedies

ID = "cpu-saturated"


def detect(ev: RankEvidence) -> Finding | None:
    h = ev.host
    if h.cpu_total is None or h.cpu_total < T.CPU_SATURATED:
        return None
    starved = ev.input_share is not None and ev.input_share >= T.INPUT_MODERATE
    evidence: dict[str, object] = {"cpu_total_p50_pct": round(h.cpu_total, 1)}
    if h.cpu_process is not None:
        evidence["cpu_this_run_p50_cores"] = round(h.cpu_process / 100.0, 2)
    if h.cpu_others is not None:
        evidence["cpu_other_processes_p50_pct"] = round(h.cpu_others, 1)
    if ev.config.cores:
        evidence["cores"] = ev.config.cores
    return Finding(
        id=ID,
        severity="high" if starved or not ev.cpu_device else "info",
        title=f"Host CPU saturated (median {h.cpu_total:.0f}% of all cores)"
        + (" — it is also the training device" if ev.cpu_device else ""),
        evidence=evidence,
        source="counters",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return input_remedies(s) if s.shares["input"] >= T.INPUT_MODERATE else []
