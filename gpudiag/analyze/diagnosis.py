"""The answer: verdict, confidence, breakdown, findings, suggestions. Public contract.

``Diagnosis.to_dict()`` is exactly what ``gpudiag analyze --json`` prints: strict JSON by
construction (``strict_json``: a figure that could not be measured is null, never NaN).

    d = diagnose(timelines)
    d.verdict          # "data-starved" | "sync-bound" | "compute-bound" | "inconclusive"
    d.to_dict()["breakdown"]["input"]
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

VERDICTS = ("data-starved", "sync-bound", "compute-bound", "inconclusive")
SEVERITIES = ("high", "moderate", "info")
SEVERITY_ORDER = {s: i for i, s in enumerate(SEVERITIES)}  # worst first
SCHEMA_VERSION = 1


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float as null, keys as strings, tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


@dataclass
class Finding:
    """One observed problem. ``id`` is stable (see ARCHITECTURE's public contract).

    ``evidence`` is for the reader (figures rounded); ``measured`` is the figure the rule's
    gain model reads, unrounded (a share of time as a fraction, where the rule has one). It
    is not part of ``to_dict``: the JSON shows the evidence. Rules whose gain reads several
    figures (recompilation's seconds, collective bandwidth's link and wait shares) read them
    from the evidence, rounded to a millisecond or a tenth of a percent, far inside the
    gain's range."""

    id: str
    severity: str  # high | moderate | info
    title: str
    evidence: dict[str, Any]
    source: str = "trace"  # trace | counters | lint
    measured: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["measured"]
        return out


@dataclass
class Suggestion:
    """A concrete change, with the gain it can buy measured from this run's shares."""

    title: str
    detail: str
    expected_gain: float  # estimated speed-up factor of step time (1.0 = none)
    basis: str  # how the gain was derived
    finding: str = ""  # id of the finding it addresses
    # [low, high] of the estimate (docs/method.md); empty for correctness fixes
    expected_gain_range: list[float] = field(default_factory=list)
    remedy: str = ""  # the remedy's id in its rule's NEEDS table (analyze/needs.py)
    # what the remedy assumes of the run that the run does not show: check these first
    assumes: list[str] = field(default_factory=list)
    # a batch remedy: the batch multiple it proposes, and whether that fits in memory
    # (analyze/headroom.py: needed and available bytes, the largest multiple that fits)
    batch_factor: float | None = None
    memory: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RankSummary:
    label: str
    verdict: str
    breakdown: dict[str, float]
    steps: int
    step_ms: float
    # multi-rank runs (analyze/arrival.py): medians per step, ms; None when not measured
    work_ms: float | None = None
    wait_ms: float | None = None  # waiting in collectives for the last rank to arrive
    clock_offset_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DeviceSummary:
    rank: str
    device: str
    busy: float
    compute: float
    sync: float
    transfer: float
    collective_total: float
    gaps: int
    longest_gap_ms: float
    gap_share: float
    gap_boundary_share: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Diagnosis:
    verdict: str
    confidence: float
    reason: str
    breakdown: dict[str, float]
    findings: list[Finding] = field(default_factory=list)
    suggestions: list[Suggestion] = field(default_factory=list)
    ranks: list[RankSummary] = field(default_factory=list)
    devices: list[DeviceSummary] = field(default_factory=list)
    steps: dict[str, Any] = field(default_factory=dict)
    per_step: list[dict[str, float]] = field(default_factory=list)  # first rank, for the strip
    limitations: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    producer: str = ""
    # per rank: profiled windows binned for drawing (analyze/activity.py)
    activity: list[dict[str, Any]] = field(default_factory=list)
    # the whole run: profiler windows (phase, weight, verdict), phases, per-epoch step times
    run: dict[str, Any] = field(default_factory=dict)
    # what the run already does (RunConfig.to_dict() of the first rank): compare reads what
    # changed between two runs from it
    config: dict[str, Any] = field(default_factory=dict)
    # the facts remedies were checked against ("unknown" where the run cannot tell), and the
    # remedies withheld because the run rules them out (analyze/needs.py)
    workload: dict[str, Any] = field(default_factory=dict)
    withheld: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    def finding(self, finding_id: str) -> Finding | None:
        return next((f for f in self.findings if f.id == finding_id), None)

    @property
    def finding_ids(self) -> list[str]:
        return [f.id for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        return strict_json(self._fields())

    def _fields(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_VERSION,
            "verdict": self.verdict,
            "confidence": round(self.confidence, 3),
            "reason": self.reason,
            "breakdown": {k: round(v, 4) for k, v in self.breakdown.items()},
            "findings": [f.to_dict() for f in self.findings],
            "suggestions": [s.to_dict() for s in self.suggestions],
            "ranks": [r.to_dict() for r in self.ranks],
            "devices": [d.to_dict() for d in self.devices],
            "steps": self.steps,
            "per_step": [{k: round(v, 4) for k, v in row.items()} for row in self.per_step],
            "limitations": self.limitations,
            "sources": self.sources,
            "producer": self.producer,
            "activity": self.activity,
            "run": self.run,
            "config": self.config,
            "workload": self.workload,
            "withheld": self.withheld,
        }
