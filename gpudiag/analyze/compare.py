"""Two diagnoses in, what moved out: did the change help, and was it the remedy suggested? Pure.

    c = compare(diagnose(base_timelines), diagnose(new_timelines))
    c.step_time_ratio      # NEW median step / BASE median step (0.72: NEW is faster)
    c.work                 # time per sample (or per step) NEW/BASE, its 95% interval
    c.share_deltas         # {"input": -0.33, "compute": +0.15, ...} (NEW - BASE, fractions)
    c.changes              # what the recorded configurations say changed
    c.remedies             # each of BASE's suggestions: applied, not applied or unknown

Runs are compared on work per second: time per sample where both recorded their global
batch (a 4x batch makes a step longer and the run faster), per step otherwise, and always
with the interval the runs' own step-to-step and epoch-to-epoch noise allows
(``step_ratio.py``). A remedy counts as applied when the configuration field it acts on
changed its way (``attribution.py``), never because a finding went away.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gpudiag.analyze.attribution import config_changes, remedy_status
from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.diagnosis import SCHEMA_VERSION, Diagnosis, strict_json
from gpudiag.analyze.step_ratio import StepRatio, epoch_medians, step_ratio

# Below this many steps on a side the interval is wide and the report says so (a few dozen
# steps is what a step-to-step comparison needs to resolve a 10% change on a noisy host).
FEW_STEPS = 20


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
    global_batch: int | None = None
    phases: list[str] = field(default_factory=list)  # slowdowns etc. the run went through

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
            d.config.get("global_batch"),
            [_phase_text(p) for p in (d.run or {}).get("phases") or [] if isinstance(p, dict)],
        )


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
    # time per unit of work NEW/BASE with its interval; None when a side has no step times
    work: dict[str, Any] | None = None
    changes: list[str] = field(default_factory=list)  # configuration fields that differ

    @property
    def slower_pct(self) -> float | None:
        """How much slower NEW's median step is, in percent (negative: faster)."""
        if self.step_time_ratio is None:
            return None
        return 100.0 * (self.step_time_ratio - 1.0)

    def regressed(self, pct: float) -> bool:
        """True when NEW does its work more than ``pct`` percent slower than BASE, beyond the
        runs' noise: even the interval's most favourable end is that much slower."""
        if self.work is None:
            slower = self.slower_pct
            return slower is not None and slower > pct
        if self.work["contended"]:
            return False  # a neighbour's share of the CPU cannot be told from the change's
        return bool(self.work["measurable"]) and self.work["interval"][0] > 1.0 + pct / 100.0

    def to_dict(self) -> dict[str, Any]:
        """Exactly what ``gpudiag compare --json`` prints (strict JSON)."""
        return strict_json(
            {
                "schema": SCHEMA_VERSION,  # gpudiag/data/comparison.schema.json
                "base": asdict(self.base),
                "new": asdict(self.new),
                "step_time_ratio": self.step_time_ratio,
                "speedup": (
                    None if not self.step_time_ratio else round(1.0 / self.step_time_ratio, 4)
                ),
                "share_deltas": self.share_deltas,
                "findings_appeared": self.appeared,
                "findings_gone": self.gone,
                "remedies": [r.to_dict() for r in self.remedies],
                "summary": self.summary,
                "work": self.work,
                "config_changes": self.changes,
            }
        )


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
    base: dict[str, Any],
    new: dict[str, Any],
    speedup: float | None,
    measurable: bool,
) -> RemedyCheck:
    status, why = remedy_status(title, base, new)
    if status == "applied":
        measured = (
            "speed not comparable"
            if speedup is None
            else f"measured {speedup:.2f}× speed-up"
            + ("" if measurable else " (point estimate, within the noise)")
        )
        why += f"; {measured}, {_predicted(gain, rng, speedup)}"
    return RemedyCheck(title, finding, gain, rng, status, why)


def _speed(c: Comparison) -> str:
    w = c.work
    if w is None:
        return "step times cannot be compared (a run has no recorded training steps)"
    unit = w["unit"]
    lo, hi = w["speedup_interval"]
    span = f"95% interval {lo:.2f}–{hi:.2f}×"
    if not w["measurable"]:
        why = f"{span} holds 1.00×"
        few = min(c.base.steps, c.new.steps)
        if few < FEW_STEPS:
            why += f"; with {few} steps on a side the noise is wide: record more steps"
        text = (
            f"no measurable difference in time per {unit}: median step ×"
            f"{c.step_time_ratio:.2f}, within the noise ({why})"
        )
    else:
        s = w["speedup"]
        if s >= 1.0:
            text = f"NEW does {s:.2f}× the work per second of BASE ({span}, per {unit})"
        else:
            text = f"NEW is {100 * (1 / s - 1):.1f}% slower per {unit} ({span})"
        if unit == "sample" and c.base.global_batch != c.new.global_batch:
            text += (
                f"; batch {c.base.global_batch} → {c.new.global_batch}, so the median step "
                f"changed ×{c.step_time_ratio:.2f}"
            )
    if w["contended"]:
        who = " and ".join(f"{k} ({v:.0f}%)" for k, v in w["contended"].items())
        text += (
            f"; other processes took the host CPU during {who}, so the difference may be "
            "theirs, not the change's: time both again on a quiet machine (no gate fires)"
        )
    return text


def _summary(c: Comparison) -> str:
    speed = _speed(c)
    applied = [r for r in c.remedies if r.status == "applied"]
    if applied:
        what = (
            "; the remedy BASE suggested was applied: "
            if len(applied) == 1
            else "; remedies BASE suggested were applied (the speed-up is theirs together): "
        )
        what += ", ".join(f"{r.title} ({r.note.split(';')[0]})" for r in applied)
    elif c.changes:
        what = "; changed: " + ", ".join(c.changes) + " (not a remedy BASE suggested)"
    elif c.remedies and all(r.status == "unknown" for r in c.remedies):
        what = "; the traces do not record what changed, so no remedy can be named as applied"
    else:
        what = ""
    return speed + what


def _work(base: Diagnosis, new: Diagnosis, b: RunFigures, n: RunFigures) -> dict[str, Any] | None:
    """Time per unit of work NEW/BASE, its interval, and whether it is beyond the noise."""
    r = step_ratio(
        base.steps.get("sample_ms") or [],
        new.steps.get("sample_ms") or [],
        epoch_medians(base.run or {}),
        epoch_medians(new.run or {}),
    )
    if r is None:
        return None
    unit = "step"
    if b.global_batch and n.global_batch:
        r, unit = r.scaled(b.global_batch / n.global_batch), "sample"
    out = _interval_dict(r, unit)
    out["contended"] = {
        name: pct
        for name, d in (("BASE", base), ("NEW", new))
        if (pct := _others_pct(d)) is not None
    }
    return out


def _others_pct(d: Diagnosis) -> float | None:
    """Share (%) of the host CPU other processes took during a run, when it was enough for
    the ``cpu-contention`` finding; None otherwise."""
    f = d.finding("cpu-contention")
    pct = f.evidence.get("cpu_other_processes_p50_pct") if f is not None else None
    return float(pct) if isinstance(pct, int | float) else None


def _interval_dict(r: StepRatio, unit: str) -> dict[str, Any]:
    return {
        "unit": unit,
        "ratio": round(r.ratio, 4),
        "interval": [round(r.low, 4), round(r.high, 4)],
        "speedup": round(1.0 / r.ratio, 4),
        "speedup_interval": [round(1.0 / r.high, 4), round(1.0 / r.low, 4)],
        "measurable": r.measurable,
        "basis": r.basis,
    }


def compare(base: Diagnosis, new: Diagnosis) -> Comparison:
    """Compare two diagnoses (BASE before a change, NEW after it)."""
    b, n = RunFigures.of(base), RunFigures.of(new)
    ratio = _ratio(b.median_step_ms, n.median_step_ms)
    deltas = {
        c: round(new.breakdown.get(c, 0.0) - base.breakdown.get(c, 0.0), 4) for c in CATEGORIES
    }
    base_ids, new_ids = set(b.findings), set(n.findings)
    work = _work(base, new, b, n)
    speedup = work["speedup"] if work else (1.0 / ratio if ratio else None)
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
                base.config,
                new.config,
                speedup,
                bool(work and work["measurable"]),
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
        work=work,
        changes=[str(ch) for ch in config_changes(base.config, new.config)],
    )
    c.summary = _summary(c)
    return c
