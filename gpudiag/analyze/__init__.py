"""Timeline(s) in, Diagnosis out: the one facade over the pure analyzers. No I/O, no clocks.

    >>> from gpudiag.analyze import diagnose
    >>> from gpudiag.trace.load import load_timelines
    >>> d = diagnose(load_timelines(["sample_traces/mi250_rocm_minitoy.json.gz"]))
    >>> d.verdict, d.finding_ids
    ('inconclusive', ['kernel-launch-bound', 'gpu-idle-gaps', 'host-sync-stalls'])

Several timelines are several ranks (or workers) of one run: each gets its own breakdown and
verdict, the headline verdict comes from their mean shares, and ranks are compared for
stragglers. ``diagnose`` only calls the analyzers by name, in the order the report needs:

    ranks.py      each rank: whole run (phases.py), idle gaps, configuration, host counters
    rules/        findings per rank (RankRule) and over all ranks (RunRule), then remedies
    verdict.py    the headline verdict and the doubts that lower its confidence
    step_times.py step-time figures of the whole run; activity.py the strips the views draw
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpudiag.analyze import rules
from gpudiag.analyze.activity import activity_strips
from gpudiag.analyze.bandwidth import CommFacts, comm_facts
from gpudiag.analyze.breakdown import Breakdown, computes, merge_breakdowns, row_dicts
from gpudiag.analyze.diagnosis import Diagnosis, Finding, RankSummary
from gpudiag.analyze.distribution import model_parallel_note
from gpudiag.analyze.evidence import HostFacts, RankEvidence, RunEvidence, Situation
from gpudiag.analyze.fit_account import fit_account
from gpudiag.analyze.fit_gain import headline as fit_headline
from gpudiag.analyze.gaps import Gaps
from gpudiag.analyze.headline import lead
from gpudiag.analyze.headroom import memory_facts
from gpudiag.analyze.ranking import advise_run
from gpudiag.analyze.ranks import (
    RankView,
    device_rows,
    merge_findings,
    rank_summaries,
    rank_waits,
    read_ranks,
)
from gpudiag.analyze.step_times import step_stats
from gpudiag.analyze.timing_verdict import timing_verdict
from gpudiag.analyze.verdict import Doubts, Verdict, judge
from gpudiag.analyze.window_phase import scaled_to_run
from gpudiag.analyze.workload import shown, workload_facts
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.stream_overlap import DOUBTFUL
from gpudiag.trace.model.timeline import Timeline

__all__ = ["Diagnosis", "diagnose"]


def diagnose(
    timelines: list[Timeline],
    cpu_count: int | None = None,
    lints: Sequence[Finding] | None = None,
) -> Diagnosis:
    """Diagnose one run from one or more Timelines (ranks). ``lints``: the lints the
    recorder of the first timeline judged before its first step (analyze/lints.py), handed
    over instead of read back from the trace."""
    if not timelines:
        return Diagnosis("inconclusive", 0.0, "no timelines to analyze", merge_breakdowns([]))
    ranks = read_ranks(timelines, cpu_count)
    labels = [r.label for r in ranks]
    parts = [r.breakdown for r in ranks]
    summaries = rank_summaries(ranks)
    comm = _comm(ranks)
    # findings: each rank's, merged; then those judged over all ranks
    findings = merge_findings(
        [_findings_of(r, lints if i == 0 else None, comm) for i, r in enumerate(ranks)], labels
    )
    findings += rules.detect_run(RunEvidence(labels, parts, rank_waits(ranks, summaries)))
    shares = merge_breakdowns(parts)
    steps = step_stats(timelines, parts)
    verdict = lead(_verdict(ranks, summaries, shares, findings), findings)
    fit = fit_account(ranks[0].timeline)
    if fit_headline(fit):  # the steps are a minority of the fit: say so first
        verdict.reason = f"{fit_headline(fit)}. In the training steps: {verdict.reason}"
    situation = Situation(
        shares=verdict.judged,
        verdict=verdict.verdict,
        config=ranks[0].config,
        host=ranks[0].host,
        findings={f.id: f for f in findings},
        step_ms=_median_ms(steps),
        device_measured=any(r.timeline.has_device_activity() for r in ranks),
        steps_recorded=_int(steps.get("count")),
        memory=memory_facts([r.timeline for r in ranks], ranks[0].config),
        fit=fit,
    )
    advice = advise_run(findings, situation)
    scaled_to_run(advice.suggestions, ranks[0].run.window_phase)
    return Diagnosis(
        verdict=verdict.verdict,
        confidence=verdict.confidence,
        reason=verdict.reason,
        # no analysed step: the shares the ranks' step timing gave, if any
        breakdown=shares if any(b.steps_analyzed for b in parts) else verdict.judged,
        findings=findings,
        suggestions=advice.suggestions,
        ranks=summaries,
        devices=device_rows(ranks),
        steps=steps,
        per_step=_first_rows(parts),
        limitations=sorted(
            {lim for r in ranks for lim in r.timeline.meta.limitations}
            | {note for note in [model_parallel_note(ranks[0].config)] if note}
        ),
        sources=sorted({tl.meta.source for tl in timelines if tl.meta.source}),
        producer=", ".join(sorted({tl.meta.producer for tl in timelines})),
        activity=_activity(timelines, labels, parts),
        run={**ranks[0].run.to_dict(), "world_size": _world_size(timelines), "fit": fit.to_dict()},
        config=ranks[0].config.to_dict(),
        workload=shown(workload_facts(situation.config, situation.device_measured)),
        withheld=advice.withheld,
    )


def _comm(ranks: list[RankView]) -> CommFacts | None:
    """The sized collectives of every rank, compared (analyze/bandwidth.py)."""
    cfg, meta = ranks[0].config, ranks[0].timeline.meta
    return comm_facts([r.timeline for r in ranks], cfg.gpu_model, meta.world_size)


def _findings_of(
    r: RankView, lints: Sequence[Finding] | None = None, comm: CommFacts | None = None
) -> list[Finding]:
    b = r.breakdown
    return _rank_findings(
        r.timeline, b if b.steps_analyzed else None, r.gaps, r.config, r.host, lints, comm
    )


def _rank_findings(
    tl: Timeline,
    b: Breakdown | None,
    gaps: list[Gaps],
    cfg: RunConfig,
    host: HostFacts,
    lints: Sequence[Finding] | None = None,
    comm: CommFacts | None = None,
) -> list[Finding]:
    """One rank's findings. The lints are judged once: those its recorder handed over
    (``lints``), else from the rank's configuration here; the trace only refines them."""
    judged = list(lints) if lints is not None else rules.lint(cfg)
    if lints is None and not tl.meta.config.to_dict():
        # no recorded configuration: keep the lints its recorder made, as read back
        ids = {f.id for f in judged}
        judged += [
            Finding(f.id, f.severity, f.title, dict(f.evidence), "lint")
            for f in tl.findings
            if f.id not in ids
        ]
    return rules.detect(RankEvidence(tl, b, gaps, cfg, host, comm), judged)


def _verdict(
    ranks: list[RankView],
    summaries: list[RankSummary],
    shares: dict[str, float],
    findings: list[Finding],
) -> Verdict:
    """The headline; with no analysed step, from the ranks' step and wait times when they
    say it (timing_verdict.py), else inconclusive with the reason."""
    reason = _inconclusive_reason(ranks)
    if reason is not None:
        timed = timing_verdict(summaries)
        if timed is None:
            return Verdict.inconclusive(reason, shares)
        verdict, confidence, why, timed_shares = timed
        return Verdict(verdict, round(confidence, 3), why, timed_shares)
    run = ranks[0].run
    # ranks whose devices only copied have no verdict of their own to disagree with
    computing = [s for r, s in zip(ranks, summaries, strict=True) if computes(r.breakdown)]
    doubts = Doubts(
        window_note=run.note,
        windows_disagree=run.disagree,
        unrepresentative=run.window_phase is not None,
        rank_verdicts={s.verdict for s in computing if s.steps},
        contention=next((f for f in findings if f.id == "cpu-contention"), None),
        other_as_input=_mean(
            [r.breakdown.other_as_input for r in ranks if r.breakdown.steps_analyzed]
        ),
        doubtful_device_times=any(r.timeline.meta.extra.get(DOUBTFUL) for r in ranks),
    )
    return judge(shares, ranks[0].config, doubts)


def _inconclusive_reason(ranks: list[RankView]) -> str | None:
    if any(r.breakdown.steps_analyzed for r in ranks):
        return None
    if not any(len(r.timeline.steps) for r in ranks):
        return (
            "no training steps found in the trace (no ProfilerStep#N, step markers or "
            "gpudiag step events), so time cannot be attributed per step"
        )
    if not any(r.timeline.has_device_activity() for r in ranks):
        return (
            "no device activity recorded (no GPU kernels, copies or compute-thread events), "
            "so device time cannot be measured"
        )
    return "device activity and training steps do not overlap in time"


def _int(x: object) -> int | None:
    return int(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _world_size(timelines: list[Timeline]) -> int:
    """Processes in the run: what a rank's trace says, or the ranks read, whichever is more."""
    return max([len(timelines)] + [tl.meta.world_size or 1 for tl in timelines])


def _median_ms(steps: dict[str, object]) -> float | None:
    median_ms = steps.get("median_ms")
    return float(median_ms) if isinstance(median_ms, int | float) else None


def _activity(
    timelines: list[Timeline], labels: list[str], parts: list[Breakdown]
) -> list[dict[str, Any]]:
    """The strips the views draw; none when no step could be analysed."""
    if not any(b.steps_analyzed for b in parts):
        return []
    return activity_strips(timelines, labels, [b.per_step for b in parts])


def _first_rows(parts: list[Breakdown]) -> list[dict[str, float]]:
    """Per-step rows of the first rank with analysed steps (what the views draw)."""
    analyzed = [b for b in parts if b.steps_analyzed]
    first = next((b for b in analyzed if computes(b)), analyzed[0] if analyzed else None)
    return row_dicts(first.per_step, 200) if first else []


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
