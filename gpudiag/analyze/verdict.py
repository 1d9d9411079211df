"""Verdict and confidence from the merged step-time shares, and what lowers that confidence.
Pure; rules in docs/thresholds.md.

    verdict, confidence, reason = decide(shares)        # one set of shares (a rank, a window)
    v = judge(shares, config, doubts)                   # the run's headline
    v.verdict, v.confidence, v.reason, v.judged

``decide`` reads shares only. ``judge`` decides on the shares as judged (Python-fed input
counted as input wait, evidence.as_judged) and then takes a factor off the confidence for each
reason the figures may not describe the run's own steady state: profiler windows that disagree,
ranks that disagree, other processes taking the host CPU.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.evidence import as_judged
from gpudiag.trace.model.runconfig import RunConfig

UNEXPLAINED_CONFIDENCE = 0.25  # we know the device is idle, not why
# Confidence penalties (docs/thresholds.md). Each is a doubt about which state the figures
# describe, not about the figures: the verdict stands, it is said less firmly.
WINDOWS_DISAGREE = 0.8  # a steady-state profiler window reached another verdict
RANKS_DISAGREE = 0.8  # ranks reached different verdicts
CONTENDED = 0.6  # other processes took the host CPU: a neighbour distorts every figure
# every profiler window fell in the warm-up or a cache-filling first epoch: the figures are
# right, but for a phase the steady run does not repeat
UNREPRESENTATIVE = 0.5
# kernels overlap on one stream as no stream runs them (trace/model/stream_overlap.py): every
# device share rests on times that cannot all be right
DOUBTFUL_DEVICE_TIMES = 0.6
COPY_CONFIDENCE = 0.5  # we know what the device does (copies), not which copies to avoid


def _clamp(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return max(lo, min(hi, x))


def _ramp(x: float, start: float, full: float) -> float:
    """0.55 at ``start``, 0.95 at ``full`` and beyond: confidence grows with the margin."""
    return _clamp(0.55 + 0.40 * (x - start) / max(full - start, 1e-9), 0.55, 0.95)


def decide(s: dict[str, float]) -> tuple[str, float, str]:
    inp, sync, comp, other, xfer = s["input"], s["sync"], s["compute"], s["other"], s["transfer"]
    pct = {k: round(100 * v) for k, v in s.items()}
    stalls = {"input": inp, "sync": sync, "transfer": xfer}
    largest = max(stalls, key=lambda k: stalls[k])
    starved = inp >= T.INPUT_HIGH or (inp >= T.INPUT_DOMINANT and largest == "input")
    if starved and inp >= sync:
        return (
            "data-starved",
            _ramp(inp, T.INPUT_DOMINANT, 0.40),
            f"the device waits for input {pct['input']}% of step time",
        )
    if sync >= T.SYNC_HIGH and sync >= inp:
        return (
            "sync-bound",
            _ramp(sync, T.SYNC_HIGH, 0.45),
            f"exposed gradient synchronisation takes {pct['sync']}% of step time",
        )
    if xfer >= T.COPY_DOMINANT and xfer > comp:
        return (
            "inconclusive",
            COPY_CONFIDENCE,
            f"the device copies data {pct['transfer']}% of step time and computes "
            f"{pct['compute']}%: data movement (host offload, device-to-device copies) bounds "
            "the step, not compute, input or synchronisation",
        )
    if other >= T.UNEXPLAINED_IDLE and comp < 1 - T.UNEXPLAINED_IDLE:
        return (
            "inconclusive",
            UNEXPLAINED_CONFIDENCE,
            f"the device is idle {pct['other']}% of step time and neither input wait nor "
            "collectives explain it (host-side work: Python, op dispatch, kernel launches)",
        )
    # compute-bound: stalls are small; confidence scales with how busy the device is
    stalls_total = inp + sync + xfer
    conf = _clamp(0.5 + 0.45 * (comp / T.COMPUTE_BOUND_STRONG) - stalls_total, 0.35, 0.95)
    return (
        "compute-bound",
        conf,
        f"the device computes {pct['compute']}% of step time; input {pct['input']}%, "
        f"sync {pct['sync']}%, transfers {pct['transfer']}%",
    )


@dataclass
class Doubts:
    """What may keep the run's figures from describing its own steady state."""

    window_note: str = ""  # phases.RunView.note: windows that disagree or were not counted
    windows_disagree: bool = False  # a steady window reached another verdict
    rank_verdicts: Collection[str] = ()  # the verdicts of the ranks with analysed steps
    contention: Finding | None = None  # the cpu-contention finding, when there is one
    # not a doubt but a caveat the reason carries: host time counted as input wait
    # (breakdown.python_fed), as a share of step time
    other_as_input: float = 0.0
    unrepresentative: bool = False  # every window outside the steady run (window_phase.py)
    doubtful_device_times: bool = False  # kernels overlap on a stream (the limitations say)


@dataclass
class Verdict:
    verdict: str
    confidence: float  # rounded to 3 decimals
    reason: str
    judged: dict[str, float]  # the shares the verdict was decided on (evidence.as_judged)

    @classmethod
    def inconclusive(cls, reason: str, shares: dict[str, float]) -> Verdict:
        """No analysed step: nothing to decide on."""
        return cls("inconclusive", 0.0, reason, shares)


def judge(shares: dict[str, float], config: RunConfig, doubts: Doubts) -> Verdict:
    """The run's headline: ``decide`` on the shares as judged, less confident for each doubt."""
    judged = as_judged(shares, config)
    verdict, confidence, why = decide(judged)
    folded = doubts.other_as_input + (judged["input"] - shares["input"])
    if folded > 0:
        why += (
            " (with host time Keras spends pulling batches from Python code, "
            f"{round(100 * folded)}% of step time, counted as input wait)"
        )
    if doubts.windows_disagree:
        confidence *= WINDOWS_DISAGREE
    if doubts.unrepresentative:
        confidence *= UNREPRESENTATIVE
    if doubts.window_note:
        why += f" ({doubts.window_note})"
    if len(doubts.rank_verdicts) > 1:
        confidence *= RANKS_DISAGREE
        why += f" (ranks disagree: {', '.join(sorted(doubts.rank_verdicts))})"
    if doubts.doubtful_device_times:
        confidence *= DOUBTFUL_DEVICE_TIMES
        why += " (device times doubtful: kernels overlap on one GPU stream)"
    if doubts.contention is not None:
        confidence *= CONTENDED
        why += (
            f"; other processes took {doubts.contention.evidence['cpu_other_processes_p50_pct']}"
            "% of the host CPU meanwhile, so this may not be the run's own bottleneck"
        )
    return Verdict(verdict, round(confidence, 3), why, judged)
