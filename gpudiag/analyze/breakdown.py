"""Where each step's time goes: input, transfer, compute, exposed sync, other. Pure.

Per device and step, in priority order so that every microsecond is counted once:
compute kernels; collectives not hidden under compute (exposed sync); copies (host<->device,
device-to-device, memsets, XLA async copies) hidden under neither; host input wait while the
device did nothing; the rest is "other" (host overhead, launch latency, idle). The five
shares sum to 1 by construction.

The run's shares are the mean over the devices that compute: a device that only copies
(a JAX process's spare GPU receiving a weight copy) would average an idle device into the
figures of the working one.

    b = step_breakdown(timeline)
    b.shares            # {"input": .38, "transfer": .01, "compute": .45, "sync": 0, "other": .16}
    b.per_step[0]       # same keys, first profiled step
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from gpudiag.analyze.compile_time import compiling_steps
from gpudiag.trace.model.timeline import (
    COPY_KINDS,
    TRANSFER_KINDS,
    Kind,
    Timeline,
    subtract,
    union_many,
)

CATEGORIES = ("input", "transfer", "compute", "sync", "other")


@dataclass
class DeviceShares:
    device: str
    shares: dict[str, float]
    busy: float  # any device activity / step time
    collective_total: float  # collective time incl. the part hidden under compute / step time
    transfer_total: float  # host<->device copies / step time
    host_transfer: float = 0.0  # host<->device copies hidden under nothing / step time
    computes: bool = True  # ran compute or collectives in the analyzed steps


@dataclass
class Breakdown:
    shares: dict[str, float]
    steps_analyzed: int
    step_time_us: float  # median profiled step
    devices: list[DeviceShares] = field(default_factory=list)
    # analyzed steps x CATEGORIES, mean over devices, in the order of ``profiled_steps``
    per_step: np.ndarray = field(default_factory=lambda: np.zeros((0, len(CATEGORIES))))
    step_durations_us: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # per device, per step: (step time - exposed sync); for straggler detection
    work_us: dict[str, np.ndarray] = field(default_factory=dict)
    # exposed host<->device copies (the rest of "transfer" is device-local copies)
    host_transfer: float = 0.0
    # share of step time measured as 'other' and counted as input wait (``python_fed``)
    other_as_input: float = 0.0


def python_fed(b: Breakdown) -> Breakdown:
    """The breakdown of a run Keras feeds from Python (a generator or PyDataset): the wait
    happens in Keras's Python iterator, not in a TF op, and lands in 'other', sometimes as
    input, sometimes not, from one window to the next (0–46% measured on the same run). There
    'other' is input wait: the sum is stable, the split is not (docs/method.md). Folded here,
    once, so the headline, the bar, each window, each rank and compare read one figure."""
    i, o = CATEGORIES.index("input"), CATEGORIES.index("other")
    rows = b.per_step.copy()
    if rows.size:
        rows[:, i] += rows[:, o]
        rows[:, o] = 0.0
    return replace(
        b,
        shares={**b.shares, "input": b.shares["input"] + b.shares["other"], "other": 0.0},
        per_step=rows,
        other_as_input=b.other_as_input + b.shares["other"],
    )


def empty_shares() -> dict[str, float]:
    return dict.fromkeys(CATEGORIES, 0.0)


def row_dicts(rows: np.ndarray, limit: int) -> list[dict[str, float]]:
    """The first ``limit`` per-step rows as {category: share} (what the views draw)."""
    return [dict(zip(CATEGORIES, row, strict=True)) for row in rows[:limit].tolist()]


def profiled_steps(tl: Timeline) -> np.ndarray:
    """Indices of steps inside the profiled window that overlap device activity, less the
    steps that compiled (their time is the compiler's, counted by compile_time.py, not
    host overhead of the step)."""
    st = tl.steps
    if not len(st) or not tl.has_device_activity():
        return np.zeros(0, dtype=np.int64)
    spans = [iv.span() for iv in tl.activity.values() if len(iv)]
    lo = min(s[0] for s in spans if s)
    hi = max(s[1] for s in spans if s)
    mask = st.profiled & (st.end > lo) & (st.start < hi)
    if len(tl.compiles):
        mask &= ~compiling_steps(tl)
    return np.nonzero(mask)[0]


def step_breakdown(tl: Timeline) -> Breakdown:
    """Shares per device and step, computed on whole-run interval sets (the exposed parts
    once per device, then one binary search per step boundary): linear in the trace, so a
    run of a million steps costs seconds, not a Python loop per step."""
    idx = profiled_steps(tl)
    devices = tl.devices
    if not idx.size or not devices:
        return Breakdown(shares=empty_shares(), steps_analyzed=0, step_time_us=0.0)
    starts = tl.steps.start[idx]
    ends = tl.steps.end[idx]
    durations = ends - starts
    weights = durations / durations.sum()
    # the per-step rows summed over the devices that compute and over all: held once, not
    # once per device (devices x steps rows took hundreds of MB on traces of many devices)
    rows_computing = np.zeros((idx.size, len(CATEGORIES)))
    rows_all = np.zeros((idx.size, len(CATEGORIES)))
    dev_totals: list[DeviceShares] = []
    waits = tl.input_wait.merged()
    work: dict[str, np.ndarray] = {}
    for device in devices:
        compute = tl.device_activity(device, Kind.COMPUTE).merged()
        coll = tl.device_activity(device, Kind.COLLECTIVE).merged()
        host = union_many([tl.device_activity(device, k) for k in TRANSFER_KINDS])
        transfer = union_many([tl.device_activity(device, k) for k in COPY_KINDS])
        ck = union_many([compute, coll])
        busy = union_many([ck, transfer])
        c_len = compute.covered_in(starts, ends)
        k_exposed = subtract(coll, compute).covered_in(starts, ends)
        t_exposed = subtract(transfer, ck).covered_in(starts, ends)
        ck_len = ck.covered_in(starts, ends)
        inp = subtract(waits, busy).covered_in(starts, ends) if len(waits) else np.zeros(idx.size)
        counted = np.stack([inp, t_exposed, c_len, k_exposed], axis=1)
        other = np.maximum(0.0, durations - counted.sum(axis=1))
        rows = np.column_stack([counted, other]) / durations[:, None]
        rows_all += rows
        computes = bool(ck_len.sum() > 0)
        if computes:
            rows_computing += rows
            work[device] = durations - k_exposed
        shares = dict(zip(CATEGORIES, (rows * weights[:, None]).sum(axis=0).tolist(), strict=True))
        total = float(durations.sum())
        dev_totals.append(
            DeviceShares(
                device=device,
                shares=shares,
                busy=1.0 - shares["input"] - shares["other"],
                collective_total=float(coll.covered_in(starts, ends).sum()) / total,
                transfer_total=float(host.covered_in(starts, ends).sum()) / total,
                host_transfer=float(subtract(host, ck).covered_in(starts, ends).sum()) / total,
                computes=computes,
            )
        )
    # the devices that compute stand for the run (all of them when none does)
    used = [i for i, d in enumerate(dev_totals) if d.computes] or list(range(len(dev_totals)))
    shares = {c: float(np.mean([dev_totals[i].shares[c] for i in used])) for c in CATEGORIES}
    return Breakdown(
        shares=normalised(shares),
        steps_analyzed=int(idx.size),
        step_time_us=float(np.median(durations)),
        devices=dev_totals,
        per_step=(rows_computing if any(d.computes for d in dev_totals) else rows_all) / len(used),
        step_durations_us=durations,
        work_us=work,
        host_transfer=float(np.mean([dev_totals[i].host_transfer for i in used])),
    )


def normalised(shares: dict[str, float]) -> dict[str, float]:
    """Round-off safe: shares are non-negative and sum to exactly 1."""
    clean = {k: max(0.0, float(v)) for k, v in shares.items()}
    total = sum(clean.values())
    if total <= 0:
        return {**empty_shares(), "other": 1.0}
    return {k: v / total for k, v in clean.items()}


def computes(b: Breakdown) -> bool:
    """Whether any device of the breakdown computed (or ran collectives) in its steps."""
    return any(d.computes for d in b.devices)


def merge_breakdowns(parts: list[Breakdown]) -> dict[str, float]:
    """Mean shares over ranks that have analyzed steps; ranks (or per-device timelines)
    whose devices only copied are left out when another one computes."""
    analyzed = [p for p in parts if p.steps_analyzed]
    used = [p for p in analyzed if computes(p)] or analyzed
    if not used:
        return empty_shares()
    return normalised({c: float(np.mean([p.shares[c] for p in used])) for c in CATEGORIES})
