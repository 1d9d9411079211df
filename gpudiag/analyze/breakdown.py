"""Where each step's time goes: input, transfer, compute, exposed sync, other. Pure.

Per device and step, in priority order so that every microsecond is counted once:
compute kernels; collectives not hidden under compute (exposed sync); host<->device copies
hidden under neither; host input wait while the device did nothing; the rest is "other"
(host overhead, launch latency, idle). The five shares sum to 1 by construction.

    b = step_breakdown(timeline)
    b.shares            # {"input": .38, "transfer": .01, "compute": .45, "sync": 0, "other": .16}
    b.per_step[0]       # same keys, first profiled step
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpudiag.trace.timeline import TRANSFER_KINDS, Intervals, Kind, Timeline, subtract, union_many

CATEGORIES = ("input", "transfer", "compute", "sync", "other")


@dataclass
class DeviceShares:
    device: str
    shares: dict[str, float]
    busy: float  # any device activity / step time
    collective_total: float  # collective time incl. the part hidden under compute / step time
    transfer_total: float


@dataclass
class Breakdown:
    shares: dict[str, float]
    steps_analyzed: int
    step_time_us: float  # median profiled step
    devices: list[DeviceShares] = field(default_factory=list)
    per_step: list[dict[str, float]] = field(default_factory=list)  # mean over devices
    step_durations_us: list[float] = field(default_factory=list)
    # per device, per step: (step time - exposed sync); for straggler detection
    work_us: dict[str, list[float]] = field(default_factory=dict)


def empty_shares() -> dict[str, float]:
    return dict.fromkeys(CATEGORIES, 0.0)


def _len(iv: Intervals) -> float:
    return float(np.sum(iv.ends - iv.starts)) if len(iv) else 0.0


def profiled_steps(tl: Timeline) -> np.ndarray:
    """Indices of steps inside the profiled window that overlap device activity."""
    st = tl.steps
    if not len(st) or not tl.has_device_activity():
        return np.zeros(0, dtype=np.int64)
    spans = [iv.span() for iv in tl.activity.values() if len(iv)]
    lo = min(s[0] for s in spans if s)
    hi = max(s[1] for s in spans if s)
    mask = st.profiled & (st.end > lo) & (st.start < hi)
    return np.nonzero(mask)[0]


def step_breakdown(tl: Timeline) -> Breakdown:
    idx = profiled_steps(tl)
    devices = tl.devices
    if not idx.size or not devices:
        return Breakdown(shares=empty_shares(), steps_analyzed=0, step_time_us=0.0)
    starts = tl.steps.start[idx]
    ends = tl.steps.end[idx]
    durations = ends - starts
    per_dev_step: dict[str, np.ndarray] = {}
    dev_totals: list[DeviceShares] = []
    waits = tl.input_wait.merged()
    work: dict[str, list[float]] = {}
    for device in devices:
        compute = tl.device_activity(device, Kind.COMPUTE).merged()
        coll = tl.device_activity(device, Kind.COLLECTIVE).merged()
        transfer = union_many([tl.device_activity(device, k) for k in TRANSFER_KINDS])
        rows = np.zeros((idx.size, len(CATEGORIES)))
        coll_tot = transfer_tot = 0.0
        for r, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            c = compute.clip(s, e)
            k = coll.clip(s, e)
            t = transfer.clip(s, e)
            c_len = _len(c)
            k_exposed = subtract(k, c)
            ck = union_many([c, k])
            t_exposed = subtract(t, ck)
            busy = union_many([ck, t])
            inp = subtract(waits.clip(s, e), busy) if len(waits) else Intervals()
            length = e - s
            vals = [_len(inp), _len(t_exposed), c_len, _len(k_exposed)]
            vals.append(max(0.0, length - sum(vals)))
            rows[r] = np.asarray(vals) / length
            coll_tot += _len(k)
            transfer_tot += _len(t)
            work.setdefault(device, []).append(length - vals[3])
        per_dev_step[device] = rows
        weights = durations / durations.sum()
        shares = dict(zip(CATEGORIES, (rows * weights[:, None]).sum(axis=0).tolist(), strict=True))
        dev_totals.append(
            DeviceShares(
                device=device,
                shares=shares,
                busy=1.0 - shares["input"] - shares["other"],
                collective_total=coll_tot / float(durations.sum()),
                transfer_total=transfer_tot / float(durations.sum()),
            )
        )
    mean_rows = np.mean(np.stack(list(per_dev_step.values())), axis=0)
    shares = {c: float(np.mean([d.shares[c] for d in dev_totals])) for c in CATEGORIES}
    return Breakdown(
        shares=normalised(shares),
        steps_analyzed=int(idx.size),
        step_time_us=float(np.median(durations)),
        devices=dev_totals,
        per_step=[dict(zip(CATEGORIES, row.tolist(), strict=True)) for row in mean_rows],
        step_durations_us=durations.tolist(),
        work_us=work,
    )


def normalised(shares: dict[str, float]) -> dict[str, float]:
    """Round-off safe: shares are non-negative and sum to exactly 1."""
    clean = {k: max(0.0, float(v)) for k, v in shares.items()}
    total = sum(clean.values())
    if total <= 0:
        return {**empty_shares(), "other": 1.0}
    return {k: v / total for k, v in clean.items()}


def merge_breakdowns(parts: list[Breakdown]) -> dict[str, float]:
    """Mean shares over ranks that have analyzed steps."""
    used = [p for p in parts if p.steps_analyzed]
    if not used:
        return empty_shares()
    return normalised({c: float(np.mean([p.shares[c] for p in used])) for c in CATEGORIES})
