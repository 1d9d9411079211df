"""DiagnoseCallback in a Keras 2 ``fit`` (tf_keras under ``TF_USE_LEGACY_KERAS=1``), against
the same model fit under Keras 3.

The training runs are real small tf.keras models, one per process
(tests/helpers/keras2_scenarios.py).
tf_keras comes from the ``test`` extra: missing in CI is a failure, elsewhere a skip.
``KERAS2_PYTHON=/path/to/python`` runs the Keras 2 scenarios under that interpreter as well
(e.g. a virtual environment with TensorFlow 2.15, whose ``tf.keras`` is keras 2.15).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpudiag.record.generation import Keras2, Keras3, Unsupported, generation_of
from tests.helpers.optional import require
from tests.helpers.paths import REPO
from tests.helpers.script_io import run_script

# findings from the host counters (other processes' CPU use, the GIL probe's bursts): what
# the machine did besides this run, not what the run is
MACHINE = {"cpu-contention", "cpu-saturated", "gil-pressure"}
# the lints of the uneven run: printed before fit is called
PREFIT = {"batch-not-multiple-of-replicas", "partial-last-batch"}

PYTHONS = [pytest.param(sys.executable, id="this-python")]
if os.environ.get("KERAS2_PYTHON"):
    PYTHONS.append(pytest.param(os.environ["KERAS2_PYTHON"], id="KERAS2_PYTHON"))


def run(name: str, tmp: Path, generation: int = 2, python: str = sys.executable) -> dict:
    """One scenario in its own process; its result, with its stderr under ``stderr``."""
    env = {
        "KERAS_GENERATION": str(generation),
        "PYTHONPATH": str(REPO),
        "TF_USE_LEGACY_KERAS": None,
    }
    trace = tmp / f"{name}-keras{generation}.json"
    result, proc = run_script(
        "keras2_scenarios", name, trace, timeout=200, env=env, python=python, what=name
    )
    assert result["generation"] == f"keras{generation}", result["keras"]
    result["stderr"] = proc.stderr
    return result


def ids(d: dict) -> set[str]:
    return {f["id"] for f in d["findings"]}


def own_remedies(d: dict) -> set[str]:
    """The remedies of the run's own findings (not of what the machine did besides it)."""
    return {s["title"] for s in d["suggestions"] if s["finding"] not in MACHINE}


def analyzed_again(result: dict) -> dict:
    """What ``gpudiag analyze --json`` says of the trace the run wrote."""
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", result["trace_path"], "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# ---- which generation, decided from the model ------------------------------------------


def test_the_generation_comes_from_the_package_of_the_models_class():
    tf_keras = require("tf_keras", "Keras 2 fits are tested on tf_keras")
    import keras

    old = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(2,))])
    new = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    assert type(generation_of(old)) is Keras2
    assert generation_of(old).header() == {
        "keras": tf_keras.__version__,
        "keras_package": "tf_keras",
    }
    assert type(generation_of(new)) is Keras3
    # Keras 3's trace header is what it always was
    assert generation_of(new).header() == {"keras": keras.__version__}
    # a subclass defined in the user's own module is still its Keras's
    mine = type("Mine", (tf_keras.Model,), {"__module__": "user_code"})
    assert type(generation_of(mine())) is Keras2
    assert generation_of(None).name == ("keras2" if keras.__version__[0] == "2" else "keras3")


def test_a_keras_that_is_not_recorded_is_named_in_one_line():
    legacy = type("Model", (), {"__module__": "tensorflow.python.keras.engine.training"})
    gen = generation_of(legacy())
    assert isinstance(gen, Unsupported)
    problem = gen.problem(legacy())
    assert problem is not None and "\n" not in problem
    assert "tensorflow.python.keras.engine.training" in problem and "untouched" in problem
    assert generation_of(object()).problem(object()) is None  # no Keras model: as before


def test_a_keras_that_is_not_recorded_is_said_once_and_nothing_is_recorded(capfd, tmp_path):
    import numpy as np

    from gpudiag import DiagnoseCallback

    legacy = type("Model", (), {"__module__": "tensorflow.python.keras.engine.training"})()
    trace = tmp_path / "t.json"
    cb = DiagnoseCallback(trace_path=str(trace), dataset=np.zeros((4, 2)), model=legacy)
    said = capfd.readouterr().err
    assert said.count("gpudiag:") == 1 and "recording off" in said  # when it is made
    cb.set_model(legacy)
    cb.on_train_begin()
    for step in range(3):
        cb.on_train_batch_begin(step)
    cb.on_epoch_end(0)
    cb.on_train_end()
    assert "gpudiag" not in capfd.readouterr().err  # not again at on_train_begin
    assert cb.diagnosis is None and cb._session is None and not trace.exists()


def test_keras_2_under_a_parameter_server_strategy_is_not_recorded():
    require("tf_keras", "Keras 2 fits are tested on tf_keras")
    coordinated = SimpleNamespace(
        distribute_strategy=SimpleNamespace(_should_use_with_coordinator=True)
    )
    problem = Keras2().problem(coordinated)
    assert problem is not None and "ParameterServerStrategy" in problem
    plain = SimpleNamespace(distribute_strategy=SimpleNamespace())
    assert Keras2().problem(plain) is None


def test_keras_2_config_fields_are_read_as_keras_3_names_them():
    tf_keras = require("tf_keras", "Keras 2 fits are tested on tf_keras")
    m = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(2,))])
    assert Keras2().config_fields(m) == {"keras_generation": 2}  # not compiled: no options yet
    m.compile("sgd", "mse", steps_per_execution=8)
    assert Keras2().config_fields(m) == {
        "keras_generation": 2,
        "steps_per_execution": 8,
        "jit_compile": False,
    }
    assert Keras2().steps_per_execution(m) == 8
    m.compile("sgd", "mse", jit_compile=True)
    assert Keras2().config_fields(m)["jit_compile"] is True
    assert Keras2().config_fields(m)["steps_per_execution"] == 1
    assert Keras3().config_fields(m) == {}  # Keras 3 records what it always did


def test_keras_2s_callback_list_takes_the_callback_and_hooks_train_batches_only():
    tf_keras = require("tf_keras", "Keras 2 fits are tested on tf_keras")
    from gpudiag import DiagnoseCallback

    m = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(2,))])
    cb = DiagnoseCallback(quiet=True)
    callbacks = tf_keras.callbacks.CallbackList([cb], add_history=True, model=m, steps=3)
    assert cb.model is m and cb.params["steps"] == 3
    assert callbacks._should_call_train_batch_hooks
    assert not callbacks._should_call_test_batch_hooks
    assert not callbacks._should_call_predict_batch_hooks
    # its logs stay tensors: no conversion (a wait for the device) per batch for gpudiag
    assert callbacks._batch_hooks_support_tf_logs


# ---- real fits ---------------------------------------------------------------------------


@pytest.mark.train
@pytest.mark.timeout(420)
def test_a_python_map_is_data_starved_as_under_keras_3(tmp_path):
    require("tf_keras", "Keras 2 fits are tested on tf_keras")
    two = run("python_map", tmp_path, 2)
    three = run("python_map", tmp_path, 3)
    d2, d3 = two["diagnosis"], three["diagnosis"]
    assert d2["verdict"] == d3["verdict"] == "data-starved"
    assert d2["breakdown"]["input"] >= 0.5
    assert d2["steps"]["analyzed"] == d3["steps"]["analyzed"] == 5  # aligned on Keras 2's marks
    found = {f["id"]: f for f in d2["findings"]}
    assert found["sequential-map"]["source"] == "trace"  # seen in the profile, not only linted
    assert "python-generator" in found
    assert ids(d2) - MACHINE == ids(d3) - MACHINE
    assert own_remedies(d2) == own_remedies(d3)
    # what the run does, read the same from both models; Keras 2's remedies name its API
    config2, config3 = dict(d2["config"]), dict(d3["config"])
    assert config2.pop("keras_generation") == 2 and "keras_generation" not in config3
    assert config2.pop("keras_version").startswith("2.")
    assert config3.pop("keras_version").startswith("3.")
    # the optimizer's name scope in the graph, as each generation names it
    assert (config2.pop("optimizer_scope"), config3.pop("optimizer_scope")) == ("Adam", "adam")
    assert config2 == config3
    # the trace read back by `gpudiag analyze` gives the diagnosis given at the end of fit
    assert analyzed_again(two) == d2


@pytest.mark.train
@pytest.mark.timeout(420)
def test_an_uneven_batch_on_two_replicas_is_warned_of_before_fit(tmp_path):
    require("tf_keras", "Keras 2 fits are tested on tf_keras")
    two = run("uneven_mirrored", tmp_path, 2)
    three = run("uneven_mirrored", tmp_path, 3)
    for result in (two, three):
        err = result["stderr"]
        assert set(result["lint_ids"]) >= PREFIT
        # printed when the callback was made, before fit: under Keras 3 TensorFlow then
        # fails in the first step; Keras 2 trains the uneven split
        before_fit = err[: err.index("calling fit")]
        assert all(i in before_fit for i in PREFIT), err[-3000:]
        assert "for 2 replicas" in before_fit and "drop_remainder=True" in before_fit
    assert three["fit_error"] is not None
    assert two["fit_error"] is None
    d = two["diagnosis"]
    assert d["steps"]["count"] == 8  # 2 epochs of 4 batches, the last of 1 sample
    assert d["config"]["replicas"] == 2 and d["config"]["global_batch"] == 33
    assert len(d["devices"]) == 2  # one row per replica
    assert ids(d) >= PREFIT
    assert analyzed_again(two) == d


@pytest.mark.train
@pytest.mark.timeout(420)
def test_four_replicas_with_a_tiny_batch_are_sync_bound_as_under_keras_3(tmp_path):
    require("tf_keras", "Keras 2 fits are tested on tf_keras")
    two = run("mirrored4", tmp_path, 2)
    three = run("mirrored4", tmp_path, 3)
    for d in (two["diagnosis"], three["diagnosis"]):
        assert d["verdict"] == "sync-bound"
        assert {"exposed-collectives", "small-model-multi-gpu"} <= ids(d)
        assert len(d["devices"]) == 4  # one row per replica
        assert d["config"]["replicas"] == 4 and d["steps"]["analyzed"] == 5
    assert analyzed_again(two) == two["diagnosis"]


@pytest.mark.train
@pytest.mark.timeout(300)
@pytest.mark.parametrize("python", PYTHONS)
def test_a_keras_2_fit_trains_to_the_same_loss_with_the_callback(python, tmp_path):
    if python == sys.executable:
        require("tf_keras", "Keras 2 fits are tested on tf_keras")
    result = run("same_loss", tmp_path, 2, python)
    without, with_cb = result["losses"]
    assert len(with_cb) == 3 and all(math.isfinite(v) for v in with_cb)
    assert with_cb == without
    d = result["diagnosis"]
    assert d["steps"]["count"] == 60 and d["steps"]["analyzed"] >= 5  # a window at least


@pytest.mark.train
@pytest.mark.timeout(300)
@pytest.mark.parametrize("python", PYTHONS)
def test_steps_per_execution_under_keras_2(python, tmp_path):
    if python == sys.executable:
        require("tf_keras", "Keras 2 fits are tested on tf_keras")
    result = run("steps_per_execution", tmp_path, 2, python)
    d = result["diagnosis"]
    assert d["config"]["steps_per_execution"] == 4
    assert d["steps"]["count"] == 144  # batches: 3 epochs of 48, 12 calls each
    # Keras 2 numbers its steps 0, 4, 8, ... in each epoch: every window is matched to the
    # callback's steps, the later epochs' included (12 steps an epoch; the third window may
    # be left out where the machine is so loaded that decoding spends the profiling budget)
    windows = result["windows_taken"]
    assert windows[:2] == [4, 17]
    assert d["steps"]["analyzed"] == 5 * len(windows)
    assert not any("matched" in lim for lim in d["limitations"])


@pytest.mark.train
@pytest.mark.timeout(300)
@pytest.mark.parametrize("python", PYTHONS)
def test_keras_2_in_graph_mode_is_said_once_and_trains_untouched(python, tmp_path):
    if python == sys.executable:
        require("tf_keras", "Keras 2 fits are tested on tf_keras")
    result = run("graph_mode", tmp_path, 2, python)
    assert result["stderr"].count("gpudiag:") == 1
    assert "graph mode" in result["stderr"] and "untouched" in result["stderr"]
    assert result["diagnosis"] is None and not result["trace_exists"]
    assert len(result["losses"]) == 2 and all(math.isfinite(v) for v in result["losses"])


@pytest.mark.train
@pytest.mark.timeout(420)
@pytest.mark.parametrize("python", PYTHONS[1:])
def test_the_other_keras_2_reads_a_python_map_as_data_starved(python, tmp_path):
    result = run("python_map", tmp_path, 2, python)
    d = result["diagnosis"]
    assert d["verdict"] == "data-starved" and d["steps"]["analyzed"] == 5
    assert {"sequential-map", "python-generator", "input-wait"} <= ids(d)
    assert analyzed_again(result) == d


# ---- the remedies, in the fit's own Keras ------------------------------------------------


@pytest.mark.parametrize(
    "kind, stage",
    [("generator", None), ("tf.data", None), ("tf.data", "python"), ("generator", "producer")],
)
def test_remedies_name_keras_2s_api_in_a_keras_2_fit(kind, stage):
    """Keras 2 has no PyDataset: its Python input runs in a Sequence, workers given to fit."""
    from gpudiag.analyze import diagnose
    from gpudiag.trace.model.runconfig import RunConfig
    from tests.helpers.synth import periodic

    def advice(**generation) -> str:
        tl = periodic(input_frac=0.6, compute_frac=0.3)
        tl.meta.config = RunConfig(
            framework="tensorflow",
            input_kind=kind,
            python_ops=True,
            input_stage=stage,
            cores=8,
            **generation,
        )
        d = diagnose([tl])
        assert d.verdict == "data-starved"
        return " ".join(s.title + " " + s.detail for s in d.suggestions)

    keras3, keras2 = advice(), advice(keras_generation=2)
    assert "PyDataset" in keras3  # Keras 3's words stay as they were
    assert "PyDataset" not in keras2
    assert "keras.utils.Sequence" in keras2 and "use_multiprocessing=True" in keras2
    assert "fit(" in keras2 and "workers=" in keras2
