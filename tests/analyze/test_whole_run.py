"""The whole run: phases, windows weighted by the time they stand for, a bounded trace whose
running summary is what ``gpudiag analyze`` reads from the file."""

from __future__ import annotations

import json

import pytest

from gpudiag.analyze import diagnose
from gpudiag.record import writer as writer_mod
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import Metadata
from tests.helpers.synth import periodic

WINDOW = 5


def record(path, epochs, batches=1, warmup_us=0.0, counters=False):
    """A recording as DiagnoseCallback writes it. ``epochs``: (steps, step_us, input_frac,
    window_start or None) each; a window profiles ``WINDOW`` steps of that shape."""
    w = TraceWriter(str(path), Metadata(producer="gpudiag", device_type="GPU"))
    t = 1_000_000.0
    step = 0
    for e, (n, step_us, input_frac, window) in enumerate(epochs):
        one = periodic(
            steps=1, step_us=step_us, input_frac=input_frac, compute_frac=0.9 - input_frac
        )
        epoch_start = t
        for k in range(n):
            dur = step_us + (warmup_us if step == 0 else 0.0)
            inside = window is not None and window <= k < window + WINDOW
            if inside and k == window:
                w.detail(True)
            w.step(step, t, t + dur, profiled=inside, batches=batches)
            if inside:
                w.timeline(one, shift_us=t + dur - step_us)
                if k == window + WINDOW - 1:
                    w.detail(False)
            if counters and k % 10 == 0:
                w.counter("gpu_util", "GPU 0", t, 50.0 + k % 7)
                w.counter("gil_lateness", "host", t, 0.2)
            t += dur
            step += 1
        w.span("epoch", epoch_start, t, epoch=e)
    w.close()
    return w


def same_as_file(w, path):
    mine = diagnose([w.summary(str(path))]).to_dict()
    again = diagnose(load_file(str(path))).to_dict()
    assert json.loads(json.dumps(mine)) == again
    return mine


def test_cache_fill_epoch_does_not_decide_the_verdict(tmp_path):
    # epoch 1 fills a cache: slow and input-bound; epochs 2-4 are fast and compute-bound
    p = tmp_path / "cache.json"
    w = record(
        p,
        [(20, 30_000, 0.7, 5), (20, 7_000, 0.02, 10), (20, 7_000, 0.02, 10), (20, 7_000, 0.02, 10)],
    )
    d = same_as_file(w, p)
    assert d["verdict"] == "compute-bound", d["reason"]
    kinds = [ph["kind"] for ph in d["run"]["phases"]]
    assert "cache-fill" in kinds
    windows = d["run"]["windows"]
    assert [x["phase"] for x in windows] == ["cache-fill", "steady", "steady", "steady"]
    assert windows[0]["verdict"] == "data-starved" and windows[0]["weight"] == 0
    assert sum(x["weight"] for x in windows) == pytest.approx(1.0, abs=1e-3)
    assert "cache-fill window" in d["reason"] and "data-starved" in d["reason"]
    assert [e["epoch"] for e in d["run"]["epochs"]] == [1, 2, 3, 4]


def test_windows_that_disagree_are_weighed_and_said(tmp_path):
    # the first half of the run is input-bound, the longer second half compute-bound
    p = tmp_path / "two.json"
    w = record(p, [(40, 10_000, 0.6, 10), (400, 10_000, 0.02, 50)])
    d = same_as_file(w, p)
    windows = d["run"]["windows"]
    assert [x["verdict"] for x in windows] == ["data-starved", "compute-bound"]
    assert windows[1]["weight"] > windows[0]["weight"]
    assert d["verdict"] == "compute-bound"
    assert "windows disagree" in d["reason"]
    one = diagnose(load_file(str(record(tmp_path / "one.json", [(40, 10_000, 0.05, 10)]).path)))
    assert d["confidence"] < one.confidence  # disagreement lowers confidence


def test_warm_up_and_late_slowdown_are_phases(tmp_path):
    p = tmp_path / "slow.json"
    w = record(
        p,
        [(30, 5_000, 0.05, 5), (30, 5_000, 0.05, None), (30, 9_000, 0.05, None)],
        warmup_us=2_000_000,
    )
    d = same_as_file(w, p)
    kinds = {ph["kind"]: ph for ph in d["run"]["phases"]}
    assert kinds["warm-up"]["evidence"]["steps"] == 1
    assert kinds["slowdown"]["evidence"]["late_ms"] == pytest.approx(9.0, rel=0.05)
    assert "cache-fill" not in kinds


def test_steps_per_execution_counts_batches(tmp_path):
    p = tmp_path / "spe.json"
    w = record(p, [(20, 40_000, 0.05, 5)], batches=4)
    d = same_as_file(w, p)
    assert d["steps"]["count"] == 80  # batches, not calls
    assert d["steps"]["median_ms"] == pytest.approx(10.0, rel=0.01)  # per batch
    assert d["steps"]["analyzed"] == WINDOW


def test_long_run_trace_is_aggregated_and_summary_matches_file(tmp_path, monkeypatch):
    monkeypatch.setattr(writer_mod, "FULL_STEPS", 50)
    p = tmp_path / "long.json"
    w = record(p, [(3000, 7_000, 0.05, 1500), (3000, 7_000, 0.05, 1000)], counters=True)
    d = same_as_file(w, p)
    lines = p.read_text().splitlines()
    step_lines = sum('"cat":"step"' in ln for ln in lines)
    groups = sum('"cat":"gpudiag.steps"' in ln for ln in lines)
    assert step_lines == 50 + 2 * WINDOW  # the first steps and the windows, one by one
    assert 0 < groups < 100  # the rest as one aggregate per second of steps
    gpu = sum('"gpu_util"' in ln for ln in lines)
    assert gpu < 600 / 10 + 20  # 600 samples over 42 s: 10-s means outside the windows
    assert sum('"gil_lateness"' in ln for ln in lines) == 600  # bursts: never aggregated
    assert d["steps"]["count"] == 6000
    assert d["steps"]["median_ms"] == pytest.approx(7.0, rel=0.01)
    assert len(d["run"]["windows"]) == 2


def test_live_follow_verdict_moves_with_the_run(tmp_path):
    from gpudiag.show.follow import TraceFollower

    p = tmp_path / "live.json"
    w = TraceWriter(str(p), Metadata(producer="gpudiag", device_type="GPU"))
    follower = TraceFollower(str(p))
    verdicts = []
    t = 1_000_000.0
    for e, input_frac in enumerate([0.7, 0.02, 0.02, 0.02]):
        one = periodic(
            steps=1, step_us=10_000, input_frac=input_frac, compute_frac=0.9 - input_frac
        )
        start = t
        for k in range(30):
            inside = 10 <= k < 10 + WINDOW
            w.step(e * 30 + k, t, t + 10_000, profiled=inside)
            if inside:
                w.timeline(one, shift_us=t)
            t += 10_000
        w.window(start + 100_000, start + 150_000, "profiler window")
        w.span("epoch", start, t, epoch=e)
        w.flush()
        verdicts.append(follower.poll().verdict)
    w.close()
    assert verdicts[0] == "data-starved"
    assert verdicts[-1] == "compute-bound"  # not frozen on the first window


def test_steps_numbered_out_of_order_are_weighed_as_one_window():
    """Every step profiled but numbered backwards: thousands of one-step 'windows' would
    each get a row and a weight; past MAX_WINDOWS the run is one window."""
    from gpudiag.analyze.phases import MAX_WINDOWS, whole_run
    from tests.helpers.synth import periodic

    tl = periodic(steps=3 * MAX_WINDOWS, input_frac=0.4)
    tl.steps.index[:] = tl.steps.index[::-1].copy()
    view = whole_run(tl)
    assert len(view.windows) == 1 and view.windows[0].weight == 1.0
    assert view.breakdown.shares["input"] > 0.35


def test_compare_shows_the_phases_each_side_went_through(tmp_path):
    """A slowdown late in NEW is said beside its median, in the terminal as in the JSON."""
    from rich.console import Console

    from gpudiag.analyze.compare import compare
    from gpudiag.show.compare import render_comparison

    steady = record(tmp_path / "steady.json", [(30, 5_000, 0.05, 5), (30, 5_000, 0.05, None)])
    slow = record(
        tmp_path / "slow.json",
        [(30, 5_000, 0.05, 5), (30, 5_000, 0.05, None), (30, 9_000, 0.05, None)],
        warmup_us=2_000_000,
    )
    c = compare(diagnose(load_file(str(steady.path))), diagnose(load_file(str(slow.path))))
    assert not c.base.phases
    assert c.new.phases == [
        "the first step took 2.00 s (tracing, compilation, first batches); steady steps take "
        "5.0 ms (0.0 s in, 2.0 s long)",
        "epoch 3 ran at 9.0 ms per step against 5.0 ms before (2.3 s in, 0.3 s long)",
    ]
    console = Console(width=160, record=True)
    console.print(render_comparison(c, "steady.json", "slow.json"))
    out = console.export_text(styles=False)
    assert out.count("phase:") == 2
    assert "epoch 3 ran at 9.0 ms per step" in out


def test_a_verdict_from_the_cache_fill_alone_says_so_and_scales_its_gains(tmp_path):
    """The only window fell in epoch 1, filling a cache (56 ms a step, input-bound); the
    windows of epochs 2-4 were skipped. The split is right for epoch 1 only: the reason says
    so, the confidence is halved, and each gain is what the whole run gets."""
    from gpudiag.analyze.verdict import UNREPRESENTATIVE
    from gpudiag.analyze.window_phase import whole_run_gain

    fill = [(20, 56_000, 0.7, 5)]
    later = [(20, 14_000, 0.02, None)] * 3
    p, q = tmp_path / "only.json", tmp_path / "alone.json"
    d = same_as_file(record(p, fill + later), p)
    alone = same_as_file(record(q, fill), q)  # the same epoch as a run of its own
    assert d["run"]["window_phase"]["phase"] == "cache-fill"
    share = d["run"]["window_phase"]["share"]
    assert share == pytest.approx(20 * 56 / (20 * 56 + 60 * 14), abs=0.02)
    assert "describes that phase only" in d["reason"]
    assert d["verdict"] == alone["verdict"] == "data-starved"
    assert d["confidence"] == pytest.approx(alone["confidence"] * UNREPRESENTATIVE, abs=0.002)
    gains = {s["title"]: s for s in alone["suggestions"]}
    assert d["suggestions"]
    for s in d["suggestions"]:
        whole = gains[s["title"]]["expected_gain"]
        assert s["expected_gain"] == pytest.approx(whole_run_gain(whole, share), abs=0.01)
        assert "measured in cache-fill only" in s["basis"] or whole <= 1.0
