"""Readers' interval sinks: compact, lossless while they can be, then a bounded time prefix."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpudiag.cli import main
from gpudiag.trace.model.sink import (
    LIMIT_ENV,
    MAX_KEYS,
    IntervalBudget,
    SinkTable,
    Totals,
    interval_limit,
    share_of_limit,
)
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline, union_of
from tests.helpers.synth import periodic, record_profiled


def test_overlapping_intervals_are_merged_not_cut():
    """Kernels overlapping on several streams: the union fits the bound, nothing is lost."""
    budget = IntervalBudget(limit=1000)
    sink = budget.sink()
    rng = np.random.default_rng(3)
    for i in rng.permutation(5000):
        sink.add(float(i), float(i) + 10.0)
    assert not budget.cut
    assert budget.held <= 1000
    union = union_of(*sink.arrays())
    assert union.starts.tolist() == [0.0] and union.ends.tolist() == [5009.0]


def test_past_the_bound_a_complete_time_prefix_is_kept():
    """Disjoint kernels and steps arriving out of order: what is held is everything that
    starts before one cutoff, in every sink, and steps cut in two are dropped."""
    budget = IntervalBudget(limit=1000)
    kernels = budget.sink()
    steps = budget.sink(mergeable=False, columns="q")
    n = 3000
    rng = np.random.default_rng(5)
    events = [("k", i) for i in range(n)] + [("s", i) for i in range(n)]
    for j in rng.permutation(len(events)):
        what, i = events[j]
        t = 10.0 * i
        if what == "k":
            kernels.add(t + 2.0, t + 6.0)
        else:
            steps.add(t, t + 10.0, i)
        assert budget.held <= budget.limit
    assert budget.cut
    cutoff = budget.cutoff
    ks, _ = kernels.arrays()
    want = np.array([10.0 * i + 2.0 for i in range(n) if 10.0 * i + 2.0 < cutoff])
    assert np.array_equal(np.sort(ks), want)  # complete before the cutoff, nothing after
    assert budget.refused == 2 * n - len(kernels) - len(steps)

    tl = Timeline(meta=Metadata(producer="test"))
    ss, se = steps.arrays()
    tl.add_steps(steps.column(0).astype(np.int64), ss, se)
    tl.add_activity("GPU 0", Kind.COMPUTE, *kernels.arrays())
    budget.finish(tl)
    assert np.all(tl.steps.end <= cutoff)
    assert len(tl.steps) == int(cutoff // 10.0)  # every whole step before the cutoff
    assert any("memory bound" in lim for lim in tl.meta.limitations)


def test_tables_of_names_stay_bounded():
    budget = IntervalBudget(limit=10_000_000)
    table: SinkTable[str] = SinkTable(budget)
    for i in range(MAX_KEYS + 10):
        table.add(f"marker {i}", 0.0, 1.0)
    assert len(table.sinks) == MAX_KEYS and table.overflow == 10
    totals = Totals()
    for i in range(MAX_KEYS + 10):
        totals.add(f"wait {i}", 1.0)
    assert len(totals) == MAX_KEYS + 1 and totals["other"] == 10.0


def _write_run(path, steps: int, rank: int | None = None) -> None:
    tl = periodic(steps=steps, input_frac=0.35, compute_frac=0.5)
    for i in range(steps):  # kernels on a second stream overlap the first: mergeable
        t = i * 1000.0 + 400.0
        tl.add_activity("GPU 0", Kind.COMPUTE, [t], [t + 300.0])
    meta = Metadata(producer="gpudiag", devices=["GPU 0"])
    if rank is not None:
        meta.rank, meta.world_size, meta.run_id = rank, 3, "run-a"
    record_profiled(path, tl, meta)  # a profiled window over the whole run: every kernel


def test_analyze_past_the_bound_gives_the_same_verdict_and_says_what_it_read(
    tmp_path, capsys, monkeypatch
):
    path = tmp_path / "big.gpudiag.json"
    _write_run(path, steps=3000)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert main(["analyze", str(path), "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert not any("memory bound" in lim for lim in whole["limitations"])

    assert main(["analyze", str(path), "--json", "--max-intervals", "2000"]) == 0
    part = json.loads(capsys.readouterr().out)
    assert part["verdict"] == whole["verdict"] == "data-starved"
    assert part["breakdown"]["input"] == pytest.approx(whole["breakdown"]["input"], abs=0.02)
    assert part["steps"]["analyzed"] < whole["steps"]["analyzed"]
    said = [lim for lim in part["limitations"] if "memory bound" in lim]
    assert len(said) == 1 and "--max-intervals" in said[0]
    assert LIMIT_ENV not in __import__("os").environ  # the flag does not leak


def test_max_intervals_flag_rejects_nonsense(tmp_path, capsys):
    path = tmp_path / "t.gpudiag.json"
    _write_run(path, steps=10)
    with pytest.raises(SystemExit) as e:
        main(["analyze", str(path), "--max-intervals", "ten"])
    assert e.value.code == 2
    assert "--max-intervals" in capsys.readouterr().err


def test_rank_files_of_one_run_share_the_bound(tmp_path, capsys, monkeypatch):
    """Hundreds of ranks must not hold hundreds of times the bound: each of N rank files
    holds 1/N of it (never less than 1,000 intervals)."""
    assert share_of_limit(1) == interval_limit()
    monkeypatch.setenv(LIMIT_ENV, "600000")
    assert share_of_limit(3) == 200_000 and share_of_limit(10**6) == 1000
    for r in range(3):
        _write_run(tmp_path / f"rank{r}.json", steps=1500, rank=r)
    monkeypatch.setenv(LIMIT_ENV, "30000")  # 10,000 per file: every rank fits
    assert main(["analyze", str(tmp_path), "--json", "--jobs", "1"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert not any("memory bound" in lim for lim in whole["limitations"])
    monkeypatch.setenv(LIMIT_ENV, "6000")  # alone, a file would fit; a third of it does not
    assert main(["analyze", str(tmp_path), "--json", "--jobs", "1"]) == 0
    part = json.loads(capsys.readouterr().out)
    assert any("memory bound (2,000)" in lim for lim in part["limitations"])
    assert part["verdict"] == whole["verdict"] == "data-starved"
    assert len(part["ranks"]) == len(whole["ranks"]) == 3
    for cut, full in zip(part["ranks"], whole["ranks"], strict=True):
        assert 0 < cut["steps"] < full["steps"] == 1500
