"""Straggler by arrival order at the collectives: synthetic ranks with a known straggler,
known clock offsets and known noise, on both sides of every threshold."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.arrival import CALLBACK, PROFILED, RankTiming, find_waited_for
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline

STEP_US = 10_000.0


def synced_ranks(
    n: int,
    steps: int,
    slow_rank: int | None = None,
    extra_us: float = 0.0,
    jitter_us: float = 0.0,
    offsets_us: list[float] | None = None,
    seed: int = 0,
    profiled: bool = True,
) -> list[Timeline]:
    """``n`` ranks in lock step: each computes, then all-reduces; the all-reduce ends when
    the last rank has arrived plus 1 ms of transfer. Each rank's clock is off by its offset.
    With ``profiled=False`` only the callback's view remains: steps with the train-function
    call, and the straggler's extra time spent outside the call (another callback)."""
    rng = np.random.default_rng(seed)
    offsets = offsets_us or [0.0] * n
    tls = [Timeline(meta=Metadata(producer="synthetic", rank=r, world_size=n)) for r in range(n)]
    t = 0.0
    rows: list[list[tuple[float, float, float, float]]] = [[] for _ in range(n)]
    for _ in range(steps):
        outside = [extra_us if (r == slow_rank and not profiled) else 0.0 for r in range(n)]
        compute = [
            6000.0
            + rng.uniform(0, jitter_us)
            + (extra_us if (r == slow_rank and profiled) else 0.0)
            for r in range(n)
        ]
        call_start = [t + outside[r] for r in range(n)]
        arrive = [call_start[r] + compute[r] for r in range(n)]
        done = max(arrive) + 1000.0
        for r in range(n):
            o = offsets[r]
            if profiled:
                tls[r].add_activity("GPU 0", Kind.COMPUTE, [call_start[r] + o], [arrive[r] + o])
                tls[r].add_activity("GPU 0", Kind.COLLECTIVE, [arrive[r] + o], [done + o])
            rows[r].append((t + o, done + 200.0 + o, call_start[r] + o, done + o))
        t = done + 300.0
    for r, tl in enumerate(tls):
        tl.add_steps(
            range(steps),
            [x[0] for x in rows[r]],
            [x[1] for x in rows[r]],
            profiled=profiled,
            calls=[(x[2], x[3]) for x in rows[r]],
        )
        tl.freeze()
    return tls


def _find(tls: list[Timeline]):
    return find_waited_for([RankTiming.of(tl, f"rank {i}") for i, tl in enumerate(tls)])


def test_one_profiled_step_of_eight_ranks_names_the_one_they_wait_for():
    # clocks off by up to 40 ms: wall clocks would order the ranks wrongly
    offsets = [0.0, 40_000.0, -25_000.0, 3_000.0, -40_000.0, 12_000.0, 7_000.0, -1_000.0]
    tls = synced_ranks(
        8, steps=1, slow_rank=5, extra_us=4000.0, jitter_us=300.0, offsets_us=offsets
    )
    finding, table, signal = _find(tls)
    assert signal == PROFILED
    assert finding is not None and finding.evidence["straggler"] == "rank 5"
    assert finding.evidence["steps_compared"] == 1
    # the others waited ~4 ms for it; it waited least
    waits = {row.label: row.wait_ms for row in table}
    assert waits["rank 5"] == 0.0
    assert all(3.5 <= w <= 4.5 for label, w in waits.items() if label != "rank 5")
    # offsets recovered from the collective ends, not from wall clocks
    for row, off in zip(table, offsets, strict=True):
        assert row.clock_offset_ms == pytest.approx(off / 1000.0, abs=0.01)


def test_the_longest_step_is_not_the_answer():
    """All ranks have the same step; only arrival order tells who is waited for."""
    tls = synced_ranks(4, steps=1, slow_rank=2, extra_us=5000.0)
    durations = [float(tl.steps.durations[0]) for tl in tls]
    assert max(durations) - min(durations) < 1.0
    finding, _, _ = _find(tls)
    assert finding is not None and finding.evidence["straggler"] == "rank 2"


@pytest.mark.parametrize("seed", range(40))
def test_noise_alone_names_nobody(seed):
    # 5 steps, every rank jittering by up to 11% of a step (what two identical CPU workers
    # showed): the per-step "slowest" changes, the loss stays small
    tls = synced_ranks(2 + seed % 7, steps=5, jitter_us=0.11 * STEP_US, seed=seed)
    finding, table, _ = _find(tls)
    assert finding is None
    assert len(table) == len(tls)


def test_threshold_both_sides():
    step = 6000.0 + 1000.0 + 500.0
    below = (T.STRAGGLER_WAIT_SHARE - 0.05) * step
    above = (T.STRAGGLER_WAIT_SHARE + 0.10) * step
    assert _find(synced_ranks(3, steps=4, slow_rank=1, extra_us=below))[0] is None
    f = _find(synced_ranks(3, steps=4, slow_rank=1, extra_us=above))[0]
    assert f is not None and f.evidence["straggler"] == "rank 1"


def test_callback_timing_alone_finds_a_rank_slowed_outside_the_step():
    # no profile: the straggler spends 8 ms in another callback each step, outside the call
    tls = synced_ranks(
        2,
        steps=12,
        slow_rank=1,
        extra_us=8000.0,
        jitter_us=300.0,
        offsets_us=[0.0, 2_500_000.0],
        profiled=False,
    )
    finding, table, signal = _find(tls)
    assert signal == CALLBACK
    assert finding is not None and finding.evidence["straggler"] == "rank 1"
    assert finding.evidence["signal"] == CALLBACK
    assert table[0].wait_ms == pytest.approx(8.0, abs=0.5)


def test_callback_timing_needs_a_few_steps():
    tls = synced_ranks(
        2, steps=T.STRAGGLER_MIN_STEPS - 1, slow_rank=1, extra_us=8000.0, profiled=False
    )
    assert _find(tls)[0] is None


def test_diagnose_fills_the_rank_table_and_names_the_straggler():
    tls = synced_ranks(4, steps=6, slow_rank=3, extra_us=5000.0, jitter_us=200.0)
    d = diagnose(tls)
    f = d.finding("straggler")
    assert f is not None and f.evidence["straggler"] == "rank 3"
    rows = {r.label: r for r in d.ranks}
    assert rows["rank 3"].wait_ms == 0.0
    assert rows["rank 0"].wait_ms == pytest.approx(5.0, abs=0.5)
    assert rows["rank 3"].work_ms > rows["rank 0"].work_ms
    assert "wait_ms" in d.to_dict()["ranks"][0]


def test_diagnose_control_names_nobody():
    d = diagnose(synced_ranks(4, steps=6, jitter_us=800.0, seed=3))
    assert d.finding("straggler") is None
