"""The work-per-second ratio of two runs and its interval, the shape of a step distribution,
and what a change is attributed to (pure functions)."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze.attribution import config_changes, remedy_status
from gpudiag.analyze.step_modes import bimodal
from gpudiag.analyze.step_times import MAX_STEPS, StepRecords, evenly
from gpudiag.analyze.throughput import block_steps, steady_throughput
from gpudiag.analyze.work_ratio import widening, work_ratio


def _run(
    step_ms: list[float] | np.ndarray,
    epochs: int = 1,
    lead_ms: float = 0.0,
    warmup: int = 0,
    gap_ms: float = 0.0,
) -> dict:
    """The steady part of a run whose steps took ``step_ms``, cut into ``epochs`` epochs
    that each spend ``lead_ms`` before their first step; the first ``warmup`` steps are
    warm-up (no epochs: steps mode)."""
    ms = np.asarray(step_ms, dtype=np.float64)
    per = np.array_split(np.arange(ms.size), epochs)
    starts, ends, spans, t = [], [], [], 0.0
    for idx in per:
        t0 = t
        t += lead_ms * 1000
        for i in idx:
            starts.append(t)
            t += ms[i] * 1000
            ends.append(t)
        spans.append((t0, t))
        t += gap_ms * 1000
    n = ms.size
    r = StepRecords(np.array(starts), np.array(ends), np.ones(n), ms * 1000)
    phase = np.array(["warm-up"] * warmup + ["steady"] * (n - warmup), dtype=object)
    out = steady_throughput(r, phase, spans if epochs > 1 else [], [])
    assert out is not None
    return out


def _noisy(mean: float, n: int, spread: float, seed: int) -> np.ndarray:
    return mean * np.exp(np.random.default_rng(seed).normal(0.0, spread, n))


def test_the_same_speed_is_not_measurable():
    r = work_ratio(_run(_noisy(10, 200, 0.3, 1)), _run(_noisy(10, 200, 0.3, 2)))
    assert r is not None and not r.measurable
    assert r.low < 1.0 < r.high and r.ratio == pytest.approx(1.0, abs=0.06)


def test_a_real_change_is_measured_as_totals_over_time():
    base, new = _noisy(10, 200, 0.2, 1), _noisy(8, 200, 0.2, 2)
    r = work_ratio(_run(base), _run(new))
    assert r is not None and r.measurable and r.high < 1.0
    assert r.ratio == pytest.approx(new.sum() / base.sum(), rel=1e-6)


def test_a_worker_pool_in_bursts_is_judged_by_throughput_not_its_median():
    """NEW: most steps instant, every fourth waits long (a pool delivering in bursts): its
    median is a third of BASE's step, yet the steps add up to more time."""
    base = _noisy(12, 200, 0.05, 1)
    new = np.tile([3.0, 3.0, 3.0, 45.0], 50) * _noisy(1, 200, 0.05, 2)
    assert np.median(new) < 0.3 * np.median(base)
    r = work_ratio(_run(base, epochs=4), _run(new, epochs=4))
    assert r is not None and r.ratio == pytest.approx(new[50:].sum() / base[50:].sum(), rel=0.02)
    assert r.ratio > 1.0  # NEW is slower per batch, as its wall clock says
    modes = bimodal(new)
    assert modes is not None and modes["slow_share"] == pytest.approx(0.25, abs=0.02)
    assert bimodal(base) is None


def test_time_before_each_epochs_first_step_counts():
    """A worker pool restarted at each epoch: 300 ms before every epoch's first step."""
    steps = _noisy(5, 200, 0.05, 1)
    quiet, restarting = _run(steps, epochs=4), _run(steps, epochs=4, lead_ms=300)
    assert restarting["seconds"] == pytest.approx(quiet["seconds"] + 3 * 0.3, rel=1e-6)
    r = work_ratio(quiet, restarting)
    assert r is not None and r.measurable and r.ratio > 1.5


def test_only_whole_epochs_after_the_first_count():
    t = _run([50.0] * 10 + [5.0] * 30, epochs=4)  # epoch 1: compiling, filling a cache
    assert t["basis"] == "epochs" and t["batches"] == 30 and t["over"] == "epochs 2–4"
    assert t["seconds"] == pytest.approx(0.15)


def test_steps_mode_leaves_out_warm_up_and_unrecorded_gaps():
    t = _run([500.0] + [5.0] * 40, warmup=1)
    assert t["basis"] == "steps" and t["batches"] == 40
    assert t["seconds"] == pytest.approx(0.2)


def test_a_slow_phase_of_one_run_widens_the_interval():
    """BASE's last epochs ran 40% slower (another job): the epochs are resampled."""
    base = np.concatenate([_noisy(10, 150, 0.05, 1), _noisy(14, 100, 0.05, 3)])
    steady = work_ratio(_run(_noisy(10, 250, 0.05, 2), epochs=5), _run(base[::-1], epochs=1))
    phased = work_ratio(_run(_noisy(10, 250, 0.05, 2), epochs=5), _run(base, epochs=5))
    assert steady is not None and phased is not None
    assert phased.high - phased.low > 2 * (steady.high - steady.low)


def test_few_steps_give_a_wide_interval():
    few = work_ratio(_run(_noisy(100, 6, 0.2, 1)), _run(_noisy(90, 6, 0.2, 2)))
    many = work_ratio(_run(_noisy(100, 200, 0.2, 1)), _run(_noisy(90, 200, 0.2, 2)))
    assert few is not None and many is not None
    assert few.high / few.low > 2 * (many.high / many.low - 1) + 1
    assert widening(6) > 1.3 and widening(30) == 1.0


def test_blocks_grow_with_the_run_and_stay_bounded():
    assert block_steps(10) == 1 and block_steps(64) == 4
    t = _run(_noisy(5, 100_000, 0.1, 1))
    assert len(t["blocks"]) <= 256 and t["batches"] == 100_000


def test_per_sample_scaling():
    r = work_ratio(_run([1.0] * 50), _run([3.8] * 50))
    assert r is not None
    per_sample = r.scaled(32 / 128)  # 4x the batch in a 3.8x longer step
    assert per_sample.ratio == pytest.approx(0.95, abs=0.01) and per_sample.measurable


def test_even_subsample_keeps_every_phase():
    values = np.concatenate([np.full(1000, 1.0), np.full(1000, 2.0)])
    kept = evenly(values)
    assert kept.size == MAX_STEPS and set(np.unique(kept)) == {1.0, 2.0}


def test_a_tail_or_a_backends_instant_steps_are_not_two_groups():
    tail = np.concatenate([_noisy(5, 92, 0.1, 1), [300.0] * 8])  # epoch starts, window stops
    instant = np.concatenate([_noisy(7, 85, 0.1, 2), [0.1] * 15])  # JAX closing queued steps
    assert bimodal(tail) is None and bimodal(instant) is None


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
        # a generator (or a tf.data py_function) replaced by a PyDataset with worker
        # processes: the configuration as it is shows the remedy applied
        (
            "Run the Python input in 2 worker processes",
            {"input_kind": "generator"},
            {"input_kind": "pydataset", "workers": 2, "use_multiprocessing": True},
            "applied",
        ),
        (
            "Run the Python input in 2 worker processes",
            {"input_kind": "tf.data", "python_ops": True},
            {"input_kind": "pydataset", "workers": 2, "use_multiprocessing": True},
            "applied",
        ),
        (
            "Run the Python input in 2 worker processes",
            {"input_kind": "generator"},
            {"input_kind": "pydataset", "workers": 1, "use_multiprocessing": False},
            "not applied",
        ),
        ("Compile the model with XLA", {"jit_compile": False}, {"jit_compile": True}, "applied"),
        ("Free the CPU from other processes", {}, {}, "unknown"),
    ],
)
def test_remedy_status_from_the_configurations(title, base, new, status):
    assert remedy_status(title, base, new)[0] == status


def test_many_epochs_are_grouped_and_the_blocks_stay_bounded():
    t = _run(_noisy(5, 5000, 0.1, 1), epochs=500)
    assert len(t["blocks"]) <= 256 and t["stretches"] <= 32 and t["batches"] == 4990


def test_the_workers_remedy_names_the_input_change_that_applied_it():
    status, note = remedy_status(
        "Run the Python input in 2 worker processes",
        {"input_kind": "generator", "global_batch": 32},
        {"input_kind": "pydataset", "workers": 2, "use_multiprocessing": True},
    )
    assert status == "applied"
    assert note == (
        "workers 1 → 2; use_multiprocessing false → true; input_kind generator → pydataset"
    )


def test_a_single_step_is_no_speed():
    """One step has no spread to put an interval on: no figure, said why (a 1-step trace
    compared with another is not 'measurably' anything)."""
    from gpudiag.analyze import diagnose
    from gpudiag.analyze.compare import compare
    from gpudiag.trace.load import load_file
    from tests.helpers.paths import SAMPLES

    one = diagnose(load_file(str(SAMPLES / "cpu_only_rank34.json.gz")))
    c = compare(one, one)
    assert c.work is None and c.unmeasured == (
        "BASE has a single steady step, so its speed cannot be measured"
    )
    assert c.step_time_ratio == 1.0  # the median is still a fact
