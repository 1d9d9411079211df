"""The gain model: how much faster a step gets when a remedy is applied. Pure.

Every estimate is a point and a range (docs/method.md, "Expected gain"):

* ``removed(s)``: a stall of share ``s`` disappears -> ``1 / (1 - s)``.
* ``pipelined(s, n)``: the input producer is the critical path of a starved step (TF overlaps
  it with compute through its own prefetch), so the step takes ``max(rest, producer / n)``
  once the producer is spread over ``n`` effective workers -> ``min(1 / (1 - s), n)``.
* ``capacity(...)``: on a CPU-only run the model and the input pipeline share the cores; the
  step cannot get faster than the cores left over allow -> ``cores / cores_in_use``.
* ``batch_scaled(fixed, k)``: a per-step cost of share ``fixed`` is paid once per ``k``×
  larger step -> ``1 / ((1 - fixed) + fixed / k)``.

    g = Gain.of(pipelined(0.4, 2), pipelined(0.3, 2), pipelined(0.5, 2), "input 40% ...")
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudiag.analyze.diagnosis import Suggestion

MAX_SHARE = 0.95  # a share is never taken as 100%: the step cannot become free
MAX_GAIN = 1.0 / (1.0 - MAX_SHARE)  # 20x: all of a 95% stall removed


@dataclass
class Gain:
    point: float
    low: float
    high: float
    basis: str

    @classmethod
    def of(cls, point: float, low: float, high: float, basis: str) -> Gain:
        """Sorted and clamped to [1, MAX_GAIN]: a remedy is never predicted to slow training,
        nor to remove more than MAX_SHARE of a step (a model fed the steps of a run that
        stopped after a few once promised 1,000,000x)."""
        lo, hi = sorted((min(MAX_GAIN, max(1.0, low)), min(MAX_GAIN, max(1.0, high))))
        point = min(point, MAX_GAIN)
        return cls(min(max(1.0, point), hi) if point >= lo else lo, lo, hi, basis)

    def suggestion(
        self,
        title: str,
        detail: str,
        finding: str,
        remedy: str = "",
        batch_factor: float | None = None,
    ) -> Suggestion:
        """A remedy carrying this estimate: point, basis and the range rounded for display;
        ``remedy`` keys it in its rule's ``NEEDS`` (analyze/needs.py); ``batch_factor``: the
        batch multiple a batch remedy proposes (its memory is checked, analyze/headroom.py)."""
        return Suggestion(
            title,
            detail,
            self.point,
            self.basis,
            finding,
            [round(self.low, 2), round(self.high, 2)],
            remedy,
            batch_factor=batch_factor,
        )

    def capped_here(self, cap: float | None, why: str) -> Gain:
        """The point and low end capped by what this machine left (``cap``); the high end
        kept: what the remedy gives where that limit is gone (a neighbour's load)."""
        if cap is None or cap >= self.point:
            return self
        cap = max(1.0, cap)
        return Gain(cap, min(self.low, cap), self.high, f"{self.basis}; {why}")

    def capped(self, cap: float | None, why: str) -> Gain:
        if cap is None or cap >= self.high:
            return self
        cap = max(1.0, cap)
        return Gain(min(self.point, cap), min(self.low, cap), cap, f"{self.basis}; {why}")


def removed(share: float) -> float:
    """Speed-up when a stall of ``share`` of step time disappears."""
    return 1.0 / max(1e-6, 1.0 - min(max(share, 0.0), MAX_SHARE))


def spread(share: float, n: float) -> float:
    """Speed-up when a stall that does not overlap compute is split over ``n`` workers."""
    n = max(1.0, n)
    return 1.0 / max(1e-6, 1.0 - min(max(share, 0.0), MAX_SHARE) * (1.0 - 1.0 / n))


def pipelined(share: float, n: float) -> float:
    """Speed-up when a producer that overlaps compute (and is the critical path) is split
    over ``n`` effective workers: the step becomes ``max(rest, producer / n)``."""
    return min(removed(share), max(1.0, n))


def batch_scaled(fixed: float, k: float) -> float:
    """Per-sample speed-up when a per-step cost of share ``fixed`` is paid once per ``k``×
    larger step."""
    return 1.0 / max(1e-6, (1.0 - min(max(fixed, 0.0), MAX_SHARE)) + fixed / max(1.0, k))


def capacity(
    cores: int | None, own_cores: float | None, others_pct: float | None = None
) -> float | None:
    """Upper bound on a CPU-only run: cores available / cores the run already keeps busy.
    None when either is unknown (then no cap is claimed)."""
    if not cores or own_cores is None or own_cores <= 0.05:
        return None
    free = cores * (1.0 - (others_pct or 0.0) / 100.0)
    return max(1.0, free / own_cores)
