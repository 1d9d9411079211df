"""Keras 3 on JAX across 2 and 4 host devices (keras.distribution), trained for real: the
multi-device lints before the first step (the uneven batch before JAX fails on it), the
ragged last batch known from fit's arrays or seen in the step's compiles, the small model on
several devices, gradient all-reduce read per device from the profile, ModelParallel
described. Each lint and finding from both sides of its threshold; each diagnosis read back
from its trace file is the one given at the end of training.

One process per run (tests/helpers/jax_distribution_scenarios.py): the device count is an XLA flag
read when JAX is imported. JAX comes from the ``backends`` extra: missing in CI is a failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.optional import require_backend
from tests.helpers.paths import REPO
from tests.helpers.reread import same_from_file
from tests.helpers.script_io import run_script
from tests.training.test_backends import ids

pytestmark = [pytest.mark.train, pytest.mark.timeout(240)]


def run(name: str, tmp: Path, devices: int, *args: object) -> tuple[dict, str]:
    require_backend("jax")
    trace = tmp / f"{name}-{devices}.json"
    result, proc = run_script(
        "jax_distribution_scenarios", name, trace, devices, *args, timeout=200, what=name
    )
    return result, proc.stderr


def finding(d: dict, fid: str) -> dict:
    return next(f for f in d["findings"] if f["id"] == fid)


def advice(d: dict) -> str:
    return " ".join(s["title"] + ": " + s["detail"] for s in d["suggestions"])


@pytest.mark.parametrize(("devices", "batch"), [(2, 33), (4, 34)])
def test_uneven_global_batch_is_said_before_jax_fails(devices, batch, tmp_path):
    """JAX shards fit's first batch while Keras builds the model, before any callback hook:
    the lint comes from the batch's layout, and says what JAX will do."""
    result, stderr = run("batch", tmp_path, devices, batch)
    assert result["fit_error"] == "IndivisibleError"
    assert "batch-not-multiple-of-replicas" in result["lints_at_error"]  # judged before
    assert f"Global batch {batch} does not divide by {devices} replicas" in stderr
    assert "IndivisibleError" in stderr and "fit(batch_size=...)" in stderr
    assert result["config"]["strategy"] == "keras-data-parallel"


def test_small_model_on_two_devices_fed_arrays(tmp_path):
    """The 609-parameter MLP at batch 32 over 2 devices: its replicas counted, the small
    model found, the arrays named as what fit slices, with their own remedies."""
    result, stderr = run("small_model", tmp_path, 2)
    assert result["params"] == 609 and result["fit_error"] is None
    d = result["diagnosis"]
    cfg = d["config"]
    assert (cfg["replicas"], cfg["global_batch"], cfg["input_kind"]) == (2, 32, "array")
    assert "batch-not-multiple-of-replicas" not in ids(d)  # 32 divides: the other side
    assert "small-model-multi-gpu" in ids(d) and "small-model-multi-gpu" in result["lint_ids"]
    # printed before the first step: fewer devices, in the words of the API used
    assert "small-model-multi-gpu" in stderr and "keras.distribution" in stderr
    text = advice(d)
    assert "dataset=" not in text and "tf.distribute" not in text
    if d["verdict"] == "data-starved":  # Keras's own slicing: remedies for arrays
        assert "Feed the arrays through a prefetching pipeline" in text or "bigger batch" in text
    # the per-device view: each JAX device with its own busy time and idle gaps
    assert [r["device"] for r in d["devices"]] == ["CPU 0", "CPU 1"]
    assert all(r["busy"] > 0 and "gaps" in r for r in d["devices"])
    same_from_file(result)


def test_a_model_big_enough_for_two_devices_is_not_called_small(tmp_path):
    """1.07M parameters at 16 samples per device: both thresholds passed."""
    result, _ = run("small_model", tmp_path, 2, 1024)
    assert result["params"] > 1_000_000
    assert "small-model-multi-gpu" not in ids(result["diagnosis"])


def test_ragged_last_batch_of_arrays_with_batchnorm(tmp_path):
    """2000 samples at batch 32 leave 16: known from fit's arrays before the first step, its
    recompilation read from the trace."""
    result, stderr = run("ragged", tmp_path, 2, 2000)
    d = result["diagnosis"]
    assert "partial-last-batch" in result["lint_ids"]
    assert "partial-last-batch" in stderr and "BatchNormalization" in stderr
    f = finding(d, "partial-last-batch")
    assert f["severity"] == "high"
    ev = f["evidence"]
    assert (ev["samples"], ev["global_batch"], ev["last_batch"]) == (2000, 32, 16)
    assert ev["last_batch_compile_s"] > 0  # the step compiled again for 16 rows
    fix = next(s for s in d["suggestions"] if s["title"] == "Drop the ragged last batch")
    assert "x[:n]" in fix["detail"] and "drop_remainder" not in fix["detail"]
    same_from_file(result)


def test_whole_batches_of_arrays_have_no_ragged_batch(tmp_path):
    result, _ = run("ragged", tmp_path, 2, 2016)  # 63 batches of 32
    assert "partial-last-batch" not in ids(result["diagnosis"])


@pytest.mark.parametrize(("last", "ragged"), [(16, True), (32, False)])
def test_ragged_last_batch_seen_in_the_step_compiles(last, ragged, tmp_path):
    """A generator hides its sample count: the short batch shows when the step compiles for
    a second batch size."""
    result, _ = run("ragged_generator", tmp_path, 2, last)
    d = result["diagnosis"]
    assert result["config"]["input_kind"] == "generator"
    assert "partial-last-batch" not in result["lint_ids"]  # unknown before the first step
    assert ("partial-last-batch" in ids(d)) == ragged
    if ragged:
        f = finding(d, "partial-last-batch")
        assert f["source"] == "trace" and f["evidence"]["last_batch"] == last
        assert "generator yield whole batches" in advice(d)
    same_from_file(result)


def test_a_last_batch_jax_cannot_split_is_said_before_it_fails(tmp_path):
    """2002 samples at batch 32 over 4 devices: the last batch of 18 does not split 4 ways,
    and JAX fails on it at the end of the first epoch."""
    result, stderr = run("ragged", tmp_path, 4, 2002)
    assert result["fit_error"] == "IndivisibleError"
    assert "partial-last-batch" in result["lints_at_error"]
    assert "Last batch has 18 samples for 4 replicas" in stderr
    assert "fails on it at the end of the first epoch" in stderr


def test_data_parallel_gradient_sync_is_sync_bound_on_four_devices(tmp_path):
    """1.3M parameters at 2 samples per device: the all-reduce of each device, read from the
    XLA ops of the JAX profile, is the step's stall."""
    four, _ = run("sync", tmp_path, 4)
    d4 = four["diagnosis"]
    assert d4["verdict"] == "sync-bound"
    assert {"exposed-collectives", "small-model-multi-gpu"} <= ids(d4)
    assert [r["device"] for r in d4["devices"]] == [f"CPU {i}" for i in range(4)]
    assert all(r["sync"] > 0 for r in d4["devices"])
    same_from_file(four)
    cli = subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", four["trace_path"], "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(cli.stdout)["verdict"] == "sync-bound"


def test_the_same_model_on_one_device_has_nothing_to_synchronise(tmp_path):
    one, _ = run("sync", tmp_path, 1)
    d1 = one["diagnosis"]
    assert d1["verdict"] != "sync-bound" and d1["breakdown"]["sync"] == 0
    assert "exposed-collectives" not in ids(d1) and len(d1["devices"]) == 1


@pytest.mark.parametrize("batch", [34, 33])
def test_model_parallel_is_recognised_and_its_batch_axis_counted(batch, tmp_path):
    """ModelParallel on a 2 × 2 mesh: the batch splits over the "batch" axis only (2 ways):
    34 rows divide, 33 do not; the mesh and the sharded kernel are described."""
    result, stderr = run("model_parallel", tmp_path, 4, batch)
    cfg = result["config"]
    assert cfg["strategy"] == "keras-model-parallel"
    assert (cfg["replicas"], cfg["mesh"]) == (2, "batch=2 × model=2")
    assert cfg["sharded"].startswith("1 of 4 variables") and "'model'" in cfg["sharded"]
    if batch == 33:
        assert result["fit_error"] == "IndivisibleError"
        assert "Global batch 33 does not divide by 2 replicas" in stderr
        return
    d = result["diagnosis"]
    assert result["fit_error"] is None
    assert "batch-not-multiple-of-replicas" not in ids(d)
    assert any(lim.startswith("keras.distribution.ModelParallel") for lim in d["limitations"])
    assert len(d["devices"]) == 4
    same_from_file(result)
