"""What a rule sees: one rank's evidence, every rank at once, and the situation its remedies
are chosen against. Pure.

ev = RankEvidence(timeline, breakdown, gaps, config, host)
finding = rank_rule.detect(ev)                  # Finding | None (a lint: check(config))
finding = run_rule.detect_run(RunEvidence(labels, breakdowns, waited_for))
suggestions = rule.advise(finding, situation)   # [Suggestion]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from gpudiag.analyze.bandwidth import CommFacts
from gpudiag.analyze.breakdown import Breakdown, empty_shares
from gpudiag.analyze.compile_time import compile_spans, during
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.gaps import Gaps
from gpudiag.analyze.headroom import MemoryFacts
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Intervals, Timeline

if TYPE_CHECKING:
    from gpudiag.analyze.fit_account import FitAccount


@dataclass
class HostFacts:
    """Host counters summarised over the run (medians unless named p95); None = not sampled."""

    cpu_total: float | None = None  # % of all cores, every process
    cpu_process: float | None = None  # % of one core: this process and its worker children
    cpu_others: float | None = None  # % of all cores used by other processes
    iowait: float | None = None  # % of all cores
    gil_p95: float | None = None  # ms
    gil_reference_p95: float | None = None  # ms
    gil_typical: float | None = None  # ms
    load: float | None = None  # runnable tasks on the host, every process (1-min load average)

    @classmethod
    def of(cls, tl: Timeline) -> HostFacts:
        # the GIL probe is late while the framework traces and compiles (it holds the GIL):
        # those bursts measure compilation, which compile_time.py counts, not input threads
        busy = compile_spans(tl) if len(tl.compiles) else None
        return cls(
            cpu_total=_median(tl, "cpu_total"),
            cpu_process=_median(tl, "cpu_process"),
            cpu_others=_median(tl, "cpu_others"),
            iowait=_median(tl, "cpu_iowait"),
            gil_p95=_percentile(tl, "gil_lateness", 95, busy),
            gil_reference_p95=_percentile(tl, "gil_reference_lateness", 95, busy),
            gil_typical=_percentile(tl, "gil_lateness_p50", 50, busy),
            load=_median(tl, "host_load_1min"),
        )

    def own_cores(self) -> float | None:
        """Cores this process (and its workers) kept busy on average."""
        return None if self.cpu_process is None else self.cpu_process / 100.0


def _percentile(tl: Timeline, name: str, q: float, skip: Intervals | None = None) -> float | None:
    """The ``q`` percentile of a counter, leaving out samples taken inside ``skip``."""
    cs = tl.counter(name)
    vals = np.concatenate([c.values for c in cs]) if cs else np.zeros(0)
    if skip is not None and len(skip) and vals.size:
        ts = np.concatenate([c.ts for c in cs])
        vals = vals[~during(skip, ts)]
    vals = vals[np.isfinite(vals)]
    return float(np.percentile(vals, q)) if vals.size else None


def _median(tl: Timeline, name: str) -> float | None:
    return _percentile(tl, name, 50)


PYTHON_FED = ("generator", "pydataset")


def as_judged(shares: dict[str, float], cfg: RunConfig) -> dict[str, float]:
    """Shares the verdict and the rules judge on. When Keras itself pulls batches from Python
    (a generator or PyDataset), the wait happens in Keras's Python iterator, not in a TF op,
    and lands in 'other' — sometimes as input, sometimes not, from one profile window to the
    next (0–46% measured on the same run). There 'other' is counted as input wait: the sum is
    stable, the split is not (docs/method.md)."""
    if cfg.input_kind not in PYTHON_FED or shares["other"] <= 0:
        return shares
    return {**shares, "input": shares["input"] + shares["other"], "other": 0.0}


@dataclass
class RankEvidence:
    """One rank's timeline and what the analyzers made of it."""

    timeline: Timeline
    breakdown: Breakdown | None  # None when no step could be analyzed
    gaps: list[Gaps]
    config: RunConfig
    host: HostFacts
    # the run's sized collectives against the link, every rank compared (bandwidth.py)
    comm: CommFacts | None = None

    @property
    def shares(self) -> dict[str, float]:
        """The shares as judged (``as_judged``); the measured ones are in ``breakdown``."""
        return as_judged(self.breakdown.shares, self.config) if self.breakdown else (empty_shares())

    @property
    def input_share(self) -> float | None:
        return self.shares["input"] if self.breakdown else None

    @property
    def cpu_device(self) -> bool:
        return (self.config.device_type or self.timeline.meta.device_type) == "CPU"

    @cached_property
    def fit(self) -> FitAccount:
        """The whole fit's wall time, accounted for (analyze/fit_account.py)."""
        from gpudiag.analyze.fit_account import fit_account

        return fit_account(self.timeline)


@dataclass
class RunEvidence:
    """Every rank at once, for rules that compare ranks."""

    labels: list[str]
    breakdowns: list[Breakdown]
    # who the ranks wait for at the collectives (analyze/arrival.py), found by the facade
    # because it also fills the per-rank table
    waited_for: Finding | None = None


@dataclass
class Situation:
    """What the remedies are chosen against: the merged shares, the verdict, the run's
    configuration, the host, and the other findings (so advice stays coherent)."""

    shares: dict[str, float]
    verdict: str
    config: RunConfig
    host: HostFacts
    findings: dict[str, Finding] = field(default_factory=dict)
    step_ms: float | None = None
    device_measured: bool | None = None  # device time was measured (kernels, copies, ops)
    steps_recorded: int | None = None
    # peak memory where the batch lives, for the batch remedies (analyze/headroom.py)
    memory: MemoryFacts | None = None

    @property
    def stopped_note(self) -> str:
        """Why a stopped run's remedies carry no modelled gain."""
        after = f" after {self.steps_recorded} steps" if self.steps_recorded else ""
        return (
            f"the run stopped early{after} (crash, interrupt or a cut trace); its partial "
            "steps need not stand for the run"
        )

    fit: FitAccount | None = None  # the whole fit's wall time (None: not analysed)

    @property
    def cores(self) -> int | None:
        return self.config.cores

    @property
    def cpu_device(self) -> bool:
        return self.config.device_type == "CPU"

    def has(self, finding_id: str) -> bool:
        return finding_id in self.findings


def pct(x: float) -> float:
    """A share as a percentage with one decimal, for evidence."""
    return round(100.0 * x, 1)


def shown(x: float) -> float:
    """A share as its evidence shows it (``pct``), for a sentence that quotes the evidence:
    the gain models read the measured share, the words agree with the figure printed."""
    return pct(x) / 100.0
