"""``memory-growth``: memory that grows from epoch to epoch, and when it runs out.

What it reads: the memory held at each epoch's end (record/memory.py): the framework
allocator's bytes in use on each device, the process's RSS on the host; else NVML's memory
held by the process, the most in each epoch. The first epoch is left out: it compiles,
fills caches and allocator pools. What remains must grow at every epoch, by
``MIN_GROWTH_MIB`` and ``MIN_GROWTH_SHARE`` of where it started at least.
Why it matters: a leak (Python lists of tensors or losses, retracing that keeps every
traced graph, a cache that grows with the data) ends in an out-of-memory crash, or on the
host in swapping. Nothing here makes a step faster: it keeps the run alive.

Example: "Host memory grows 95 MiB per epoch (RSS 0.7 → 1.1 GB over 4 epochs): out of
memory in about 160 epochs (4 h)". Fix: find what holds memory across epochs.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.needs import Needs
from gpudiag.trace.model.timeline import Timeline

ID = "memory-growth"
SHOWN_FIRST = "keeps-alive"  # shown for the crash it prevents, not for speed
NEEDS = {"find-memory-growth": Needs()}
MIN_EPOCHS = 3  # readings after the first epoch: two points make a line, three a trend
MIN_GROWTH_MIB = 64.0  # less is allocator rounding and caches settling
MIN_GROWTH_SHARE = 0.05  # of the memory held after the first epoch
NOISE_MIB = 8.0  # a reading may dip this much below the previous and still count as growing
RUNWAY_HIGH_EPOCHS = 100  # out of memory within this many epochs (or hours): high severity
RUNWAY_HIGH_HOURS = 24.0
READ_AFTER_US = 2e6  # a reading up to 2 s after an epoch's end (or the next one's start)

# (counter, where, reading taken): the first with enough epochs wins
SERIES = (
    ("mem_in_use", "Device", "end"),
    ("gpu_mem_process", "Device", "max"),
    ("mem_host_rss", "Host", "end"),
)


def epoch_levels(tl: Timeline, name: str, how: str) -> dict[str, np.ndarray]:
    """Per source, the counter's value for each epoch (its last reading by the epoch's end,
    or the most it held during it); epochs without a reading are left out."""
    spans = tl.spans.get("epoch") or []
    out: dict[str, np.ndarray] = {}
    for c in tl.counter(name):
        vals = []
        for i, (start, end) in enumerate(spans):
            upto = end + READ_AFTER_US
            if i + 1 < len(spans):
                upto = min(upto, spans[i + 1][0])  # the next epoch's readings are its own
            inside = (c.ts >= start) & (c.ts < upto)
            if inside.any():
                v = c.values[inside]
                vals.append(float(v[-1] if how == "end" else v.max()))
        out[c.source] = np.array(vals)
    return out


def _limit(tl: Timeline, source: str, where: str) -> float | None:
    """MiB the memory can grow to: the allocator's limit, the device's total, or on the
    host the RSS plus what is still available."""
    if where == "Device":
        # the allocator's own limit, else the device's total (NVML numbers devices its way)
        found = tl.counter("mem_limit", source) or tl.counter("gpu_mem_total")
        return float(found[0].values[-1]) if found else None
    rss, avail = tl.counter("mem_host_rss"), tl.counter("mem_host_available")
    if rss and avail:
        return float(rss[0].values[-1] + avail[0].values[-1])
    return None


def _growing(levels: np.ndarray) -> bool:
    if levels.size < MIN_EPOCHS:
        return False
    steps = np.diff(levels)
    total = float(levels[-1] - levels[0])
    return bool(
        np.all(steps > -NOISE_MIB)
        and total >= MIN_GROWTH_MIB
        and total >= MIN_GROWTH_SHARE * max(levels[0], 1.0)
    )


def detect(ev: RankEvidence) -> Finding | None:
    tl = ev.timeline
    spans = tl.spans.get("epoch") or []
    if len(spans) < MIN_EPOCHS + 1:
        return None
    epoch_s = float(np.median([e - s for s, e in spans[1:]])) / 1e6
    for name, where, how in SERIES:
        for source, levels in epoch_levels(tl, name, how).items():
            later = levels[1:]  # the first epoch compiles and fills pools
            if not _growing(later):
                continue
            rate = float(np.polyfit(np.arange(later.size), later, 1)[0])  # MiB per epoch
            return _finding(tl, name, where, source, later, rate, epoch_s)
    return None


def _finding(
    tl: Timeline,
    name: str,
    where: str,
    source: str,
    levels: np.ndarray,
    rate: float,
    epoch_s: float,
) -> Finding:
    limit = _limit(tl, source, where)
    evidence: dict[str, object] = {
        "reading": name,
        "source": source,
        "per_epoch_mib": round(rate, 1),
        "per_hour_mib": round(rate * 3600.0 / epoch_s, 1) if epoch_s > 0 else None,
        "first_mib": round(float(levels[0]), 1),
        "last_mib": round(float(levels[-1]), 1),
        "epochs": int(levels.size),
    }
    runway = ""
    severity = "moderate"
    if limit is not None and limit > levels[-1] and rate > 0:
        epochs_left = (limit - float(levels[-1])) / rate
        hours = epochs_left * epoch_s / 3600.0
        evidence.update(
            limit_mib=round(limit, 1),
            epochs_left=round(epochs_left, 1),
            hours_left=round(hours, 2),
        )
        runway = f": out of memory in about {epochs_left:.0f} epochs ({_duration(hours)})"
        if epochs_left < RUNWAY_HIGH_EPOCHS or hours < RUNWAY_HIGH_HOURS:
            severity = "high"
    what = "Host memory" if where == "Host" else f"{source} memory"
    return Finding(
        ID,
        severity,
        f"{what} grows {rate:.0f} MiB per epoch ({_gb(levels[0])} → {_gb(levels[-1])} over "
        f"{levels.size} epochs){runway}",
        evidence,
        "counters",
    )


def _gb(mib: float) -> str:
    return f"{mib / 1024:.1f} GB" if mib >= 1024 else f"{mib:.0f} MiB"


def _duration(hours: float) -> str:
    if hours >= 48:
        return f"{hours / 24:.0f} days"
    if hours >= 1:
        return f"{hours:.1f} h"
    return f"{hours * 60:.0f} min"


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    retrace = (
        " This run retraces its step (recompilation): each new trace keeps its graph."
        if s.has("recompilation")
        else ""
    )
    host = f.evidence.get("reading") == "mem_host_rss"
    look = (
        "tracemalloc snapshots compared across epochs, or objgraph.show_growth()"
        if host
        else "jax.live_arrays() / tf.config.experimental.get_memory_info / "
        "torch.cuda.memory_snapshot() compared across epochs"
    )
    return [
        Suggestion(
            "Find what holds memory across epochs",
            "Something keeps memory from one epoch to the next: a Python list of tensors, "
            "losses or predictions (append .numpy() values or floats instead), a callback "
            "that keeps history, a step traced again for new shapes or Python arguments, a "
            f"cache that grows with the data.{retrace} Compare what is alive after two epochs "
            f"({look}).",
            1.0,
            "no speed-up: it keeps the run from running out of memory",
            ID,
            remedy="find-memory-growth",
        )
    ]
