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
How the remedies are ranked is ``analyze/ranking.py``'s policy; a rule whose remedies lead
whatever their gain declares ``SHOWN_FIRST``.

    lints = lint(config)                         # the lints, once
    findings = detect(evidence, lints)           # one rank: its rules, the lints refined
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import HostFacts, RankEvidence, RunEvidence, Situation
from gpudiag.analyze.rules import (
    allocator_stalls,
    batch_callbacks,
    batch_not_multiple_of_replicas,
    communication_hidden,
    compute_bound_options,
    cpu_contention,
    cpu_saturated,
    dataloader_in_main_process,
    dataloader_starved,
    dense_embedding_updates,
    epoch_end_callbacks,
    epoch_start_wait,
    exposed_collectives,
    float64_input,
    full_precision,
    gil_pressure,
    gpu_idle_gaps,
    gpu_unused,
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
    nccl_paths_off,
    no_prefetch,
    op_determinism,
    partial_last_batch,
    python_generator,
    recompilation,
    repeated_fit,
    rnn_without_cudnn,
    run_eagerly,
    sequential_map,
    slow_mixed_precision,
    slow_source,
    small_batch,
    small_model_multi_gpu,
    startup_heavy,
    storage_wait,
    straggler,
    tensor_cores_idle,
    threads_capped,
    untraced_time,
    validation_heavy,
    whole_batch_per_replica,
    xla_off,
)
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
    gpu_unused,
    slow_mixed_precision,
    dense_embedding_updates,
    threads_capped,
    rnn_without_cudnn,
    op_determinism,
    repeated_fit,
    cpu_contention,
    python_generator,
    sequential_map,
    no_prefetch,
    slow_source,
    storage_wait,
    dataloader_in_main_process,
    dataloader_starved,
    gil_pressure,
    input_wait,
    epoch_start_wait,
    cpu_saturated,
    whole_batch_per_replica,
    float64_input,
    host_to_device_heavy,
    nccl_paths_off,
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
    batch_callbacks,
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

__all__ = [
    "LINT_RULES",
    "RANK_RULES",
    "RULES",
    "RUN_RULES",
    "HostFacts",
    "LintRule",
    "RankEvidence",
    "RankRule",
    "RefinedLint",
    "RunEvidence",
    "RunRule",
    "Situation",
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
