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

from gpudiag.analyze.activity import activity_strips
from gpudiag.analyze.advice import Context, suggest
from gpudiag.analyze.arrival import RankTiming, find_waited_for
from gpudiag.analyze.breakdown import Breakdown, merge_breakdowns, step_breakdown
from gpudiag.analyze.diagnosis import DeviceSummary, Diagnosis, Finding, RankSummary
from gpudiag.analyze.findings import counter_findings, recorded_findings, trace_findings
from gpudiag.analyze.gaps import Gaps, idle_gaps
from gpudiag.analyze.straggler import find_straggler
from gpudiag.analyze.verdict import decide
from gpudiag.trace.timeline import Timeline

__all__ = ["Diagnosis", "diagnose"]

_SEVERITY_ORDER = {"high": 0, "moderate": 1, "info": 2}


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
        return ("no training steps found in the trace (no ProfilerStep#N, step markers or "
                "gpudiag step events), so time cannot be attributed per step")
    if not any(tl.has_device_activity() for tl in timelines):
        return ("no device activity recorded (no GPU kernels, copies or compute-thread events), "
                "so device time cannot be measured")
    return "device activity and training steps do not overlap in time"


def _merge_findings(groups: list[list[Finding]], labels: list[str]) -> list[Finding]:
    """One finding per id: the worst instance, noting on how many ranks it appeared."""
    best: dict[str, Finding] = {}
    count: dict[str, list[str]] = {}
    for label, group in zip(labels, groups, strict=True):
        for f in group:
            count.setdefault(f.id, []).append(label)
            cur = best.get(f.id)
            if cur is None or _SEVERITY_ORDER[f.severity] < _SEVERITY_ORDER[cur.severity]:
                best[f.id] = f
    if len(labels) > 1:
        for fid, f in best.items():
            f.evidence = {**f.evidence, "ranks_affected": len(set(count[fid])),
                          "ranks_total": len(labels)}
    return sorted(best.values(), key=lambda f: _SEVERITY_ORDER[f.severity])


def diagnose(timelines: list[Timeline], cpu_count: int | None = None) -> Diagnosis:
    """Diagnose one run from one or more Timelines (ranks)."""
    if not timelines:
        return Diagnosis("inconclusive", 0.0, "no timelines to analyze",
                         merge_breakdowns([]))
    labels = _labels(timelines)
    parts = [step_breakdown(tl) for tl in timelines]
    gaps = [idle_gaps(tl) for tl in timelines]
    limitations = sorted({lim for tl in timelines for lim in tl.meta.limitations})
    sources = sorted({tl.meta.source for tl in timelines if tl.meta.source})
    producer = ", ".join(sorted({tl.meta.producer for tl in timelines}))
    host_groups = [
        counter_findings(tl, b.shares["input"] if b.steps_analyzed else None)
        + recorded_findings(tl)
        for tl, b in zip(timelines, parts, strict=True)
    ]
    ranks = [
        RankSummary(label, decide(b.shares)[0] if b.steps_analyzed else "inconclusive",
                    {k: round(v, 4) for k, v in b.shares.items()}, b.steps_analyzed,
                    round(b.step_time_us / 1000.0, 3))
        for label, b in zip(labels, parts, strict=True)
    ]
    devices = _device_rows(labels, parts, gaps)
    steps = _step_stats(timelines, parts)
    reason = _inconclusive_reason(timelines, parts)
    if reason is not None:
        findings = _merge_findings(host_groups, labels)
        shares = merge_breakdowns([])
        return Diagnosis("inconclusive", 0.0, reason, shares, findings,
                         suggest(findings, shares, "inconclusive", _context(timelines, cpu_count)),
                         ranks, devices, steps, [], limitations, sources, producer)
    groups = [
        trace_findings(tl, b, g) + host
        for tl, b, g, host in zip(timelines, parts, gaps, host_groups, strict=True)
    ]
    findings = _merge_findings(groups, labels)
    straggler = _rank_waits(timelines, labels, ranks) or _device_straggler(parts)
    if straggler:
        findings.append(straggler)
    shares = merge_breakdowns(parts)
    verdict, confidence, why = decide(shares)
    verdicts = {r.verdict for r in ranks if r.steps}
    if len(verdicts) > 1:
        confidence *= 0.8  # ranks disagree
        why += f" (ranks disagree: {', '.join(sorted(verdicts))})"
    first = next(b for b in parts if b.steps_analyzed)
    return Diagnosis(
        verdict, round(confidence, 3), why, shares, findings,
        suggest(findings, shares, verdict, _context(timelines, cpu_count)),
        ranks, devices, steps, first.per_step[:200], limitations, sources, producer,
        activity_strips(timelines, labels, [b.per_step for b in parts]),
    )


def _rank_waits(timelines: list[Timeline], labels: list[str], ranks: list[RankSummary]
                ) -> Finding | None:
    """Who the ranks wait for (arrival order at the collectives); fills the rank table."""
    if len(timelines) < 2:
        return None
    finding, table, _ = find_waited_for(
        [RankTiming.of(tl, label) for tl, label in zip(timelines, labels, strict=True)])
    for row, summary in zip(table, ranks, strict=False):
        summary.work_ms, summary.wait_ms = row.work_ms, row.wait_ms
        summary.clock_offset_ms = row.clock_offset_ms
    return finding


def _device_straggler(parts: list[Breakdown]) -> Finding | None:
    """Within one process: a device (replica) consistently slower than its peers."""
    for b in parts:
        if len(b.work_us) > 1:
            # compare compute, not work: in-process replicas share one step clock
            f = find_straggler(b.work_us)
            if f:
                return f
    return None


def _device_rows(labels: list[str], parts: list[Breakdown], gaps: list[list[Gaps]]
                 ) -> list[DeviceSummary]:
    rows = []
    for label, b, g in zip(labels, parts, gaps, strict=True):
        by_dev = {x.device: x for x in g}
        for d in b.devices:
            gd = by_dev.get(d.device, Gaps(d.device))
            rows.append(DeviceSummary(
                label, d.device, round(d.busy, 4), round(d.shares["compute"], 4),
                round(d.shares["sync"], 4), round(d.shares["transfer"], 4),
                round(d.collective_total, 4), gd.count, round(gd.longest_us / 1000.0, 3),
                round(gd.share, 4), round(gd.boundary_share, 4)))
    return rows


def _step_stats(timelines: list[Timeline], parts: list[Breakdown]) -> dict[str, object]:
    durations = np.concatenate([tl.steps.durations for tl in timelines]) if timelines else []
    analyzed = sum(b.steps_analyzed for b in parts)
    if not len(durations):
        return {"count": 0, "analyzed": 0}
    return {
        "count": len(durations),
        "analyzed": int(analyzed),
        "median_ms": round(float(np.median(durations)) / 1000.0, 3),
        "p90_ms": round(float(np.percentile(durations, 90)) / 1000.0, 3),
        "max_ms": round(float(np.max(durations)) / 1000.0, 3),
    }


def _context(timelines: list[Timeline], cpu_count: int | None) -> Context:
    meta = timelines[0].meta
    cores = cpu_count or int(meta.extra.get("cpu_count") or 8)
    return Context(cpu_count=cores, replicas=meta.replicas, batch_size=meta.batch_size,
                   framework=meta.framework, device_type=meta.device_type)
