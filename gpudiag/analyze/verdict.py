"""Verdict and confidence from the merged step-time shares. Pure; rules in docs/thresholds.md.

verdict, confidence, reason = decide(shares)
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T

UNEXPLAINED_CONFIDENCE = 0.25  # we know the device is idle, not why


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
