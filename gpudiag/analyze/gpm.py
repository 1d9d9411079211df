"""How busy the SMs really were while the run trained: NVML's GPU Performance Monitoring
counters (record/gpm.py), read over the steady steps only. Pure.

A GPM reading is the average since the previous one (0.5 s at the callback's rate). It is
kept only when that interval lies in training steps for ``STEADY_COVER`` of its length at
least, leaving out the first step (tracing and compiling), compilations, evaluation and the
idle time between runs or epochs: an idle GPU between epochs would otherwise read as "SMs
mostly idle".

    facts = gpm_facts(timeline)
    facts.median["sm_active"], facts.p90["tensor_active"], facts.util_median
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpudiag.analyze.compile_time import compile_spans
from gpudiag.trace.model.timeline import Intervals, Timeline, subtract, union_many, union_of

METRICS = ("sm_active", "sm_occupancy", "tensor_active", "dram_bw", "fp32_active", "fp16_active")
STEADY_COVER = 0.8  # of a reading's interval in steady steps: it speaks for training
MIN_SAMPLES = 3  # fewer readings in steady steps: no judgement (one may catch a pause)


@dataclass
class GpmFacts:
    samples: int  # readings kept (of the busiest device)
    device: str
    median: dict[str, float] = field(default_factory=dict)  # %
    p90: dict[str, float] = field(default_factory=dict)
    util_median: float | None = None  # NVML utilization.gpu over the same span (%)

    def evidence(self) -> dict[str, object]:
        out: dict[str, object] = {f"{k}_pct": round(v, 1) for k, v in self.median.items()}
        out.update({f"{k}_p90_pct": round(v, 1) for k, v in self.p90.items()})
        if self.util_median is not None:
            out["gpu_util_pct"] = round(self.util_median, 1)
        out["gpm_samples"] = self.samples
        out["gpm_device"] = self.device
        return out


def steady(tl: Timeline) -> Intervals:
    """Training-step time after the first step, without compilations and evaluation."""
    st = tl.steps
    parts = []
    if len(st) > 1:
        parts.append(union_of(st.start[1:], st.end[1:]))
    b = tl.step_buckets
    if len(b):
        parts.append(union_of(b.start, b.end))
    if not parts:
        return Intervals()
    busy = union_many(parts)
    spans = tl.spans.get("evaluation") or []
    off = [compile_spans(tl)]
    if spans:
        off.append(union_of(np.array([s for s, _ in spans]), np.array([e for _, e in spans])))
    return subtract(busy, union_many(off))


def _kept(ts: np.ndarray, span: Intervals) -> np.ndarray:
    """Which readings (each the average since the previous) lie in ``span``."""
    keep = np.zeros(ts.size, dtype=bool)
    if ts.size < 2 or not len(span):
        return keep
    lo, hi = ts[:-1], ts[1:]
    cover = span.covered_in(lo, hi) / np.maximum(hi - lo, 1e-9)
    keep[1:] = cover >= STEADY_COVER
    return keep


def gpm_facts(tl: Timeline) -> GpmFacts | None:
    """GPM over the steady steps, of the device whose SMs were most active (the one training
    when NVML watches several); None with fewer than ``MIN_SAMPLES`` readings."""
    span = steady(tl)
    best: GpmFacts | None = None
    for c in tl.counter("gpm_sm_active"):
        keep = _kept(c.ts, span)
        if keep.sum() < MIN_SAMPLES:
            continue
        facts = GpmFacts(int(keep.sum()), c.source)
        for m in METRICS:
            got = tl.counter(f"gpm_{m}", c.source)
            if got and got[0].ts.size == c.ts.size:
                v = got[0].values[keep]
                facts.median[m] = float(np.median(v))
                facts.p90[m] = float(np.percentile(v, 90))
        util = tl.counter("gpu_util", c.source)
        if util:
            u = util[0]
            inside = span.covered_in(u.ts - 1.0, u.ts) > 0  # utilisation samples are instants
            if inside.any():
                facts.util_median = float(np.median(u.values[inside]))
        if best is None or facts.median["sm_active"] > best.median["sm_active"]:
            best = facts
    return best
