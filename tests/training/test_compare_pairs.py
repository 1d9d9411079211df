"""``gpudiag compare`` on real before/after pairs recorded by DiagnoseCallback: a 4× batch, the
same run on a machine made noisy, and a distribution strategy dropped
(tests/helpers/compare_pairs.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.script_io import run_script

pytestmark = [pytest.mark.train, pytest.mark.timeout(300)]
pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    return run_script("compare_pairs", tmp_path_factory.mktemp("pairs"), timeout=280)[0]


def _compare(pair: list[dict], *gate: str) -> tuple[int, dict]:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpudiag",
            "compare",
            pair[0]["trace"],
            pair[1]["trace"],
            "--json",
            *gate,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode in (0, 3, 4), r.stderr
    return r.returncode, json.loads(r.stdout)


def _agrees_with_the_wall_clock(pair: list[dict], d: dict) -> None:
    """compare's figure within 15% of the runs' own clocks, or not measurable with an
    interval that holds theirs."""
    wall = pair[0]["us_per_sample"] / pair[1]["us_per_sample"]
    w = d["work"]
    lo, hi = w["speedup_interval"]
    assert abs(w["speedup"] / wall - 1) <= 0.15 or (not w["measurable"] and lo <= wall <= hi), (
        wall,
        w,
    )


def test_a_bigger_batch_is_compared_per_sample(pairs):
    rc, d = _compare(pairs["batch"], "--fail-on-regression", "5")
    assert rc == 0  # longer steps, each doing 4x the work: not a regression
    _agrees_with_the_wall_clock(pairs["batch"], d)
    assert not d["differences"]  # a bigger batch on the same replicas: a remedy's change
    assert d["work"]["unit"] == "sample" and d["config_changes"] == ["global_batch 32 → 128"]
    assert d["step_time_ratio"] > 1.0  # each step is longer ...
    if d["work"]["contended"]:  # a neighbour took the CPU: nothing can be pinned on the change
        assert "may be theirs, not the change's" in d["summary"]
        return
    assert d["work"]["measurable"] and d["work"]["speedup"] > 1.0  # ... each sample cheaper
    wall = pairs["batch"][0]["us_per_sample"] / pairs["batch"][1]["us_per_sample"]
    assert wall > 1.0  # the runs' own clocks agree on the direction
    assert "slower" not in d["summary"] and "per sample" in d["summary"]


def test_a_noisy_machine_is_not_a_regression(pairs):
    rc, d = _compare(pairs["noisy"], "--fail-on-regression", "5")
    assert "cpu-contention" in d["new"]["findings"]
    assert "NEW" in d["work"]["contended"]
    assert rc == 0  # whatever the ratio, a neighbour's share of the CPU fires no gate
    assert "may be theirs, not the change's" in d["summary"] and "quiet machine" in d["summary"]
    assert not d["config_changes"]


def test_a_dropped_strategy_is_named_not_mistaken_for_a_remedy(pairs):
    _, d = _compare(pairs["strategy"])
    assert d["config_changes"] == ["replicas 2 → 1"]
    _agrees_with_the_wall_clock(pairs["strategy"], d)
    # BASE's small-model-multi-gpu finding advised one replica: that, and only that, was done
    applied = [r["title"] for r in d["remedies"] if r["status"] == "applied"]
    assert applied == ["Train on one replica (fewer devices)"]
    assert "Train on one replica (fewer devices) (replicas 2 → 1)" in d["summary"]
    more_work = [r for r in d["remedies"] if "more work per all-reduce" in r["title"]]
    assert all(r["status"] == "not applied" for r in more_work)
