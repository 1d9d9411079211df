"""The worker pool Keras starts again every epoch, in the gain of a worker-process remedy. Pure.

Keras 3 starts a PyDataset's pool of worker processes at each epoch's start and stops it at
the epoch's end (``PyDatasetAdapter.on_epoch_begin`` / ``on_epoch_end``): the processes are
started again, the first batches are produced again, and the stop drains the queue until a
0.1 s ``get`` times out. Short epochs pay that every time: on an H100 a PyDataset with 8
worker processes over 40-batch epochs ran 0.40 s an epoch against 0.19–0.34 s with none
(sample_traces/h100_keras_jax). So a worker remedy's gain is judged per epoch::

    epoch now   = T + P(now)              (T: the steady steps of one epoch, measured)
    epoch after = T / g + P(n)            (g: the step gain; P: the pool's cost per epoch)

with ``P(n) = DRAIN_S + n × START_*_S`` (or the cost measured at this run's epoch starts when it
already runs worker processes). Where no worker count gains per epoch, the pool paid once
per fit (fewer, longer epochs) is proposed with it.

    n, gain, longer = choose(situation, n_max=8, have=1, gain_for=step_gain)
"""

from __future__ import annotations

from collections.abc import Callable

from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import Gain

DRAIN_S = 0.1  # OrderedEnqueuer.stop: the queue is drained until a get times out after 0.1 s
# starting (and joining) one worker process, with its first batch: (point, for the gain's low
# end, for its high end). Forking a process that holds a GPU context costs more: measured
# 0.033-0.058 s a worker on an H100 VM (JAX: 8 and 16 workers over 40- and 150-batch epochs),
# 0.005 s on the 2-core CPU VM (TensorFlow, fork): docs/remedies.md
START_GPU_S = (0.05, 0.08, 0.03)
START_CPU_S = (0.01, 0.03, 0.005)
WORTH = 1.1  # a per-epoch gain below this: the pool paid once per fit is proposed with it


def pool_s(n: int, per_worker: float) -> float:
    """A pool of ``n`` worker processes' cost per epoch."""
    return DRAIN_S + n * per_worker


def choose(
    s: Situation, n_max: int, have: int, gain_for: Callable[[int], Gain]
) -> tuple[int, Gain, bool]:
    """The worker count and its gain with the pool's start counted per epoch; True when the
    pool must be paid once per fit (one long epoch) to gain. Without a fit account (a foreign
    trace) the step gain stands."""
    acc = s.fit
    if acc is None or not acc.measured or acc.steady_epoch_s <= 0:
        return n_max, gain_for(n_max), False
    cfg = s.config
    running = cfg.use_multiprocessing and have > 1
    measured = sorted(acc.epoch_start_s)[len(acc.epoch_start_s) // 2] if acc.epoch_start_s else 0
    now = measured if running else 0.0
    per_worker = (measured - DRAIN_S) / have if running and measured > DRAIN_S else None
    counts = sorted(
        {k for k in (2, 4, 8, 16, 32, n_max) if 2 <= k <= n_max and (k > have or not running)}
    )
    if not counts:
        return n_max, gain_for(n_max), False
    best: tuple[float, int, Gain, bool] | None = None
    for once in (False, True):
        for k in counts:
            g = _per_epoch(
                gain_for(k), k, acc.steady_epoch_s, now, per_worker, acc.epochs, once, _start(s)
            )
            if best is None or g.point > best[0]:
                best = (g.point, k, g, once)
        if best is not None and best[0] >= WORTH:
            break
    assert best is not None
    return best[1], best[2], best[3]


def _start(s: Situation) -> tuple[float, float, float]:
    """A worker's start cost by what the training process holds (a GPU context or not)."""
    return START_CPU_S if s.cpu_device else START_GPU_S


def _per_epoch(
    g: Gain,
    n: int,
    epoch_s: float,
    now: float,
    per_worker: float | None,
    epochs: int,
    once: bool,
    start: tuple[float, float, float],
) -> Gain:
    spread = max(1, epochs) if once else 1

    def after(step_gain: float, start_s: float) -> float:
        cost = pool_s(n, per_worker if per_worker is not None else start_s) / spread
        return (epoch_s + now) / (epoch_s / step_gain + cost)

    point = after(g.point, start[0])
    low = after(g.low, start[1])
    high = after(g.high, start[2])
    cost = pool_s(n, per_worker if per_worker is not None else start[0])
    how = "measured at this run's epoch starts" if per_worker is not None else "estimated"
    when = f"once per fit of {epochs} epochs" if once else "again every epoch"
    return Gain.of(
        point,
        min(low, point),
        max(high, point),
        f"{g.basis}; with the pool Keras starts {when} ({cost:.2f} s, {how}) against "
        f"{epoch_s:.2f} s of steps an epoch",
    )
