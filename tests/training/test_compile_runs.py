"""Compilation as a cause, on real Keras runs on this CPU (tests/helpers/compile_scenarios.py).

* A step recompiled for every batch length: under JAX and under TensorFlow with
  ``jit_compile=True`` the run gets ``recompilation`` with its share of the fit, said first in
  the headline, and shape remedies; the same model fed one fixed length gets none of it.
* ``run_eagerly=True``: linted before the first step and found with the dispatch share and
  its remedy under TensorFlow and JAX; the eager TensorFlow run is read (steps, device time,
  a verdict with confidence); the compiled control gets none of it. On torch Keras runs eagerly
  whatever ``run_eagerly`` says, so nothing is raised there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.load import load_file
from tests.helpers.optional import require_backend
from tests.helpers.script_io import run_script

pytestmark = [pytest.mark.train, pytest.mark.timeout(300)]


def run(backend: str, name: str, variant: str, tmp: Path) -> dict:
    require_backend(backend)
    result, _ = run_script(
        "compile_scenarios",
        name,
        variant,
        tmp / "t.json",
        timeout=280,
        env={"KERAS_BACKEND": backend},
        what=f"{backend} {name}",
    )
    assert result["backend"] == backend
    return result


def titles(d: dict) -> list[str]:
    return [s["title"] for s in d["suggestions"]]


@pytest.mark.parametrize(("backend", "jit"), [("jax", ""), ("tensorflow", "-jit")])
def test_a_step_recompiled_for_every_length_is_named_first(backend, jit, tmp_path):
    d = run(backend, "varlen", "var" + jit, tmp_path)
    f = d["findings"].get("recompilation")
    assert f is not None, d["findings"].keys()
    e = f["evidence"]
    assert e["recompilations"] >= 4  # six lengths: five after the first
    assert e["recompile_share_pct"] >= 25 and f["severity"] == "high"
    assert d["reason"].startswith("recompilation: the step compiled")
    assert "dimension 1" in e["shapes_changed"]
    assert {"Pad every batch to one length", "Bucket the sequence lengths to 4 sizes"} <= {
        t.rstrip("0123456789 ") for t in titles(d)
    }
    if backend == "tensorflow":  # XLA on a CPU buys nothing: turning it off is offered
        assert "Compile without XLA" in titles(d)
    for s in d["suggestions"]:
        if s["finding"] == "recompilation":  # bounded by the compile time removed
            assert s["expected_gain_range"][-1] <= e["fit_s"] / (e["fit_s"] - e["compile_s"]) + 0.01
    # recompilation is not read as step overhead, and its remedies come first (a loaded
    # host may show GIL pressure of its own: the fixed-length control shows it too)
    assert "host-overhead" not in d["findings"]
    assert d["suggestions"][0]["finding"] == "recompilation"
    # and the trace file says the same
    again = diagnose(load_file(d["trace"]))
    assert "recompilation" in again.finding_ids


@pytest.mark.parametrize(("backend", "jit"), [("jax", ""), ("tensorflow", "-jit")])
def test_one_fixed_length_compiles_once_and_gets_no_finding(backend, jit, tmp_path):
    d = run(backend, "varlen", "fixed" + jit, tmp_path)
    assert "recompilation" not in d["findings"]
    assert not d["reason"].startswith("recompilation")


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_run_eagerly_is_linted_found_and_remedied(backend, tmp_path):
    d = run(backend, "eager_mlp", "eager", tmp_path)
    assert "run-eagerly" in d["lint_ids"]  # before the first step
    f = d["findings"]["run-eagerly"]
    assert f["evidence"]["dispatch_share_pct"] >= 50
    (sug,) = [s for s in d["suggestions"] if s["finding"] == "run-eagerly"]
    assert "run_eagerly=False" in sug["detail"]
    share = f["evidence"]["dispatch_share_pct"] / 100
    # the gain reads the unrounded share; the evidence shows it to a tenth of a percent
    assert sug["expected_gain_range"][-1] <= round(1 / (1 - min(share + 0.0005, 0.95)), 2) + 0.01
    assert sug["expected_gain"] >= 2
    # the eager run is read: steps and device time, a verdict said with confidence (an
    # eager TensorFlow run had none: its ops run on the training thread)
    assert d["confidence"] > 0
    if backend == "tensorflow":
        assert d["breakdown"]["compute"] > 0.05
    assert d["reason"].startswith("the model runs eagerly")


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_the_compiled_control_gets_none_of_it(backend, tmp_path):
    d = run(backend, "eager_mlp", "compiled", tmp_path)
    assert "run-eagerly" not in d["lint_ids"] and "run-eagerly" not in d["findings"]
    assert not any(s["finding"] == "run-eagerly" for s in d["suggestions"])


def test_on_torch_run_eagerly_changes_nothing_and_is_not_raised(tmp_path):
    d = run("torch", "eager_mlp", "eager", tmp_path)
    assert d["config"].get("run_eagerly") is True  # recorded as set ...
    assert "run-eagerly" not in d["lint_ids"] and "run-eagerly" not in d["findings"]
