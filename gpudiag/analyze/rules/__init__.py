"""The rules registry: one module per finding id, listed once in ``RANK_RULES`` or
``RUN_RULES``.

A rank rule (``RankRule``) judges one timeline: ``detect(RankEvidence)``. A run rule
(``RunRule``) judges every rank at once: ``detect_run(RunEvidence)`` (a straggler shows only
against the other ranks). Both hold ``ID``, ``advise(finding, situation) -> [Suggestion]`` with
its gain model, and their thresholds with their reasons. Adding a finding means adding one
module and one line here (docs/rules.md).

    findings = detect(evidence)                  # one rank
    suggestions = advise(findings, situation)    # one ranked, coherent list
    pre_fit = lint(config)                       # rules that need only the run config
"""

from __future__ import annotations

from typing import Protocol

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import HostFacts, RankEvidence, RunEvidence, Situation
from gpudiag.analyze.rules import (
    allocator_stalls,
    batch_not_multiple_of_replicas,
    communication_hidden,
    compute_bound_options,
    cpu_contention,
    cpu_saturated,
    dataloader_in_main_process,
    dataloader_starved,
    exposed_collectives,
    full_precision,
    gil_pressure,
    gpu_idle_gaps,
    gpus_held_idle,
    host_overhead,
    host_sync_stalls,
    host_to_device_heavy,
    inference_trace,
    input_wait,
    kernel_launch_bound,
    layout_transposes,
    no_prefetch,
    partial_last_batch,
    python_generator,
    sequential_map,
    slow_source,
    small_batch,
    small_model_multi_gpu,
    straggler,
    untraced_time,
    whole_batch_per_replica,
    xla_off,
)
from gpudiag.trace.runconfig import RunConfig
from gpudiag.trace.timeline import Timeline


class RankRule(Protocol):
    """A rule judged on each rank's timeline alone."""

    ID: str

    def detect(self, ev: RankEvidence) -> Finding | None: ...

    def advise(self, f: Finding, s: Situation) -> list[Suggestion]: ...


class RunRule(Protocol):
    """A rule judged on every rank at once."""

    ID: str

    def detect_run(self, run: RunEvidence) -> Finding | None: ...

    def advise(self, f: Finding, s: Situation) -> list[Suggestion]: ...


# Order = tie-break order of the report: correctness first, then causes before symptoms.
RANK_RULES: tuple[RankRule, ...] = (
    batch_not_multiple_of_replicas,
    partial_last_batch,
    cpu_contention,
    python_generator,
    sequential_map,
    no_prefetch,
    slow_source,
    dataloader_in_main_process,
    dataloader_starved,
    gil_pressure,
    input_wait,
    cpu_saturated,
    whole_batch_per_replica,
    host_to_device_heavy,
    exposed_collectives,
    communication_hidden,
    small_model_multi_gpu,
    gpus_held_idle,
    untraced_time,
    inference_trace,
    kernel_launch_bound,
    allocator_stalls,
    host_sync_stalls,
    host_overhead,
    small_batch,
    layout_transposes,
    full_precision,
    xla_off,
    compute_bound_options,
    gpu_idle_gaps,
)
RUN_RULES: tuple[RunRule, ...] = (straggler,)
RULES: tuple[RankRule | RunRule, ...] = RANK_RULES + RUN_RULES

SEVERITY_ORDER = {"high": 0, "moderate": 1, "info": 2}
MIN_GAIN = 1.02  # a change worth less than 2% is not worth the reader's time
UNESTIMATED_MIN_HIGH = 1.10  # an unestimated remedy is shown only if it could be worth 10%
CORRECTNESS = {"batch-not-multiple-of-replicas", "partial-last-batch"}
FREES_RESOURCES = {"gpus-held-idle"}  # shown for what they free for others, not for speed
ALWAYS_SHOWN = CORRECTNESS | FREES_RESOURCES  # shown first, whatever their gain

__all__ = [
    "RANK_RULES",
    "RULES",
    "RUN_RULES",
    "HostFacts",
    "RankEvidence",
    "RankRule",
    "RunEvidence",
    "RunRule",
    "Situation",
    "advise",
    "detect",
    "detect_run",
    "lint",
]


def detect(ev: RankEvidence) -> list[Finding]:
    """Every per-rank rule's finding for one timeline."""
    return [f for rule in RANK_RULES if (f := rule.detect(ev)) is not None]


def detect_run(run: RunEvidence) -> list[Finding]:
    """Every run rule's finding over all ranks."""
    return [f for rule in RUN_RULES if (f := rule.detect_run(run)) is not None]


def lint(config: RunConfig) -> list[Finding]:
    """Findings that follow from the configuration alone (before the first step)."""
    return detect(RankEvidence(Timeline(), None, [], config, HostFacts()))


def _worth_showing(s: Suggestion) -> bool:
    if s.finding in ALWAYS_SHOWN:
        return True
    if s.expected_gain >= MIN_GAIN:
        return True
    return bool(s.expected_gain_range) and s.expected_gain_range[-1] >= UNESTIMATED_MIN_HIGH


def advise(findings: list[Finding], s: Situation) -> list[Suggestion]:
    """One ranked list: each remedy once (first finding that offers it), correctness fixes
    first, then by expected gain."""
    by_id = {rule.ID: rule for rule in RULES}
    out: list[Suggestion] = []
    seen: set[str] = set()
    for f in findings:
        rule = by_id.get(f.id)
        if rule is None:
            continue
        for sug in rule.advise(f, s):
            if sug.title not in seen and _worth_showing(sug):
                seen.add(sug.title)
                out.append(sug)
    out.sort(
        key=lambda x: (
            x.finding not in ALWAYS_SHOWN,
            -x.expected_gain,
            -(x.expected_gain_range[-1] if x.expected_gain_range else 1.0),
        )
    )
    for sug in out:
        sug.expected_gain = round(sug.expected_gain, 2)
    return out
