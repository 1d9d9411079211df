"""A report that never contradicts itself or what it measured: gains within the CPU a
neighbour left, words that match the kind of input work, figures that read as written."""

from __future__ import annotations

import pytest

from gpudiag.analyze.gain import pipelined
from tests.analyze.test_remedies import NATIVE_SEQ, PARALLEL, run


def test_gain_capped_by_the_cpu_other_processes_hold():
    """Other processes held 53% of the 2 cores: a parallel map cannot get 1.67×, only the
    share of the cores its 2 busy threads win beside theirs (the scheduler shares the cores
    among busy threads: measured, the free cores alone under-predicted 1.52× as 1.06×)."""
    quiet = run(NATIVE_SEQ, {"cpu_total": 50.0, "cpu_process": 90.0}, input_frac=0.4)
    busy = run(
        NATIVE_SEQ,
        {"cpu_total": 98.0, "cpu_process": 90.0, "cpu_others": 53.0},
        input_frac=0.4,
    )
    assert "cpu-contention" in busy.finding_ids
    q = next(s for s in quiet.suggestions if s.title == PARALLEL)
    b = next(s for s in busy.suggestions if s.title == PARALLEL)
    assert q.expected_gain == pytest.approx(pipelined(0.4, 2), abs=0.01)
    # 2 threads beside 1.06 cores of theirs get 2 x 2 / 3.06 cores, over 0.9 in use: 1.45x
    share = 2 * 2 / (2 + 2 * 0.53) / 0.9
    assert b.expected_gain == pytest.approx(share, abs=0.01) and share < q.expected_gain
    # the high end is what the remedy gives without the neighbour
    assert (
        b.expected_gain_range[0] <= share and b.expected_gain_range[1] == q.expected_gain_range[1]
    )
    assert "other processes held 53%" in b.basis and b.basis.count("CPU-only run") == 1
    # the same remedies either way: only the promise changes
    assert [s.title for s in quiet.suggestions if s.finding != "cpu-contention"] == [
        s.title for s in busy.suggestions if s.finding not in ("cpu-contention",)
    ]


def test_waiting_python_is_not_said_to_hold_the_gil():
    """The demo's decode sleeps: the workers remedy must not claim threads cannot help while
    the parallel map beside it is offered, and no fractional worker count is printed."""
    waiting = {**NATIVE_SEQ, "python_ops": True}
    d = run(waiting, {"cpu_total": 30.0, "cpu_process": 25.0}, input_frac=0.6, compute_frac=0.3)
    by_title = {s.title: s for s in d.suggestions}
    assert PARALLEL in by_title
    workers = next(s for t, s in by_title.items() if "worker processes" in t)
    assert "holds the GIL" not in workers.detail and "threads run it in parallel" in workers.detail
    assert "mostly waits" in by_title[PARALLEL].detail
    assert "2 worker processes" in workers.basis and "2.3 workers" not in workers.basis


def test_pydataset_without_workers_is_said_to_run_inline():
    cfg = {"input_kind": "pydataset", "python_ops": True, "workers": 1, "root_prefetch": True}
    d = run(cfg, {"cpu_total": 60.0, "cpu_process": 120.0}, input_frac=0.5, compute_frac=0.3)
    detail = next(s.detail for s in d.suggestions if "worker processes" in s.title)
    assert "inline" in detail and "in threads" not in detail


def test_evidence_reads_as_written():
    from gpudiag.analyze.rules import partial_last_batch
    from gpudiag.show.units import evidence_item

    assert evidence_item("kernels_per_step", 900.0) == "kernels per step 900"
    assert evidence_item("kernels_per_step", 12.5) == "kernels per step 12.5"
    wait = evidence_item("waiting_in", {"IteratorGetNextOp::DoCompute": 0.42})
    assert wait.startswith("total wait over the profiled steps in")
    assert evidence_item("steps", 5) == "profiled steps 5"
    assert partial_last_batch._split(7, 2) == "3–4 each"
    assert partial_last_batch._split(6, 2) == "3 each"


def test_a_python_fed_run_shows_one_input_figure_everywhere():
    """Keras pulls PyDataset batches in Python: the wait lands in 'other'. The headline, the
    bar, the per-step strip, the rank table and compare must all read it as input wait."""
    from rich.console import Console

    from gpudiag.analyze.compare import compare
    from gpudiag.show.report import render_report

    cfg = {"input_kind": "pydataset", "python_ops": True, "workers": 1, "root_prefetch": True}
    d = run(cfg, {"cpu_total": 60.0, "cpu_process": 110.0}, input_frac=0.0, compute_frac=0.3)
    assert d.verdict == "data-starved"
    assert d.breakdown["input"] == pytest.approx(0.7, abs=0.01) and d.breakdown["other"] == 0.0
    assert "70% of step time, counted as input wait" in d.reason
    assert [r.verdict for r in d.ranks] == ["data-starved"]
    assert d.ranks[0].breakdown["input"] == pytest.approx(0.7, abs=0.01)
    assert d.per_step[0]["input"] == pytest.approx(0.7, abs=0.01)
    assert compare(d, d).base.breakdown["input"] == pytest.approx(0.7, abs=0.01)
    console = Console(width=100, record=True)
    console.print(render_report(d, width=100))
    assert "input wait 70%" in console.export_text()
