"""The interval of a step-time ratio and what a change is attributed to (pure functions)."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze.attribution import config_changes, remedy_status
from gpudiag.analyze.step_ratio import MAX_STEPS, epoch_medians, evenly, step_ratio


def _noisy(median: float, n: int, spread: float, seed: int) -> np.ndarray:
    return median * np.exp(np.random.default_rng(seed).normal(0.0, spread, n))


def test_same_distribution_is_not_measurable():
    r = step_ratio(_noisy(100, 200, 0.1, 1), _noisy(100, 200, 0.1, 2))
    assert r is not None and not r.measurable
    assert r.low < 1.0 < r.high and r.ratio == pytest.approx(1.0, abs=0.03)


def test_a_real_shift_is_measurable_and_estimated():
    r = step_ratio(_noisy(100, 200, 0.1, 1), _noisy(80, 200, 0.1, 2))
    assert r is not None and r.measurable and r.high < 1.0
    assert r.ratio == pytest.approx(0.8, abs=0.03)


def test_few_steps_give_a_wide_interval():
    few = step_ratio(_noisy(100, 5, 0.2, 1), _noisy(90, 5, 0.2, 2))
    many = step_ratio(_noisy(100, 200, 0.2, 1), _noisy(90, 200, 0.2, 2))
    assert few is not None and many is not None
    assert few.high - few.low > 2 * (many.high - many.low)


def test_a_slow_phase_widens_the_interval():
    """BASE's epochs 4-5 ran 40% slower (another job): the epoch medians say so."""
    base, new = _noisy(100, 200, 0.05, 1), _noisy(100, 200, 0.05, 2)
    steps_only = step_ratio(base, new)
    phased = step_ratio(base, new, [100, 100, 100, 140, 140], [100, 101, 99, 100, 100])
    assert steps_only is not None and phased is not None
    assert phased.basis == "steps and epochs" and phased.low < steps_only.low - 0.2


def test_per_sample_scaling():
    r = step_ratio([1.0] * 50, [3.8] * 50)
    assert r is not None
    per_sample = r.scaled(32 / 128)  # 4x the batch in a 3.8x longer step
    assert per_sample.ratio == pytest.approx(0.95, abs=0.01) and per_sample.measurable


def test_even_subsample_keeps_every_phase():
    values = np.concatenate([np.full(1000, 1.0), np.full(1000, 2.0)])
    kept = evenly(values)
    assert kept.size == MAX_STEPS and set(np.unique(kept)) == {1.0, 2.0}


def test_epoch_medians_skip_short_epochs():
    run = {"epochs": [{"steps": 3, "median_ms": 9.0}, {"steps": 50, "median_ms": 2.0}]}
    assert epoch_medians(run) == [2.0]


def test_changes_are_fields_both_runs_recorded():
    changes = config_changes(
        {"global_batch": 32, "replicas": 2, "prefetch": True}, {"global_batch": 128, "replicas": 2}
    )
    assert [str(c) for c in changes] == ["global_batch 32 → 128"]


@pytest.mark.parametrize(
    "title, base, new, status",
    [
        # dropping the strategy is not "more work per all-reduce"
        (
            "Give each replica more work per all-reduce",
            {"global_batch": 64, "replicas": 2},
            {"global_batch": 64, "replicas": 1},
            "not applied",
        ),
        (
            "Give each replica more work per all-reduce",
            {"global_batch": 64, "replicas": 2},
            {"global_batch": 256, "replicas": 2},
            "applied",
        ),
        ("Train with a 4× bigger batch", {"global_batch": 32}, {"global_batch": 128}, "applied"),
        (
            "Parallelise the tf.data map",
            {"sequential_maps": 1, "parallel_maps": 0},
            {"sequential_maps": 0, "parallel_maps": 1},
            "applied",
        ),
        (
            "Parallelise the tf.data map",
            {"sequential_maps": 1},
            {"sequential_maps": 1},
            "not applied",
        ),
        ("Prefetch so input overlaps compute", {"prefetch": False}, {}, "unknown"),
        (
            "Load data in worker processes",
            {"use_multiprocessing": False},
            {"use_multiprocessing": True},
            "applied",
        ),
        ("Compile the model with XLA", {"jit_compile": False}, {"jit_compile": True}, "applied"),
        ("Free the CPU from other processes", {}, {}, "unknown"),
    ],
)
def test_remedy_status_from_the_configurations(title, base, new, status):
    assert remedy_status(title, base, new)[0] == status
