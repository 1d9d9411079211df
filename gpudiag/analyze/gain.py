"""The gain model: how much faster a step gets when a remedy is applied. Pure.

Every estimate is a point and a range (docs/method.md, "Expected gain"):

* ``removed(s)``: a stall of share ``s`` disappears -> ``1 / (1 - s)``.
* ``pipelined(s, n)``: the input producer is the critical path of a starved step (TF overlaps
  it with compute through its own prefetch), so the step takes ``max(rest, producer / n)``
  once the producer is spread over ``n`` effective workers -> ``min(1 / (1 - s), n)``.
* ``capacity(...)``: on a CPU-only run the model and the input pipeline share the cores; the
  step cannot get faster than the cores left over allow -> ``cores / cores_in_use``.
* ``fair_share(...)``: beside other processes the scheduler shares the cores among busy
  threads; a run that brings ``t`` of them beside theirs (``u`` cores) gets
  ``cores * t / (t + u)`` once all are busy -> that over ``cores_in_use``.
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

    def bounded(self, head: float | None, here: float | None, why: str) -> Gain:
        """The high end capped by what the machine has (``head``), the point and low end by
        what the run can get beside other processes (``here``, at most ``head``); ``why``
        is the one basis line that says both."""
        hi = self.high if head is None else min(self.high, max(1.0, head))
        cap = hi if here is None else min(hi, max(1.0, here))
        return Gain(min(self.point, cap), min(self.low, cap), hi, f"{self.basis}; {why}")

    def capped(self, cap: float | None, why: str) -> Gain:
        if cap is None or cap >= self.high:
            return self
        cap = max(1.0, cap)
        return Gain(min(self.point, cap), min(self.low, cap), cap, f"{self.basis}; {why}")


def at_most(share: float, basis: str) -> Gain:
    """A gain not measured and not modelled: from none to all of ``share`` of the step
    removed (a change reported to help, bounded by the time it acts on)."""
    return Gain.of(1.0, 1.0, removed(share), basis)


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


def fair_share(
    cores: int | None,
    own_cores: float | None,
    others_pct: float | None,
    threads: float,
    load: float | None = None,
) -> float | None:
    """Upper bound on a CPU-only run beside other processes that held ``others_pct`` % of
    the cores: the scheduler gives each busy thread an equal share, so a run that brings
    ``threads`` busy threads gets ``cores * threads / (threads + theirs)`` once the machine
    is full, all it asks for before. Their busy threads: the cores they held, or, on an
    oversubscribed host, the runnable tasks beyond this run's (``load``, the 1-min load
    average), whichever is more. None when a figure is unknown. Measured here (2 cores,
    others at ~45%): PyDataset workers 1 -> 2 gave 1.52x where the free cores alone allowed
    1.06x (docs/remedies.md)."""
    if not cores or own_cores is None or own_cores <= 0.05 or others_pct is None:
        return None
    theirs = max(cores * others_pct / 100.0, (load or 0.0) - own_cores)
    want = max(threads, own_cores)
    got = want if want + theirs <= cores else cores * want / (want + theirs)
    return max(1.0, got / own_cores)
