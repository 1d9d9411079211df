"""``cpu-contention``: other processes on the host take CPU this run needs (host counters).

Why it costs time: a neighbour takes the cores the input pipeline (or, on a CPU-only run, the
model) would use. Without this finding such a run reads as compute-bound or data-starved; the
verdict's confidence is lowered too (analyze/verdict.py, ``CONTENDED``).

Example: "Other processes take 60% of the host CPU this run competes for". Fix: stop or pin
the other processes, or train on a quieter machine; the gain is a range up to the CPU they
hold, not a point (the run may not be CPU-bound).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.gain import Gain
from gpudiag.analyze.needs import Needs

ID = "cpu-contention"
NEEDS = {"free-cpu": Needs()}
OTHERS_PCT = 25.0  # other processes' median share of all cores worth a finding
OTHERS_HIGH_PCT = 50.0  # half the machine taken by others: the run's figures are distorted
BUSY_PCT = 85.0  # ... and only when the host is busy: idle cores left over harm no one


def detect(ev: RankEvidence) -> Finding | None:
    h = ev.host
    if h.cpu_others is None or h.cpu_total is None:
        return None
    if h.cpu_others < OTHERS_PCT or h.cpu_total < BUSY_PCT:
        return None
    evidence: dict[str, object] = {
        "cpu_other_processes_p50_pct": round(h.cpu_others, 1),
        "cpu_total_p50_pct": round(h.cpu_total, 1),
    }
    if h.cpu_process is not None:
        evidence["cpu_this_run_p50_cores"] = round(h.cpu_process / 100.0, 2)
    if ev.config.cores:
        evidence["cores"] = ev.config.cores
    return Finding(
        id=ID,
        severity="high" if h.cpu_others >= OTHERS_HIGH_PCT else "moderate",
        title=f"Other processes take {h.cpu_others:.0f}% of the host CPU this run competes for",
        evidence=evidence,
        source="counters",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    others = s.host.cpu_others or 0.0
    free_now = max(0.05, 1.0 - others / 100.0)
    # the run gets at most the whole machine back; if it is not CPU-bound it gains nothing
    high = 1.0 / free_now
    g = Gain.of(
        1.0,
        1.0,
        high,
        f"other processes hold {others:.0f}% of the cores; this "
        f"run could get up to {high:.2f}× the CPU it has now (not estimated further)",
    )
    return [
        g.suggestion(
            "Free the CPU from other processes",
            "Other processes use the cores this run needs (see `top`): stop them, pin them to "
            "other cores (taskset), or run training on a quieter machine. The verdict and figures "
            "of this run are distorted by them.",
            ID,
            "free-cpu",
        )
    ]
