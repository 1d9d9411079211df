"""Timeline(s) in, Diagnosis out: the one facade over the pure analyzers. No I/O, no clocks.

    from gpudiag.analyze import diagnose
    d = diagnose(load_timelines(["rank0.json", "rank1.json"]))
    print(d.verdict, d.breakdown, d.finding_ids)

Several timelines are several ranks (or workers) of one run: each gets its own breakdown and
verdict, the headline verdict comes from their mean shares, and ranks are compared for
stragglers.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import rules
from gpudiag.analyze.activity import activity_strips
from gpudiag.analyze.arrival import RankTiming, find_waited_for
from gpudiag.analyze.breakdown import Breakdown, merge_breakdowns, row_dicts
from gpudiag.analyze.diagnosis import DeviceSummary, Diagnosis, Finding, RankSummary
from gpudiag.analyze.evidence import as_judged
from gpudiag.analyze.gaps import Gaps, idle_gaps
from gpudiag.analyze.phases import per_batch_times, weighted_quantile, whole_run
from gpudiag.analyze.rules import HostFacts, RankEvidence, RunEvidence, Situation
from gpudiag.analyze.verdict import decide
from gpudiag.trace.runconfig import RunConfig
from gpudiag.trace.timeline import Timeline

__all__ = ["Diagnosis", "diagnose"]


def _labels(timelines: list[Timeline]) -> list[str]:
    labels = []
    for i, tl in enumerate(timelines):
        if tl.meta.rank is not None:
            label = f"rank {tl.meta.rank}"
        elif "worker_device" in tl.meta.extra:
            label = f"worker {tl.meta.extra['worker_device']}"
        else:
            label = f"#{i}" if len(timelines) > 1 else "run"
        while label in labels:
            label += "'"
        labels.append(label)
    return labels


def _inconclusive_reason(timelines: list[Timeline], parts: list[Breakdown]) -> str | None:
    if any(p.steps_analyzed for p in parts):
        return None
    if not any(len(tl.steps) for tl in timelines):
        return (
            "no training steps found in the trace (no ProfilerStep#N, step markers or "
            "gpudiag step events), so time cannot be attributed per step"
        )
    if not any(tl.has_device_activity() for tl in timelines):
        return (
            "no device activity recorded (no GPU kernels, copies or compute-thread events), "
            "so device time cannot be measured"
        )
    return "device activity and training steps do not overlap in time"


def _merge_findings(groups: list[list[Finding]], labels: list[str]) -> list[Finding]:
    """One finding per id: the worst instance, noting on how many ranks it appeared."""
    order = rules.SEVERITY_ORDER
    best: dict[str, Finding] = {}
    count: dict[str, list[str]] = {}
    for label, group in zip(labels, groups, strict=True):
        for f in group:
            count.setdefault(f.id, []).append(label)
            cur = best.get(f.id)
            if cur is None or order[f.severity] < order[cur.severity]:
                best[f.id] = f
    if len(labels) > 1:
        for fid, f in best.items():
            f.evidence = {
                **f.evidence,
                "ranks_affected": len(set(count[fid])),
                "ranks_total": len(labels),
            }
    return sorted(best.values(), key=lambda f: order[f.severity])


def config_of(tl: Timeline, cpu_count: int | None = None) -> RunConfig:
    """The run's configuration: what the recorder wrote, completed by what the trace shows
    (tf.data stages in a TF profile, metadata fields of foreign traces)."""
    cfg = RunConfig(**{k: getattr(tl.meta.config, k) for k in tl.meta.config.to_dict()})
    meta, pipe = tl.meta, tl.pipeline
    if pipe.get("sequential_map") and not cfg.sequential_maps:
        cfg.sequential_maps = 1
    if pipe.get("py_function"):
        cfg.python_ops = True
    if (pipe.get("sequential_map") or pipe.get("py_function")) and cfg.input_kind is None:
        cfg.input_kind = "tf.data"
    if pipe.get("dataloader_workers") is not None and cfg.input_kind is None:
        cfg.input_kind = "dataloader"
    cfg.fill(
        RunConfig(
            framework=meta.framework or None,
            device_type=meta.device_type or None,
            replicas=meta.replicas,
            global_batch=meta.batch_size,
            cores=cpu_count or _int(meta.extra.get("cpu_count")),
            params=_int(meta.extra.get("params")),
        )
    )
    return cfg


def _int(x: object) -> int | None:
    try:
        return int(x) if x is not None else None  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _rank_findings(
    tl: Timeline, b: Breakdown | None, gaps: list[Gaps], cfg: RunConfig, host: HostFacts
) -> list[Finding]:
    found = rules.detect(RankEvidence(tl, b, gaps, cfg, host))
    if not cfg.to_dict() or not tl.meta.config.to_dict():
        # a trace without a recorded configuration: keep the lints its recorder made
        ids = {f.id for f in found}
        found += [
            Finding(f.id, f.severity, f.title, dict(f.evidence), "lint")
            for f in tl.findings
            if f.id not in ids
        ]
    return found


def diagnose(timelines: list[Timeline], cpu_count: int | None = None) -> Diagnosis:
    """Diagnose one run from one or more Timelines (ranks)."""
    if not timelines:
        return Diagnosis("inconclusive", 0.0, "no timelines to analyze", merge_breakdowns([]))
    labels = _labels(timelines)
    runs = [whole_run(tl) for tl in timelines]  # windows weighted by the time they stand for
    parts = [r.breakdown for r in runs]
    gaps = [idle_gaps(tl) for tl in timelines]
    configs = [config_of(tl, cpu_count) for tl in timelines]
    hosts = [HostFacts.of(tl) for tl in timelines]
    limitations = sorted({lim for tl in timelines for lim in tl.meta.limitations})
    sources = sorted({tl.meta.source for tl in timelines if tl.meta.source})
    producer = ", ".join(sorted({tl.meta.producer for tl in timelines}))
    ranks = [
        RankSummary(
            label,
            decide(b.shares)[0] if b.steps_analyzed else "inconclusive",
            {k: round(v, 4) for k, v in b.shares.items()},
            b.steps_analyzed,
            round(b.step_time_us / 1000.0, 3),
        )
        for label, b in zip(labels, parts, strict=True)
    ]
    devices = _device_rows(labels, parts, gaps)
    steps = _step_stats(timelines, parts)
    reason = _inconclusive_reason(timelines, parts)
    groups = [
        _rank_findings(tl, b if b.steps_analyzed else None, g, cfg, host)
        for tl, b, g, cfg, host in zip(timelines, parts, gaps, configs, hosts, strict=True)
    ]
    findings = _merge_findings(groups, labels)
    waited_for = _rank_waits(timelines, labels, ranks)
    if reason is not None:
        # who the ranks wait for shows in the callback's step timing even without a profile
        findings += [waited_for] if waited_for else []
        shares = merge_breakdowns([])
        situation = Situation(
            shares, "inconclusive", configs[0], hosts[0], {f.id: f for f in findings}
        )
        return Diagnosis(
            "inconclusive",
            0.0,
            reason,
            shares,
            findings,
            rules.advise(findings, situation),
            ranks,
            devices,
            steps,
            [],
            limitations,
            sources,
            producer,
            run=runs[0].to_dict(),
        )
    findings += rules.detect_run(RunEvidence(labels, parts, waited_for))
    shares = merge_breakdowns(parts)
    judged = as_judged(shares, configs[0])
    verdict, confidence, why = decide(judged)
    if judged is not shares:
        why += (
            " (with host time Keras spends pulling batches from Python code, "
            f"{round(100 * shares['other'])}% of step time, counted as input wait)"
        )
    if runs[0].disagree:
        confidence *= 0.8
    if runs[0].note:
        why += f" ({runs[0].note})"
    verdicts = {r.verdict for r in ranks if r.steps}
    if len(verdicts) > 1:
        confidence *= 0.8  # ranks disagree
        why += f" (ranks disagree: {', '.join(sorted(verdicts))})"
    contention = next((f for f in findings if f.id == "cpu-contention"), None)
    if contention is not None:
        confidence *= 0.6  # a neighbour distorts every figure of this run
        why += (
            f"; other processes took {contention.evidence['cpu_other_processes_p50_pct']}"
            "% of the host CPU meanwhile, so this may not be the run's own bottleneck"
        )
    first = next(b for b in parts if b.steps_analyzed)
    median_ms = steps.get("median_ms")
    situation = Situation(
        judged,
        verdict,
        configs[0],
        hosts[0],
        {f.id: f for f in findings},
        float(median_ms) if isinstance(median_ms, int | float) else None,
    )
    return Diagnosis(
        verdict,
        round(confidence, 3),
        why,
        shares,
        findings,
        rules.advise(findings, situation),
        ranks,
        devices,
        steps,
        row_dicts(first.per_step, 200),
        limitations,
        sources,
        producer,
        activity_strips(timelines, labels, [b.per_step for b in parts]),
        run=runs[0].to_dict(),
    )


def _rank_waits(
    timelines: list[Timeline], labels: list[str], ranks: list[RankSummary]
) -> Finding | None:
    """Who the ranks wait for (arrival order at the collectives); fills the rank table."""
    if len(timelines) < 2:
        return None
    finding, table, _ = find_waited_for(
        [RankTiming.of(tl, label) for tl, label in zip(timelines, labels, strict=True)]
    )
    for row, summary in zip(table, ranks, strict=False):
        summary.work_ms, summary.wait_ms = row.work_ms, row.wait_ms
        summary.clock_offset_ms = row.clock_offset_ms
        if not summary.steps:  # no profiled step: the median step from the callback's timing
            summary.step_ms = row.step_ms
    return finding


def _device_rows(
    labels: list[str], parts: list[Breakdown], gaps: list[list[Gaps]]
) -> list[DeviceSummary]:
    rows = []
    for label, b, g in zip(labels, parts, gaps, strict=True):
        by_dev = {x.device: x for x in g}
        for d in b.devices:
            gd = by_dev.get(d.device, Gaps(d.device))
            rows.append(
                DeviceSummary(
                    label,
                    d.device,
                    round(d.busy, 4),
                    round(d.shares["compute"], 4),
                    round(d.shares["sync"], 4),
                    round(d.shares["transfer"], 4),
                    round(d.collective_total, 4),
                    gd.count,
                    round(gd.longest_us / 1000.0, 3),
                    round(gd.share, 4),
                    round(gd.boundary_share, 4),
                )
            )
    return rows


def _step_stats(timelines: list[Timeline], parts: list[Breakdown]) -> dict[str, object]:
    # per batch (steps_per_execution), aggregated step groups weighted by their batches
    pairs = [per_batch_times(tl) for tl in timelines]
    durations = np.concatenate([v for v, _ in pairs]) if pairs else np.zeros(0)
    weights = np.concatenate([w for _, w in pairs]) if pairs else np.zeros(0)
    analyzed = sum(b.steps_analyzed for b in parts)
    if not len(durations) or weights.sum() <= 0:
        return {"count": 0, "analyzed": 0}
    return {
        "count": int(weights.sum() + 0.5),
        "analyzed": int(analyzed),
        "median_ms": round(weighted_quantile(durations, weights, 0.5) / 1000.0, 3),
        "p90_ms": round(weighted_quantile(durations, weights, 0.9) / 1000.0, 3),
        "max_ms": round(float(np.max(durations)) / 1000.0, 3),
    }
