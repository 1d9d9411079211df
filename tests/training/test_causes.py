"""The field's common causes of a slow fit, planted in real small Keras fits (TF, CPU; see
tests/helpers/cause_scenarios.py, two processes for all of them): each named with its finding and a
remedy that acts on it, and not named where the run does not have it. A bigger batch is
never offered where a named cause holds the step."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import REPO

pytestmark = [pytest.mark.train, pytest.mark.timeout(400)]
pytest.importorskip("tensorflow")


def _group(name: str, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp(name)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}
    r = subprocess.run(
        [sys.executable, "-m", "tests.helpers.cause_scenarios", name, str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=380,
        env=env,
    )
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, f"{name} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return json.loads(line[len("RESULT ") :])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    return _group("main", tmp_path_factory)


@pytest.fixture(scope="module")
def capped(tmp_path_factory) -> dict:
    return _group("capped", tmp_path_factory)["capped"]["diagnosis"]


def finding(d: dict, fid: str) -> dict | None:
    return next((f for f in d["findings"] if f["id"] == fid), None)


def remedies(d: dict, fid: str) -> list[str]:
    return [s["remedy"] for s in d["suggestions"] if s["finding"] == fid]


def batch_offered(d: dict) -> bool:
    return any(s["remedy"] == "bigger-batch" for s in d["suggestions"])


def test_mixed_float16_on_a_cpu_is_named_with_the_float32_policy(runs):
    d = runs["mixed16"]["diagnosis"]
    f = finding(d, "slow-mixed-precision")
    assert f is not None and f["evidence"]["precision"] == "mixed_float16"
    assert remedies(d, "slow-mixed-precision") == ["float32-policy"]
    assert not batch_offered(d)
    assert finding(runs["plain"]["diagnosis"], "slow-mixed-precision") is None


def test_predict_in_a_batch_hook_is_measured_and_named(runs):
    r = runs["predict_cb"]
    d = r["diagnosis"]
    f = finding(d, "batch-callbacks")
    assert f is not None and "PredictEvery" in f["evidence"]["callbacks"]
    assert f["evidence"]["predict_calls"] == 20  # every 2nd of 20 batches, 2 epochs
    # the measured per-batch time holds what the callback itself timed
    measured = d["run"]["fit"]["batch_callbacks_s"]["PredictEvery"]
    assert measured == pytest.approx(r["user_s"], rel=0.15, abs=0.05)
    assert "predict-on-batch" in remedies(d, "batch-callbacks")
    assert not batch_offered(d)


def test_numpy_work_in_a_batch_hook_is_named_and_a_light_one_is_not(runs):
    d = runs["numpy_cb"]["diagnosis"]
    f = finding(d, "batch-callbacks")
    assert f is not None and "NumpyEvery" in f["evidence"]["callbacks"]
    assert remedies(d, "batch-callbacks") == ["callback-less-often"]
    assert not batch_offered(d)
    light = runs["light_cb"]["diagnosis"]
    assert finding(light, "batch-callbacks") is None
    assert light["run"]["fit"]["batch_callbacks_s"].get("NumpyEvery", 0.0) < 0.05


def test_a_checkpoint_every_few_batches_is_named_with_a_rarer_save(runs):
    d = runs["checkpoint"]["diagnosis"]
    f = finding(d, "batch-callbacks")
    assert f is not None and "ModelCheckpoint" in f["evidence"]["callbacks"]
    assert {"checkpoint-less-often", "save-weights-only"} <= set(remedies(d, "batch-callbacks"))


def test_adam_on_a_large_embedding_is_named_and_sgd_is_not(runs):
    d = runs["adam_embedding"]["diagnosis"]
    f = finding(d, "dense-embedding-updates")
    assert f is not None and f["evidence"]["embedding_rows"] == 150_000
    assert f["evidence"]["optimizer"] == "Adam"
    assert "table_update_pct" in f["evidence"]  # measured from the optimizer's ops
    assert remedies(d, "dense-embedding-updates")[0] == "sparse-embedding-updates"
    assert not batch_offered(d)
    assert finding(runs["sgd_embedding"]["diagnosis"], "dense-embedding-updates") is None
    # the planted cause costs what the finding says: Adam's fit is several times SGD's
    assert runs["adam_embedding"]["wall_s"] > 2 * runs["sgd_embedding"]["wall_s"]


def test_float64_arrays_are_named_and_float32_are_not(runs):
    f = finding(runs["float64"]["diagnosis"], "float64-input")
    assert f is not None and f["severity"] == "info"
    # no host-to-device copy on a CPU: the cast's gain is not estimated, and not shown
    assert remedies(runs["float64"]["diagnosis"], "float64-input") == []
    assert finding(runs["plain"]["diagnosis"], "float64-input") is None


def test_fit_in_a_loop_gets_one_account_and_a_one_fit_remedy(runs):
    loop = runs["loop"]
    d = loop["diagnosis"]
    fit = d["run"]["fit"]
    # the first fit cannot know a loop follows (recorded on its own); the 39 after it are
    # one series
    assert fit["fits"] == 39 and fit["measured"]
    f = finding(d, "repeated-fit")
    assert f is not None and f["evidence"]["fits"] == 39
    assert remedies(d, "repeated-fit") == ["one-fit"]
    # the account spans the loop, not its last fit; its parts add up to it, gpudiag's own
    # time a small part of it
    assert 0.5 * loop["wall_s"] < fit["wall_s"] <= loop["wall_s"]
    assert sum(fit["seconds"].values()) == pytest.approx(fit["wall_s"], rel=0.02)
    assert fit["shares"]["gpudiag"] < 0.05
    assert fit["seconds"]["between_fits"] > 0 and fit["seconds"]["steps"] > 0
    two = runs["two_fits"]["diagnosis"]
    assert finding(two, "repeated-fit") is None  # a fit resumed once is no loop


def test_a_loops_own_earlier_fits_are_not_other_processes_contention(runs):
    """gpudiag's own earlier fits (and their recording) are this process: the contention
    it reports is what other processes took, measured apart (psutil) over the loop."""
    loop = runs["loop"]
    f = finding(loop["diagnosis"], "cpu-contention")
    others = loop["others_pct"]
    if others < 15.0:  # a quiet host: no contention to report
        assert f is None, f
    elif f is not None:  # a loaded host: reported as much as the others took, not more
        assert f["evidence"]["cpu_other_processes_p50_pct"] <= others + 25.0


def test_ctrl_c_in_a_series_closes_it_once_and_the_process_fits_again(runs):
    r = runs["interrupted"]
    assert r["stopped"]
    stopped = [s for s in r["said"] if "stopped early" in s]
    assert len(stopped) == 1  # reported once: no series report after it
    assert r["events"] > 10  # the trace left is a whole JSON array
    assert r["threads"] == []  # no recording thread outlives the fit
    assert r["fits"] >= 2  # the series' fits before the interrupt are in its account
    after = r["after"]["diagnosis"]
    assert after is not None and after["run"]["fit"]["measured"]
    assert not any("stopped early" in s or "could not" in s for s in r["said_after"])


def test_capped_threads_and_forced_determinism_are_named(capped, runs):
    f = finding(capped, "threads-capped")
    assert f is not None and f["evidence"]["intra_op_threads"] == 1
    # where the process fills its cap the remedy stands; where other processes hold the
    # cores (a loaded machine) the cap is not what holds it, and no gain is claimed
    if f["severity"] == "moderate":
        if "lift-thread-cap" not in remedies(capped, "threads-capped"):
            # other processes hold the cores a wider pool would get: no gain left to claim
            assert finding(capped, "cpu-contention") is not None
        assert not batch_offered(capped)
    else:
        assert f["evidence"]["cpu_this_run_p50_cores"] < 0.8
    assert finding(capped, "op-determinism") is not None
    assert "nondeterministic-ops" in remedies(capped, "op-determinism")
    plain = runs["plain"]["diagnosis"]
    assert finding(plain, "threads-capped") is None
    assert finding(plain, "op-determinism") is None
