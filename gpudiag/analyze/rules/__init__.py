"""The rules registry: one module per finding id, listed once in ``RANK_RULES`` or
``RUN_RULES``.

A rank rule (``RankRule``) judges one timeline: ``detect(RankEvidence)``. A lint
(``LintRule``, ``KIND = "lint"``) reads only the ``RunConfig``: ``check(config)``, judged once
per configuration (before the first step, or once per trace), never again against the trace;
where the trace adds to it (a measured input share, a tf.data stage in a profile) its
``refine(finding, evidence)`` does so. A run rule (``RunRule``) judges every rank at once:
``detect_run(RunEvidence)`` (a straggler shows only against the other ranks). All hold ``ID``,
``advise(finding, situation) -> [Suggestion]`` with its gain model, and their thresholds with
their reasons. Adding a finding means adding one module and one line here (docs/rules.md).

    lints = lint(config)                         # the lints, once
    findings = detect(evidence, lints)           # one rank: its rules, the lints refined
    suggestions = advise(findings, situation)    # one ranked, coherent list
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from gpudiag.analyze import headroom, input_arrays, input_plan
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import HostFacts, RankEvidence, RunEvidence, Situation
from gpudiag.analyze.fit_gain import over_fit
from gpudiag.analyze.needs import Needs, admit
from gpudiag.analyze.rules import (
    allocator_stalls,
    batch_not_multiple_of_replicas,
    communication_hidden,
    compute_bound_options,
    cpu_contention,
    cpu_saturated,
    dataloader_in_main_process,
    dataloader_starved,
    epoch_end_callbacks,
    epoch_start_wait,
    exposed_collectives,
    full_precision,
    gil_pressure,
    gpu_idle_gaps,
    gpus_held_idle,
    host_overhead,
    host_preprocessing,
    host_sync_stalls,
    host_to_device_heavy,
    inference_trace,
    input_wait,
    kernel_launch_bound,
    layout_transposes,
    low_sm_activity,
    memory_growth,
    no_prefetch,
    partial_last_batch,
    python_generator,
    recompilation,
    run_eagerly,
    sequential_map,
    slow_source,
    small_batch,
    small_model_multi_gpu,
    startup_heavy,
    straggler,
    tensor_cores_idle,
    untraced_time,
    validation_heavy,
    whole_batch_per_replica,
    xla_off,
)
from gpudiag.analyze.wording import in_fits_keras
from gpudiag.analyze.workload import workload_facts
from gpudiag.trace.model.runconfig import RunConfig


class RankRule(Protocol):
    """A rule judged on each rank's timeline alone."""

    ID: str

    def detect(self, ev: RankEvidence) -> Finding | None: ...

    def advise(self, f: Finding, s: Situation) -> list[Suggestion]: ...


@runtime_checkable
class LintRule(Protocol):
    """A rule judged on the run's configuration alone, once."""

    ID: str
    KIND: str  # "lint"

    def check(self, cfg: RunConfig) -> Finding | None: ...

    def advise(self, f: Finding, s: Situation) -> list[Suggestion]: ...


@runtime_checkable
class RefinedLint(LintRule, Protocol):
    """A lint the trace adds to: ``refine`` takes the lint's finding (None: the
    configuration did not show it) and returns it as the trace shows it."""

    def refine(self, f: Finding | None, ev: RankEvidence) -> Finding | None: ...


class RunRule(Protocol):
    """A rule judged on every rank at once."""

    ID: str

    def detect_run(self, run: RunEvidence) -> Finding | None: ...

    def advise(self, f: Finding, s: Situation) -> list[Suggestion]: ...


# Order = tie-break order of the report: correctness first, then causes before symptoms.
RANK_RULES: tuple[RankRule | LintRule, ...] = (
    batch_not_multiple_of_replicas,
    partial_last_batch,
    recompilation,
    run_eagerly,
    cpu_contention,
    python_generator,
    sequential_map,
    no_prefetch,
    slow_source,
    dataloader_in_main_process,
    dataloader_starved,
    gil_pressure,
    input_wait,
    epoch_start_wait,
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
    memory_growth,
    host_preprocessing,
    host_sync_stalls,
    validation_heavy,  # before host-overhead: its steps_per_execution counts both
    host_overhead,
    small_batch,
    low_sm_activity,
    layout_transposes,
    tensor_cores_idle,
    full_precision,
    xla_off,
    compute_bound_options,
    epoch_end_callbacks,
    startup_heavy,
    gpu_idle_gaps,
)
RUN_RULES: tuple[RunRule, ...] = (straggler,)
RULES: tuple[RankRule | LintRule | RunRule, ...] = RANK_RULES + RUN_RULES
LINT_RULES: tuple[LintRule, ...] = tuple(r for r in RANK_RULES if isinstance(r, LintRule))

SEVERITY_ORDER = {"high": 0, "moderate": 1, "info": 2}
MIN_GAIN = 1.02  # a change worth less than 2% is not worth the reader's time
UNESTIMATED_MIN_HIGH = 1.10  # an unestimated remedy is shown only if it could be worth 10%
CORRECTNESS = {"batch-not-multiple-of-replicas", "partial-last-batch"}
FREES_RESOURCES = {"gpus-held-idle"}  # shown for what they free for others, not for speed
KEEPS_ALIVE = {"memory-growth"}  # shown for the crash they prevent, not for speed
ALWAYS_SHOWN = CORRECTNESS | FREES_RESOURCES | KEEPS_ALIVE  # shown first, whatever their gain

__all__ = [
    "LINT_RULES",
    "RANK_RULES",
    "RULES",
    "RUN_RULES",
    "Advice",
    "HostFacts",
    "LintRule",
    "RankEvidence",
    "RankRule",
    "RefinedLint",
    "RunEvidence",
    "RunRule",
    "Situation",
    "advise",
    "advise_run",
    "detect",
    "detect_run",
    "lint",
]


def detect(ev: RankEvidence, lints: Sequence[Finding] = ()) -> list[Finding]:
    """One rank's findings, in the registry's order: each rank rule's, and the ``lints``
    judged before (``lint``), taken as they are or refined by the trace; no lint is judged
    again here."""
    made = {f.id: f for f in lints}
    out: list[Finding] = []
    for rule in RANK_RULES:
        if isinstance(rule, LintRule):
            f = made.get(rule.ID)
            if isinstance(rule, RefinedLint):
                f = rule.refine(f, ev)
        else:
            f = rule.detect(ev)
        if f is not None:
            out.append(f)
    known = {rule.ID for rule in LINT_RULES}
    return out + [f for f in lints if f.id not in known]  # a recorder's own lints, kept


def detect_run(run: RunEvidence) -> list[Finding]:
    """Every run rule's finding over all ranks."""
    return [f for rule in RUN_RULES if (f := rule.detect_run(run)) is not None]


def lint(config: RunConfig) -> list[Finding]:
    """Findings that follow from the configuration alone (before the first step)."""
    return [f for rule in LINT_RULES if (f := rule.check(config)) is not None]


def _worth_showing(s: Suggestion) -> bool:
    if s.finding in ALWAYS_SHOWN:
        return True
    if s.expected_gain >= MIN_GAIN:
        return True
    return bool(s.expected_gain_range) and s.expected_gain_range[-1] >= UNESTIMATED_MIN_HIGH


def remedy_needs() -> dict[str, Needs]:
    """Every remedy's needs, from the rule modules' ``NEEDS`` tables (and the input plan's,
    which the input rules share)."""
    table: dict[str, Needs] = {**input_arrays.NEEDS, **input_plan.NEEDS}
    for rule in RULES:
        table.update(getattr(rule, "NEEDS", {}))
    return table


@dataclass
class Advice:
    """The ranked remedies, and those the run's facts ruled out (with why)."""

    suggestions: list[Suggestion] = field(default_factory=list)
    withheld: list[dict[str, str]] = field(default_factory=list)


def advise(findings: list[Finding], s: Situation) -> list[Suggestion]:
    """One ranked list: each remedy once (first finding that offers it), correctness fixes
    first, then by expected gain; only what the run's facts allow (``advise_run``)."""
    return advise_run(findings, s).suggestions


def advise_run(findings: list[Finding], s: Situation) -> Advice:
    """``advise`` with the remedies withheld because the run rules them out. A run that
    stopped early keeps its remedies but no gain modelled from its partial steps."""
    by_id = {rule.ID: rule for rule in RULES}
    needs = remedy_needs()
    facts = workload_facts(s.config, s.device_measured)
    advice = Advice()
    out = advice.suggestions
    seen: set[str] = set()
    for f in findings:
        rule = by_id.get(f.id)
        if rule is None:
            continue
        for offered in (in_fits_keras(x, s.config) for x in rule.advise(f, s)):
            checked = admit(offered, needs.get(offered.remedy), facts)
            sug = checked.suggestion
            if sug is not None:  # a batch remedy: does the bigger batch fit in memory?
                sug, too_big = headroom.attach(sug, s.memory, s.config)
                if too_big:
                    checked, sug = replace(checked, withheld=too_big, source=""), None
            if sug is None:
                if offered.title not in seen:
                    seen.add(offered.title)
                    advice.withheld.append(
                        {
                            "title": offered.title,
                            "remedy": offered.remedy,
                            "finding": offered.finding,
                            "why": checked.withheld,
                            "source": checked.source,
                        }
                    )
                continue
            if s.config.stopped_early and sug.finding not in ALWAYS_SHOWN:
                sug = _unmodelled(sug, s.stopped_note)
            if sug.title not in seen and (s.config.stopped_early or _worth_showing(sug)):
                seen.add(sug.title)
                out.append(sug)
    out = over_fit(out, s.fit)  # step gains as gains of the fit where steps are a minority
    out.sort(
        key=lambda x: (
            x.finding not in ALWAYS_SHOWN,
            -x.expected_gain,
            -(x.expected_gain_range[-1] if x.expected_gain_range else 1.0),
        )
    )
    for sug in out:
        sug.expected_gain = round(sug.expected_gain, 2)
    return advice


def _unmodelled(sug: Suggestion, why: str) -> Suggestion:
    """No gain from a run that stopped: its few steps need not stand for the run."""
    return replace(sug, expected_gain=1.0, expected_gain_range=[], basis=f"not modelled: {why}")
