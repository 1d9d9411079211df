"""``gil-pressure``: Python threads fight for the GIL (host counters): the in-process probe is
late and the out-of-process reference is not (docs/thresholds.md, ``GIL_*``).

Why it costs time: a thread that wants the GIL waits a switch interval (5 ms) for it; an
input pipeline in Python threads then feeds the device at the pace of one thread.

Example: "Python threads fight for the GIL (probe lateness p95 6.0 ms)". Fix (through
analyze/input_plan.py, once input wait is moderate): move Python input to worker processes;
not offered when they run already.
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import HostFacts, RankEvidence, Situation
from gpudiag.analyze.input_plan import input_remedies

ID = "gil-pressure"
GIL_P95_MS = 2.0  # probe lateness p95: idle ~0.1 ms, a Python thread holding the GIL ~5 ms
GIL_REFERENCE_RATIO = 3.0  # in-process lateness must exceed the out-of-process reference 3x
GIL_TYPICAL_MS = 2.0  # on a saturated CPU: median window p50 must be this late as well


def contended(h: HostFacts, input_share: float | None) -> bool:
    """On a saturated CPU a descheduled GIL holder delays the probe too (a compute-bound run
    shows it), so there it counts only if the lateness is typical, not just a tail, or if the
    device waits for input — the cost GIL contention in the input path would explain."""
    p95, ref = h.gil_p95, h.gil_reference_p95
    if p95 is None or p95 < GIL_P95_MS or (ref is not None and p95 < GIL_REFERENCE_RATIO * ref):
        return False
    if h.cpu_total is not None and h.cpu_total >= T.CPU_SATURATED:
        typical_late = h.gil_typical is not None and h.gil_typical >= GIL_TYPICAL_MS
        starved = input_share is not None and input_share >= T.INPUT_MODERATE
        return typical_late or starved
    return True


def detect(ev: RankEvidence) -> Finding | None:
    h = ev.host
    if h.gil_p95 is None or not contended(h, ev.input_share):
        return None
    return Finding(
        id=ID,
        severity="high" if h.gil_p95 >= 2 * GIL_P95_MS else "moderate",
        title=f"Python threads fight for the GIL (probe lateness p95 {h.gil_p95:.1f} ms)",
        evidence={
            "gil_lateness_p95_ms": round(h.gil_p95, 2),
            "reference_lateness_p95_ms": _r(h.gil_reference_p95),
            "gil_lateness_typical_ms": _r(h.gil_typical),
            "cpu_total_p50_pct": _r(h.cpu_total, 1),
        },
        source="counters",
    )


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return input_remedies(s) if s.shares["input"] >= T.INPUT_MODERATE else []
