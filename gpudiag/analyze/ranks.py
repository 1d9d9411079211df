"""Each rank as the facade reads it, and the tables the report keeps per rank and per device.
Pure.

    ranks = read_ranks(timelines, cpu_count)   # label, whole run, gaps, config, host per rank
    rank_summaries(ranks)                      # one row per rank: verdict, shares, step time
    device_rows(ranks)                         # one row per device: busy, shares, idle gaps
    merge_findings(groups, labels)             # one finding per id, its worst instance
    rank_waits(ranks, summaries)               # who the ranks wait for; fills the rank rows
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudiag.analyze.arrival import RankTiming, find_waited_for
from gpudiag.analyze.breakdown import Breakdown
from gpudiag.analyze.device_budget import within_device_budget
from gpudiag.analyze.diagnosis import SEVERITY_ORDER, DeviceSummary, Finding, RankSummary
from gpudiag.analyze.evidence import PYTHON_FED, HostFacts
from gpudiag.analyze.gaps import Gaps, idle_gaps
from gpudiag.analyze.input_stage import input_stage
from gpudiag.analyze.phases import RunView, whole_run
from gpudiag.analyze.verdict import decide
from gpudiag.trace.model.runconfig import INPUT_KINDS, RunConfig
from gpudiag.trace.model.timeline import Timeline, stopped_early


@dataclass
class RankView:
    """One rank (or worker) of the run and what the analyzers made of it."""

    label: str
    timeline: Timeline
    run: RunView  # profiler windows weighted by the time they stand for (analyze/phases.py)
    gaps: list[Gaps]
    config: RunConfig
    host: HostFacts

    @property
    def breakdown(self) -> Breakdown:
        return self.run.breakdown


def read_ranks(timelines: list[Timeline], cpu_count: int | None = None) -> list[RankView]:
    views = []
    for label, whole in zip(_labels(timelines), timelines, strict=True):
        tl = within_device_budget(whole)  # per-device analyses: at most a bounded table
        cfg = config_of(tl, cpu_count)
        run = whole_run(tl, fed_from_python=cfg.input_kind in PYTHON_FED)
        views.append(RankView(label, tl, run, idle_gaps(tl), cfg, HostFacts.of(tl)))
    return views


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
    loader_workers = pipe.get("dataloader_workers")
    if loader_workers is not None:
        cfg.input_kind = cfg.input_kind or "dataloader"
        if cfg.use_multiprocessing is None:  # 0: in the training process; else worker processes
            cfg.use_multiprocessing = loader_workers != 0
        if loader_workers == 0 and cfg.workers is None:
            cfg.workers = 0
    if stopped_early(meta.limitations):
        cfg.stopped_early = True
    keras_input = pipe.get("keras_input")  # the Keras data adapter the profile shows
    if keras_input in INPUT_KINDS and cfg.input_kind in (None, "unknown"):
        cfg.input_kind = str(keras_input)
    stage = input_stage(pipe)  # where a TF profile shows the input time going
    if stage is not None and cfg.input_stage is None:
        cfg.input_stage, cfg.input_stage_name = stage[0], stage[1]
    if meta.producer == "gpudiag":  # the callback runs inside Keras's fit
        cfg.api = cfg.api or "keras"
        cfg.keras_version = cfg.keras_version or _str(meta.extra.get("keras"))
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


def _str(x: object) -> str | None:
    return str(x) if isinstance(x, str | int | float) else None


def _int(x: object) -> int | None:
    try:
        return int(x) if x is not None else None  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def rank_summaries(ranks: list[RankView]) -> list[RankSummary]:
    return [_summary(r.label, r.breakdown) for r in ranks]


def _summary(label: str, b: Breakdown) -> RankSummary:
    return RankSummary(
        label,
        decide(b.shares)[0] if b.steps_analyzed else "inconclusive",
        {k: round(v, 4) for k, v in b.shares.items()},
        b.steps_analyzed,
        round(b.step_time_us / 1000.0, 3),
    )


def device_rows(ranks: list[RankView]) -> list[DeviceSummary]:
    rows = []
    for r in ranks:
        by_dev = {x.device: x for x in r.gaps}
        for d in r.breakdown.devices:
            gd = by_dev.get(d.device, Gaps(d.device))
            rows.append(
                DeviceSummary(
                    r.label,
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


def merge_findings(groups: list[list[Finding]], labels: list[str]) -> list[Finding]:
    """One finding per id: the worst instance, noting on how many ranks it appeared."""
    best: dict[str, Finding] = {}
    count: dict[str, list[str]] = {}
    for label, group in zip(labels, groups, strict=True):
        for f in group:
            count.setdefault(f.id, []).append(label)
            cur = best.get(f.id)
            if cur is None or SEVERITY_ORDER[f.severity] < SEVERITY_ORDER[cur.severity]:
                best[f.id] = f
    if len(labels) > 1:
        for fid, f in best.items():
            f.evidence = {
                **f.evidence,
                "ranks_affected": len(set(count[fid])),
                "ranks_total": len(labels),
            }
    return sorted(best.values(), key=lambda f: SEVERITY_ORDER[f.severity])


def rank_waits(ranks: list[RankView], summaries: list[RankSummary]) -> Finding | None:
    """Who the ranks wait for (arrival order at the collectives); fills the rank rows."""
    if len(ranks) < 2:
        return None
    finding, table, _ = find_waited_for([RankTiming.of(r.timeline, r.label) for r in ranks])
    for row, summary in zip(table, summaries, strict=False):
        summary.work_ms, summary.wait_ms = row.work_ms, row.wait_ms
        summary.clock_offset_ms = row.clock_offset_ms
        if not summary.steps:  # no profiled step: the median step from the callback's timing
            summary.step_ms = row.step_ms
    return finding
