"""``gpudiag compare`` on real pairs where a median step misleads
(tests/helpers/throughput_pairs.py): its figure is the runs' wall-clock throughput, a stopped
run is named and not judged, runs of different programs are not attributed, and ``analyze``
of the callback's trace or of the profile directory it kept reaches the callback's own
diagnosis."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.script_io import run_script

pytestmark = [pytest.mark.train, pytest.mark.timeout(420)]
pytest.importorskip("tensorflow")

AGREE = 0.15  # compare's figure within 15% of the wall clock's


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return run_script("throughput_pairs", tmp_path_factory.mktemp("throughput"), timeout=400)[0]


def _gpudiag(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudiag", *args], capture_output=True, text=True, timeout=120
    )


def _compare(pair: list[dict], *gate: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    r = _gpudiag("compare", pair[0]["trace"], pair[1]["trace"], "--json", *gate)
    assert r.returncode in (0, 3, 4), r.stderr
    return r, json.loads(r.stdout)


@pytest.mark.parametrize("name", ["workers", "generator", "cached"])
def test_compares_figure_is_the_wall_clocks_throughput(pairs, name):
    pair = pairs[name]
    _, d = _compare(pair)
    wall = pair[0]["us_per_sample"] / pair[1]["us_per_sample"]  # NEW's speed-up, measured
    w = d["work"]
    lo, hi = w["speedup_interval"]
    assert abs(w["speedup"] / wall - 1) <= AGREE or (not w["measurable"] and lo <= wall <= hi), (
        wall,
        w,
    )
    # the headline is that figure; the median step is beside it, named as what it is
    assert d["speedup"] == w["speedup"] and d["summary"].split(" ")[0] in ("NEW", "no")
    assert "not the speed-up" in d["summary"]
    assert w["over"] == {"BASE": "epochs 2–4", "NEW": "epochs 2–4"}


@pytest.mark.parametrize("name", ["workers", "generator"])
def test_a_worker_process_pydataset_is_the_workers_remedy_applied(pairs, name):
    _, d = _compare(pairs[name])
    workers = [r for r in d["remedies"] if "worker" in r["title"].lower()]
    assert workers and all(r["status"] == "applied" for r in workers), d["remedies"]
    if name == "generator":  # the input kind changed: that change is the remedy
        assert "input_kind generator → pydataset" in d["config_changes"]
        assert "input_kind generator → pydataset" in workers[0]["note"]
    assert "not a remedy BASE suggested" not in d["summary"]


def test_the_first_epochs_cache_fill_does_not_decide_the_cached_runs_verdict(pairs):
    run = pairs["cached"][1]["diagnosis"]["run"]
    assert {w["epoch"] for w in run["windows"]} - {1}  # a window outside epoch 1
    assert run["window_phase"] is None


def test_a_crashed_run_is_named_and_not_judged(pairs):
    r, d = _compare(pairs["crashed"], "--fail-on-regression", "5")
    assert r.returncode == 4 and "cannot judge" in r.stderr and "NEW stopped early" in r.stderr
    assert d["new"]["stopped"] and d["base"]["stopped"] is None
    assert d["work"] is None and d["step_time_ratio"] is None and not d["judged"]
    assert d["summary"].startswith("NEW stopped early") and "too few" in d["summary"]
    assert all(m["status"] == "unknown" for m in d["remedies"])


def test_runs_of_different_programs_are_not_attributed(pairs):
    r, d = _compare(pairs["unrelated"], "--fail-on-regression", "5")
    assert r.returncode == 4 and "different programs" in r.stderr
    assert any("parameters" in x for x in d["differences"]) and not d["judged"]
    assert all(m["status"] == "unknown" for m in d["remedies"])
    assert "different programs" in d["summary"] and "applied" not in d["summary"]
    assert d["work"] is not None  # the figure is still shown, as such


def test_analyze_of_the_trace_and_of_the_kept_profile_dir_is_the_callbacks_diagnosis(pairs):
    run = pairs["workers"][0]
    manifest = os.path.join(run["profile_dir"], "gpudiag-run.manifest")
    with open(manifest, encoding="utf-8") as f:
        assert len(json.load(f)["windows"]) >= 2  # several windows: one run
    cb = run["diagnosis"]
    for path in (run["trace"], run["profile_dir"]):
        r = _gpudiag("analyze", path, "--json")
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["verdict"] == cb["verdict"] and d["confidence"] == cb["confidence"]
        assert d["breakdown"] == cb["breakdown"]
        assert [s["title"] for s in d["suggestions"]] == [s["title"] for s in cb["suggestions"]]
        assert [s["expected_gain"] for s in d["suggestions"]] == [
            s["expected_gain"] for s in cb["suggestions"]
        ]
