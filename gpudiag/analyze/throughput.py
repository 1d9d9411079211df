"""How fast the run went: batches over elapsed time in its steady part, cut into blocks of
consecutive steps for the interval a comparison puts on it. Pure.

A median step is not a speed. A PyDataset with worker processes delivers most batches at
once and some late (its steps are bimodal); a worker pool restarted at each epoch costs time
before the epoch's first step. What a user measures is samples over elapsed time, so:

* where the run recorded two or more whole epochs, the steady part is every whole epoch after
  the first (epoch 1 holds tracing, compilation and any cache fill), each epoch timed from its
  start to its end, so the time before its first step counts;
* otherwise it is the steps after warm-up (and after a cache-filling first epoch), timed from
  the first one's start to the last one's end, a stretch broken where steps were not recorded
  (the gap between two profiler windows of a trace);
* evaluation inside ``fit`` is left out: the figure is training batches per second of training.

Each stretch (an epoch, or a run of recorded steps) is cut at step starts into blocks of
``block_steps`` consecutive steps that together cover all of its time; a comparison resamples
stretches, then blocks within them (``work_ratio.py``).

    t = steady_throughput(records, phase, epoch_spans, evaluation_spans)
    t["batches"] / t["seconds"]     # batches per second of the steady part
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from gpudiag.analyze.step_times import StepRecords

# Fewer steady steps than this: blocks of one step (a block bootstrap needs blocks to resample;
# below this the steps themselves are the units). From there, blocks of about n^(1/3) steps,
# the usual order of a block bootstrap's block length: long enough to hold a worker pool's
# burst, short enough to leave many blocks.
SINGLE_STEP_BLOCKS_BELOW = 20
# The blocks kept per run (adjacent ones merged beyond): bounds the diagnosis's size and a
# comparison's work, and is far more than an interval's width needs.
MAX_BLOCKS = 256
# A gap between two recorded steps longer than this many median steps (and than
# ``GAP_MIN_US``) is time the trace did not record steps in, not a slow step.
GAP_STEPS = 20.0
GAP_MIN_US = 50_000.0
STEADY_PHASES = ("steady", "slowdown")  # a late slowdown is the run's own time: it counts


# Stretches kept per run: beyond, consecutive epochs are grouped into this many (a bootstrap
# over 32 groups of epochs resolves epoch-to-epoch spread as well as over hundreds).
MAX_STRETCHES = 32


def block_steps(n: int, stretches: int = 1) -> int:
    """Steps per block for a steady part of ``n`` steps in ``stretches`` stretches: the
    blocks stay at most ``MAX_BLOCKS`` however the steps fall into stretches."""
    if n < SINGLE_STEP_BLOCKS_BELOW:
        return 1
    room = max(1, MAX_BLOCKS - stretches)
    return max(math.ceil(n ** (1 / 3)), math.ceil(n / room))


def _overlap(a: float, b: float, spans: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(b, e) - max(a, s)) for s, e in spans)


def _blocks(
    starts: np.ndarray,
    batches: np.ndarray,
    lo: float,
    hi: float,
    per_block: int,
    evals: list[tuple[float, float]],
) -> list[tuple[float, float]]:
    """(batches, seconds) of each block of one stretch [lo, hi], cut at step starts."""
    out = []
    for i in range(0, starts.size, per_block):
        a = lo if i == 0 else float(starts[i])
        j = i + per_block
        b = hi if j >= starts.size else float(starts[j])
        seconds = (b - a - _overlap(a, b, evals)) / 1e6
        out.append((float(batches[i:j].sum()), max(0.0, seconds)))
    return out


def _epoch_stretches(
    r: StepRecords, epochs: list[tuple[float, float]]
) -> list[tuple[np.ndarray, float, float]]:
    """Record indices, start and end of each whole epoch after the first that holds steps."""
    out = []
    for s, e in epochs[1:]:
        idx = np.nonzero((r.start >= s) & (r.start < e))[0]
        if idx.size:
            out.append((idx, s, e))
    return out


def _step_stretches(r: StepRecords, phase: np.ndarray) -> list[tuple[np.ndarray, float, float]]:
    """Runs of steady records, broken where the trace holds no steps for a long while."""
    idx = np.nonzero(np.isin(phase, STEADY_PHASES))[0]
    if not idx.size:
        return []
    typical = float(np.median(r.per_batch[idx]))
    gap = np.maximum(r.start[idx[1:]] - r.end[idx[:-1]], 0.0)
    cut = np.nonzero((gap > max(GAP_MIN_US, GAP_STEPS * typical)) | (np.diff(idx) > 1))[0]
    parts = np.split(idx, cut + 1)
    return [(p, float(r.start[p[0]]), float(r.end[p[-1]])) for p in parts if p.size]


def _grouped(
    stretches: list[tuple[np.ndarray, float, float]],
) -> list[tuple[np.ndarray, float, float, list[tuple[float, float]]]]:
    """At most ``MAX_STRETCHES`` groups of consecutive stretches, each with the gaps between
    its stretches (time that is no stretch's, left out of its blocks)."""
    size = math.ceil(len(stretches) / MAX_STRETCHES)
    out = []
    for i in range(0, len(stretches), size):
        part = stretches[i : i + size]
        idx = np.concatenate([p[0] for p in part])
        gaps = [(a[2], b[1]) for a, b in itertools.pairwise(part) if b[1] > a[2]]
        out.append((idx, part[0][1], part[-1][2], gaps))
    return out


def steady_throughput(
    r: StepRecords,
    phase: np.ndarray,
    epochs: list[tuple[float, float]],
    evals: list[tuple[float, float]],
) -> dict[str, Any] | None:
    """Batches and seconds of the run's steady part with its blocks; None without steps.

    ``phase``: each record's phase (phases.py); ``epochs``/``evals``: the epoch and
    evaluation spans the trace recorded (µs)."""
    whole = sorted(epochs)
    stretches = _epoch_stretches(r, whole) if len(whole) >= 2 else []
    basis = "epochs"
    if not stretches:
        stretches, basis = _step_stretches(r, phase), "steps"
    if not stretches:
        return None
    n = sum(int(idx.size) for idx, _, _ in stretches)
    groups = _grouped(stretches)
    per_block = block_steps(n, len(groups))
    blocks: list[list[float]] = []
    for k, (idx, lo, hi, gaps) in enumerate(groups):
        for b, s in _blocks(r.start[idx], r.batches[idx], lo, hi, per_block, evals + gaps):
            blocks.append([k, b, round(s, 6)])
    batches = sum(b[1] for b in blocks)
    seconds = sum(b[2] for b in blocks)
    if batches <= 0 or seconds <= 0:
        return None
    if basis == "epochs":
        what = f"epochs 2–{len(whole)}" if len(whole) > 2 else "epoch 2"
    else:
        after = np.isin(phase, ("warm-up", "cache-fill")).any()
        what = ("the steps after warm-up" if after else "the recorded steps") + (
            f", in {len(stretches)} stretches of recorded steps" if len(stretches) > 1 else ""
        )
    return {
        "basis": basis,
        "over": what,
        "batches": round(batches),
        "seconds": round(seconds, 6),
        "ms_per_batch": round(1000.0 * seconds / batches, 4),
        "stretches": len(groups),
        "block_steps": per_block,
        "blocks": blocks,
    }
