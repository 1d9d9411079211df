"""Interval arithmetic and the Timeline model."""

from __future__ import annotations

import numpy as np

from gpudiag.trace.model.timeline import Intervals, Kind, Timeline, subtract, union_many, union_of


def test_union_merges_overlaps_and_nesting():
    u = union_of(np.array([0.0, 5.0, 2.0, 20.0]), np.array([10.0, 6.0, 12.0, 25.0]))
    assert u.starts.tolist() == [0.0, 20.0]
    assert u.ends.tolist() == [12.0, 25.0]
    assert u.total() == 17.0


def test_subtract_cuts_holes():
    a = Intervals([0.0, 50.0], [40.0, 60.0])
    b = Intervals([10.0, 30.0, 55.0], [20.0, 45.0, 70.0])
    d = subtract(a, b)
    assert list(zip(d.starts.tolist(), d.ends.tolist(), strict=True)) == [
        (0.0, 10.0),
        (20.0, 30.0),
        (50.0, 55.0),
    ]


def test_subtract_nothing_and_everything():
    a = Intervals([0.0], [10.0])
    assert subtract(a, Intervals()).total() == 10.0
    assert subtract(a, Intervals([-5.0], [15.0])).total() == 0.0


def test_clip_and_overlap():
    iv = Intervals([0.0, 10.0, 30.0], [5.0, 20.0, 40.0])
    assert iv.overlap_with(3.0, 35.0) == 2.0 + 10.0 + 5.0
    assert len(iv.clip(21.0, 29.0)) == 0


def test_union_many_empty():
    assert union_many([]).total() == 0.0


def test_timeline_freeze_sorts_steps_and_drops_empty():
    tl = Timeline()
    tl.add_steps([2, 1, 3], [200.0, 100.0, 300.0], [300.0, 200.0, 300.0])
    tl.add_activity("GPU 0", Kind.COMPUTE, [], [])
    tl.freeze()
    assert tl.steps.index.tolist() == [1, 2]  # zero-length step 3 dropped
    assert not tl.has_device_activity()


def _grid_cover(iv: Intervals, grid: np.ndarray) -> np.ndarray:
    """Reference: which unit cells [g, g+1) of an integer grid the intervals cover."""
    cover = np.zeros(grid.size, dtype=bool)
    for s, e in zip(iv.starts, iv.ends, strict=True):
        cover |= (grid >= s) & (grid + 1 <= e)
    return cover


def _random_intervals(rng: np.random.Generator, n: int) -> Intervals:
    starts = rng.integers(0, 200, n).astype(float)
    return Intervals(starts, starts + rng.integers(0, 30, n))


def test_subtract_and_covered_in_match_a_brute_force_reference():
    """Vectorized set arithmetic against cell-by-cell counting on integer intervals: ties,
    touching ends, nesting and zero-length intervals included."""
    rng = np.random.default_rng(7)
    grid = np.arange(-10, 260, dtype=float)
    for _ in range(200):
        a = _random_intervals(rng, int(rng.integers(0, 12)))
        b = _random_intervals(rng, int(rng.integers(0, 12)))
        d = subtract(a, b)
        expected = _grid_cover(a, grid) & ~_grid_cover(b, grid)
        assert np.array_equal(_grid_cover(d, grid), expected)
        assert d.total() == float(expected.sum())
        assert np.all(d.starts[1:] > d.ends[:-1])  # disjoint and not touching
        lo = rng.integers(-10, 240, 20).astype(float)
        hi = lo + rng.integers(0, 40, 20)
        got = a.covered_in(lo, hi)
        cover = _grid_cover(a, grid)
        want = [cover[(grid >= x) & (grid + 1 <= y)].sum() for x, y in zip(lo, hi, strict=True)]
        assert np.allclose(got, want)
