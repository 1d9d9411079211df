"""The shape of a comparison of two runs: each side's figures, each remedy's check, and the
comparison itself with the gate's rule (``regressed``). ``compare.py`` fills it from two
diagnoses, ``compare_text.py`` words it.

    c = compare(base, new)        # a Comparison
    c.work["speedup"], c.judged, c.regressed(5.0), c.to_dict()
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gpudiag.analyze.diagnosis import SCHEMA_VERSION, Diagnosis, strict_json
from gpudiag.analyze.run_match import stopped
from gpudiag.analyze.step_modes import bimodal, meaning

# Below this many steady steps on a side the interval is wide and the report says so (a few
# dozen steps is what a comparison needs to resolve a 10% change on a noisy host); a run that
# stopped early with fewer is not measured at all.
FEW_STEPS = 20


@dataclass
class RunFigures:
    """One side of a comparison: verdict, speed and step time figures (ms)."""

    verdict: str
    confidence: float
    reason: str
    steps: int
    median_step_ms: float | None
    p90_step_ms: float | None
    breakdown: dict[str, float]
    findings: list[str]
    sources: list[str]
    global_batch: int | None = None
    phases: list[str] = field(default_factory=list)  # slowdowns etc. the run went through
    # the steady part's speed: samples per second (steps where the batch is not recorded)
    per_second: float | None = None
    steady_steps: int = 0  # batches in the steady part
    steady: str = ""  # what the steady part is: "epochs 2–3 (whole epochs after the first)"
    stopped: str | None = None  # how the run ended early, when it did
    bimodal: dict[str, Any] | None = None  # two groups of step times (step_modes.py)

    @classmethod
    def of(cls, d: Diagnosis) -> RunFigures:
        st = d.steps or {}
        tp = (d.run or {}).get("throughput") or {}
        batch = d.config.get("global_batch")
        per_s = None
        if tp.get("seconds"):
            per_s = round(tp["batches"] * (batch or 1) / tp["seconds"], 3)
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
            batch,
            [_phase_text(p) for p in (d.run or {}).get("phases") or [] if isinstance(p, dict)],
            per_s,
            int(tp.get("batches") or 0),
            str(tp.get("over") or ""),
            stopped(d),
            _modes(st.get("sample_ms") or [], d.config),
        )


def _modes(sample_ms: list[float], config: dict[str, Any]) -> dict[str, Any] | None:
    m = bimodal(sample_ms)
    return None if m is None else {**m, "meaning": meaning(config, m)}


def _phase_text(p: dict[str, Any]) -> str:
    what = str(p.get("detail") or p.get("kind") or "phase")
    return f"{what} ({_s(p.get('start_s'))} in, {_s(p.get('duration_s'))} long)"


def _s(seconds: Any) -> str:
    """Seconds as a phase is placed: tenths below 10 s (a warm-up of 0.3 s is not 0 s)."""
    x = float(seconds) if isinstance(seconds, int | float) else 0.0
    return f"{x:.1f} s" if abs(x) < 10 else f"{x:.0f} s"


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
    # time per unit of work NEW/BASE with its interval; None when it cannot be measured
    work: dict[str, Any] | None = None
    changes: list[str] = field(default_factory=list)  # configuration fields that differ
    differences: list[str] = field(default_factory=list)  # what makes them other programs
    # why no speed is given (a run stopped early with too few steps, no steady steps)
    unmeasured: str = ""

    @property
    def judged(self) -> bool:
        """Whether the runs are one program before and after a change, both measured to the
        end: only then may a gate judge NEW."""
        return not self.differences and not (self.base.stopped or self.new.stopped)

    def regressed(self, pct: float) -> bool:
        """True when NEW does its work more than ``pct`` percent slower than BASE, beyond the
        runs' noise: even the interval's most favourable end is that much slower. Never for
        runs that cannot be judged (``judged``) or that a neighbour's load disturbed."""
        if self.work is None or not self.judged or self.work["contended"]:
            return False
        return bool(self.work["measurable"]) and self.work["interval"][0] > 1.0 + pct / 100.0

    def to_dict(self) -> dict[str, Any]:
        """Exactly what ``gpudiag compare --json`` prints (strict JSON)."""
        return strict_json(
            {
                "schema": SCHEMA_VERSION,  # gpudiag/data/comparison.schema.json
                "base": asdict(self.base),
                "new": asdict(self.new),
                "step_time_ratio": self.step_time_ratio,
                "speedup": self.work["speedup"] if self.work else None,
                "share_deltas": self.share_deltas,
                "findings_appeared": self.appeared,
                "findings_gone": self.gone,
                "remedies": [r.to_dict() for r in self.remedies],
                "summary": self.summary,
                "work": self.work,
                "config_changes": self.changes,
                "differences": self.differences,
                "judged": self.judged,
                "unmeasured": self.unmeasured or None,
            }
        )
