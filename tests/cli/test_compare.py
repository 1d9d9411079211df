"""gpudiag compare on real traces with a known step-time change (ResNet-50, PyTorch DataLoader
num_workers=0 vs 4, same model and GPU)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.compare import compare
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import Metadata
from tests.helpers.paths import SAMPLES

W0 = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")
W4 = str(SAMPLES / "resnet50_dataloader_workers4.pt.trace.json.gz")


def run_cli(*args: str, columns: int = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "gpudiag", "compare", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture(scope="module")
def pair():
    return diagnose(load_file(W0)), diagnose(load_file(W4))


def test_workers_fix_is_faster_and_named_as_the_change(pair):
    base, new = pair
    c = compare(base, new)
    # medians straight from the traces' ProfilerStep#N spans
    assert c.base.median_step_ms == pytest.approx(176.273, abs=0.01)
    assert c.new.median_step_ms == pytest.approx(126.548, abs=0.01)
    assert c.step_time_ratio == pytest.approx(126.548 / 176.273, abs=1e-3)
    assert c.base.verdict == "data-starved" and c.new.verdict == "compute-bound"
    assert c.share_deltas["input"] < -0.30
    assert "dataloader-in-main-process" in c.gone and "input-wait" in c.gone
    # applied because the traces show the DataLoader moved to worker processes, not because
    # a finding went away
    assert c.changes == ["use_multiprocessing false → true"]
    applied = [r for r in c.remedies if r.status == "applied"]
    assert [r.finding for r in applied] == ["dataloader-in-main-process"]
    assert applied[0].expected_gain == pytest.approx(1 / c.step_time_ratio, rel=0.05)
    # work per second is steps over their time: two of NEW's six steps are as slow as BASE's,
    # so NEW does 1.25x the work per second (the median step alone would say 1.39x); with
    # 6 steps a side the interval is wide and the report asks for more steps
    assert c.work is not None and c.work["unit"] == "step"
    b_s, n_s = base.run["throughput"]["seconds"], new.run["throughput"]["seconds"]
    assert c.work["speedup"] == pytest.approx(b_s / n_s, rel=1e-3)
    assert c.work["speedup"] == pytest.approx(1.25, abs=0.01)
    assert 1.0 < c.work["speedup_interval"][0] < 1.1 and c.work["speedup_interval"][1] > 1.4
    assert "record more" in c.summary and "not the speed-up" in c.summary
    assert not c.regressed(0.0)


def test_reverse_direction_is_within_the_noise_of_six_steps(pair):
    base, new = pair
    c = compare(new, base)
    assert c.step_time_ratio == pytest.approx(176.273 / 126.548, abs=1e-3)
    assert not c.regressed(5.0)  # a gate must not fire on a change the noise allows
    assert "dataloader-in-main-process" in c.appeared
    assert c.changes == ["use_multiprocessing true → false"]


def test_self_compare_ratio_is_exactly_one(pair):
    c = compare(pair[0], pair[0])
    assert c.step_time_ratio == 1.0
    assert all(v == 0 for v in c.share_deltas.values())
    assert not c.appeared and not c.gone
    assert all(r.status != "applied" for r in c.remedies)


def test_cli_json_and_exit_codes():
    r = run_cli(W0, W4, "--json", "--fail-on-regression", "5")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["base"]["verdict"] == "data-starved" and d["new"]["verdict"] == "compute-bound"
    assert d["base"]["median_step_ms"] == pytest.approx(176.273, abs=0.01)
    assert d["step_time_ratio"] == pytest.approx(0.718, abs=0.001)
    assert set(d["share_deltas"]) >= {"input", "transfer", "compute", "sync", "other"}
    assert d["work"]["unit"] == "step" and len(d["work"]["interval"]) == 2
    assert d["config_changes"] == ["use_multiprocessing false → true"]
    slower = run_cli(W4, W0, "--fail-on-regression", "5")
    # slower, but the interval's favourable end is only ~2% slower: not beyond 5%
    assert slower.returncode == 0, slower.stderr
    assert "NEW is slower" in slower.stdout
    same = run_cli(W0, W0, "--json", "--fail-on-regression", "0")
    assert same.returncode == 0 and json.loads(same.stdout)["step_time_ratio"] == 1.0


def test_cli_gate_fires_beyond_the_noise(tmp_path):
    """60 steps a side, NEW's each 30% longer: a regression no noise explains."""
    base, slow = tmp_path / "base.json", tmp_path / "slow.json"
    _write_steps(base, [176.0 + (i % 7) for i in range(60)])
    _write_steps(slow, [1.3 * (176.0 + (i % 7)) for i in range(60)])
    r = run_cli(str(base), str(slow), "--fail-on-regression", "20")
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "slower" in r.stdout
    assert run_cli(str(base), str(slow), "--fail-on-regression", "40").returncode == 0


def _write_steps(path, durations_ms: list[float]) -> None:
    """A gpudiag trace of CPU-only steps of the given durations, batch 32."""
    w = TraceWriter(str(path), Metadata(producer="gpudiag", batch_size=32))
    t = 1_000_000.0
    for i, ms in enumerate(durations_ms):
        w.step(i, t, t + ms * 1000.0)
        t += ms * 1000.0 + 50.0
    w.close()


def test_cli_terminal_output_names_the_fix():
    r = run_cli(W0, W4)
    assert r.returncode == 0, r.stderr
    assert "1.25×" in r.stdout and "×0.72" in r.stdout and "record more" in r.stdout
    assert "Load data in worker processes" in r.stdout and "applied" in r.stdout
    assert "33.9%" in r.stdout and "-33.1 pp" in r.stdout  # numbers beside the bars


@pytest.mark.parametrize("columns, bars", [(80, True), (120, True), (56, False)])
def test_cli_terminal_fits_its_width_without_cutting(columns, bars):
    from rich.cells import cell_len

    r = run_cli(W0, W4, columns=columns)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout and max(map(cell_len, r.stdout.splitlines())) <= columns
    # each category on one line: its label, both shares, both bars (when they fit), the change
    row = next(ln for ln in r.stdout.splitlines() if "input wait" in ln)
    assert re.search(r"input wait .*33\.9% .*0\.9% .*-33\.1 pp", row), row
    assert ("█" in row) == bars
    if bars:  # as wide as the width allows, up to 20 cells, and the same length on both sides
        runs = re.findall(r"[█·]+", row)
        assert len(runs) == 2 and len(runs[0]) == len(runs[1]) >= (20 if columns >= 120 else 8)


def test_cli_directory_and_glob_name_runs(tmp_path):
    for name, src in (("a", W0), ("b", W4)):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / "rank0.pt.trace.json.gz")
    r = run_cli(str(tmp_path / "a"), str(tmp_path / "b" / "rank*.json.gz"), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["step_time_ratio"] == pytest.approx(0.718, abs=0.001)


@pytest.mark.parametrize(
    "args, needle",
    [
        (("nope.json", W4), "nope.json: no such file"),
        ((W0, "missing*.json"), "missing*.json: no file matches"),
        ((W0, W4, "--fail-on-regression", "x"), "percentage"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(args, needle):
    r = run_cli(*args)
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) <= 3  # argparse: usage+line


def test_cli_no_steps_with_regression_gate_is_bad_input(tmp_path):
    # a recording that ended before its first step: nothing to compare step times with
    empty = tmp_path / "nosteps.json"
    TraceWriter(str(empty), Metadata(producer="gpudiag")).close()
    r = run_cli(str(empty), W4, "--fail-on-regression", "5")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "no training steps" in r.stderr and str(empty) in r.stderr
    assert run_cli(str(empty), W4).returncode == 0  # without the gate it is only reported


def test_multi_worker_run_compared_with_itself():
    pytest.importorskip("xprof")
    xplane = str(SAMPLES / "tf_gpu_multi_worker.xplane.pb")  # two workers in one profile
    d = diagnose(load_file(xplane))
    assert len(d.ranks) == 2
    c = compare(d, diagnose(load_file(xplane)))
    assert c.step_time_ratio == 1.0 and not c.appeared and not c.gone


def test_terminal_view_escapes_what_came_from_input(pair):
    """Labels are paths the user typed; remedy titles can name ranks or hosts from a trace."""
    from rich.console import Console

    from gpudiag.show.compare import render_comparison

    base, new = pair
    c = compare(base, new)
    for m in c.remedies:
        m.title += "\x1b[2J"
    console = Console(width=120, force_terminal=True, record=True)
    console.print(render_comparison(c, "base\x1b]0;pwned\x07.json", "new[/]x.json"))
    out = console.export_text(styles=False)
    assert "\x1b" not in out and "\x07" not in out
    assert "new[/]x.json" in out  # shown as typed, not read as markup


def test_a_worker_pool_restarted_every_epoch_is_slower_as_the_wall_clock_says():
    """H100, Keras 3 on JAX (sample_traces/h100_keras_jax): a PyDataset doing ~5 ms of Python
    per batch inline, then with 8 worker processes that restart at every 0.2 s epoch. The
    median step says 2.3x faster; the epochs' own clocks (runs.json) say 0.38x."""
    import gzip

    h100 = SAMPLES / "h100_keras_jax"
    runs = json.loads(gzip.decompress((h100 / "runs.json.gz").read_bytes()))
    epochs = {r["name"]: r["epoch_s"] for r in runs}
    wall = sum(epochs["starved_diag"][1:]) / sum(epochs["starved_workers-8_diag"][1:])
    base = diagnose(load_file(str(h100 / "starved.gpudiag.json.gz")))
    new = diagnose(load_file(str(h100 / "starved_workers8.gpudiag.json.gz")))
    c = compare(base, new)
    assert c.step_time_ratio is not None and c.step_time_ratio < 0.5  # the median misleads
    assert c.work is not None and c.work["measurable"] and c.work["unit"] == "sample"
    assert c.work["speedup"] == pytest.approx(wall, rel=0.02)  # 0.38x
    assert c.work["speedup_interval"][1] < 1.0
    assert c.summary.startswith("NEW is slower") and "epochs 2–3" in c.summary
    assert c.regressed(20.0)
