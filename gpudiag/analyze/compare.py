"""Two diagnoses in, what moved out: did the change help, and was it the remedy suggested? Pure.

    c = compare(diagnose(base_timelines), diagnose(new_timelines))
    c.step_time_ratio      # NEW median step / BASE median step (0.72: NEW is faster)
    c.share_deltas         # {"input": -0.33, "compute": +0.15, ...} (NEW - BASE, fractions)
    c.gone, c.appeared     # finding ids
    c.remedies             # each of BASE's suggestions: applied (its finding went away) or not

A remedy counts as applied when the finding it addresses is gone from NEW; its measured
speed-up (BASE median / NEW median) is then set beside the gain BASE's report predicted.
The step figure is the median over all recorded steps, so warm-up outliers move it little.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.diagnosis import Diagnosis


@dataclass
class RunFigures:
    """One side of a comparison: verdict and step time figures (ms)."""

    verdict: str
    confidence: float
    reason: str
    steps: int
    median_step_ms: float | None
    p90_step_ms: float | None
    breakdown: dict[str, float]
    findings: list[str]
    sources: list[str]

    @classmethod
    def of(cls, d: Diagnosis) -> RunFigures:
        st = d.steps or {}
        return cls(
            d.verdict,
            round(d.confidence, 3),
            d.reason,
            int(st.get("count") or 0),
            st.get("median_ms"),
            st.get("p90_ms"),
            {k: round(v, 4) for k, v in d.breakdown.items()},
            d.finding_ids,
            list(d.sources),
        )


@dataclass
class RemedyCheck:
    """One suggestion BASE's report made, checked against NEW."""

    title: str
    finding: str
    expected_gain: float
    expected_gain_range: list[float]
    status: str  # "applied" | "not applied" | "unknown"
    note: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    base: RunFigures
    new: RunFigures
    step_time_ratio: float | None  # NEW / BASE median step; None when either has no steps
    share_deltas: dict[str, float]  # NEW - BASE, fractions of step time
    appeared: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    remedies: list[RemedyCheck] = field(default_factory=list)
    summary: str = ""

    @property
    def slower_pct(self) -> float | None:
        """How much slower NEW's median step is, in percent (negative: faster)."""
        if self.step_time_ratio is None:
            return None
        return 100.0 * (self.step_time_ratio - 1.0)

    def regressed(self, pct: float) -> bool:
        """True when NEW's median step is more than ``pct`` percent slower than BASE's."""
        slower = self.slower_pct
        return slower is not None and slower > pct

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": asdict(self.base),
            "new": asdict(self.new),
            "step_time_ratio": self.step_time_ratio,
            "speedup": (None if not self.step_time_ratio else round(1.0 / self.step_time_ratio, 4)),
            "share_deltas": self.share_deltas,
            "findings_appeared": self.appeared,
            "findings_gone": self.gone,
            "remedies": [r.to_dict() for r in self.remedies],
            "summary": self.summary,
        }


def _ratio(base: float | None, new: float | None) -> float | None:
    if not base or new is None or base <= 0:
        return None
    if new == base:
        return 1.0  # the same run compared with itself: exactly 1
    return round(new / base, 4)


def _predicted(gain: float, rng: list[float], speedup: float | None) -> str:
    """What BASE's report predicted, and where the measured speed-up falls against it."""
    if not rng and gain <= 1.0:
        return "no gain was predicted"
    lo, hi = (rng[0], rng[-1]) if rng else (gain, gain)
    text = f"predicted {gain:.2f}×" if gain > 1.0 else f"predicted up to {hi:.2f}×"
    if rng and hi - lo >= 0.02:
        text += f" ({lo:.2f}–{hi:.2f}×)"
    if speedup is None:
        return text
    if speedup < lo - 0.01:
        return text + ": measured below it"
    if speedup > hi + 0.01:
        return text + ": measured above it"
    return text + ": measured within it"


def _check(
    title: str,
    finding: str,
    gain: float,
    rng: list[float],
    new_ids: set[str],
    base_ids: set[str],
    speedup: float | None,
) -> RemedyCheck:
    if not finding or finding not in base_ids:
        return RemedyCheck(
            title,
            finding,
            gain,
            rng,
            "unknown",
            "not tied to a finding: the traces cannot show whether it was done",
        )
    if finding in new_ids:
        return RemedyCheck(
            title, finding, gain, rng, "not applied", f"{finding} is still present in NEW"
        )
    measured = (
        f"measured {speedup:.2f}× step speed-up"
        if speedup is not None
        else "step times not comparable"
    )
    return RemedyCheck(
        title,
        finding,
        gain,
        rng,
        "applied",
        f"{finding} is gone in NEW; {measured}, {_predicted(gain, rng, speedup)}",
    )


def _summary(c: Comparison) -> str:
    if c.step_time_ratio is None:
        return "step times cannot be compared (a run has no recorded training steps)"
    pct = c.slower_pct or 0.0
    if abs(pct) < 0.05:
        speed = "NEW's median step equals BASE's"
    elif pct < 0:
        speed = f"NEW is {1.0 / c.step_time_ratio:.2f}× faster ({-pct:.1f}% shorter median step)"
    else:
        speed = f"NEW is {pct:.1f}% slower (median step ×{c.step_time_ratio:.2f})"
    applied = [r for r in c.remedies if r.status == "applied"]
    if applied:
        what = (
            "; the remedy BASE suggested was applied: "
            if len(applied) == 1
            else "; remedies BASE suggested were applied (the speed-up is theirs together): "
        )
        what += ", ".join(f"{r.title} ({r.finding} gone)" for r in applied)
    elif c.remedies and any(r.status == "not applied" for r in c.remedies):
        what = "; none of the remedies BASE suggested shows as applied (their findings remain)"
    else:
        what = ""
    return speed + what


def compare(base: Diagnosis, new: Diagnosis) -> Comparison:
    """Compare two diagnoses (BASE before a change, NEW after it)."""
    b, n = RunFigures.of(base), RunFigures.of(new)
    ratio = _ratio(b.median_step_ms, n.median_step_ms)
    deltas = {
        c: round(new.breakdown.get(c, 0.0) - base.breakdown.get(c, 0.0), 4) for c in CATEGORIES
    }
    base_ids, new_ids = set(b.findings), set(n.findings)
    speedup = 1.0 / ratio if ratio else None
    seen: set[tuple[str, str]] = set()
    remedies = []
    for s in base.suggestions:
        key = (s.title, s.finding)
        if key in seen:
            continue
        seen.add(key)
        remedies.append(
            _check(
                s.title,
                s.finding,
                s.expected_gain,
                list(s.expected_gain_range),
                new_ids,
                base_ids,
                speedup,
            )
        )
    c = Comparison(
        base=b,
        new=n,
        step_time_ratio=ratio,
        share_deltas=deltas,
        appeared=[f for f in n.findings if f not in base_ids],
        gone=[f for f in b.findings if f not in new_ids],
        remedies=remedies,
    )
    c.summary = _summary(c)
    return c
