"""gpudiag in a real Jupyter kernel (nbclient + ipykernel on this interpreter): a Keras model
trained with DiagnoseCallback in a cell, the diagnosis shown as the cell's HTML output and
rendered by headless Chromium, ``gpudiag.analyze_traces`` giving the CLI's Diagnosis, and the
progress of an analysis drawn in the cell (rich's notebook support, an ipywidgets Output)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers.chromium import render_in_chromium, root_attrs
from tests.helpers.optional import require
from tests.helpers.paths import REPO, SAMPLES

pytestmark = [pytest.mark.train, pytest.mark.timeout(400)]
pytest.importorskip("tensorflow")
nbformat = require("nbformat", "writes the notebook the test runs")
nbclient = require("nbclient", "runs a notebook in a kernel")
require("ipykernel", "the kernel")
require("ipywidgets", "progress in a cell, gpudiag[notebook]")

W0 = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")  # reads in about a second
TRAIN = """\
import json
import numpy as np
import keras
import tensorflow as tf
import gpudiag
from gpudiag import DiagnoseCallback

rng = np.random.default_rng(0)
x = rng.random((512, 16), dtype=np.float32)
y = rng.random((512, 1), dtype=np.float32)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
model = keras.Sequential(
    [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(1)]
)
model.compile("adam", "mse")
cb = DiagnoseCallback(trace_path={trace!r}, dataset=ds)
model.fit(ds, epochs=2, verbose=0, callbacks=[cb])
"""
ANALYZE = """\
d = gpudiag.analyze_traces(cb.trace_path)
with open({out!r}, "w") as f:
    json.dump(d.to_dict(), f)
d
"""


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("nb")
    trace, out = tmp / "run.json", tmp / "analyzed.json"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(TRAIN.format(trace=str(trace))),
        nbformat.v4.new_code_cell("cb.diagnosis"),
        nbformat.v4.new_code_cell(ANALYZE.format(out=str(out))),
        nbformat.v4.new_code_cell(f"gpudiag.analyze_traces({W0!r}).verdict"),
        nbformat.v4.new_code_cell(  # a kernel without ipywidgets: no progress, no warning
            f"import sys\nsys.modules['ipywidgets'] = None\ngpudiag.analyze_traces({W0!r}).verdict"
        ),
    ]
    client = nbclient.NotebookClient(
        nb,
        timeout=240,
        startup_timeout=120,
        kernel_name="python3",  # ipykernel's own spec: this interpreter
        resources={"metadata": {"path": str(REPO)}},
        shutdown_kernel="immediate",  # TensorFlow may hang a graceful exit
    )
    client.execute()
    return {"nb": nb, "trace": trace, "analyzed": out}


WIDGET = "application/vnd.jupyter.widget-view+json"


def outputs(nb: Any, cell: int) -> list[dict[str, Any]]:
    return [dict(o) for o in nb.cells[cell].outputs]


def html_of(nb: Any, cell: int) -> str:
    found = [o["data"]["text/html"] for o in outputs(nb, cell) if "text/html" in o.get("data", {})]
    assert found, outputs(nb, cell)
    return found[-1]


def test_training_cell_runs_and_writes_the_trace(executed):
    assert not [o for o in outputs(executed["nb"], 0) if o["output_type"] == "error"]
    assert executed["trace"].stat().st_size > 0


def test_the_diagnosis_cell_shows_the_report_and_chromium_renders_it(executed, tmp_path):
    nb = executed["nb"]
    fragment = html_of(nb, 1)
    assert "<html" not in fragment  # a fragment for the cell, not a page
    data = json.loads((executed["analyzed"]).read_text())
    page = f"<!doctype html><html><head></head><body>{fragment}</body></html>"
    dom = render_in_chromium(page, tmp_path)
    assert "data-js-error" not in root_attrs(dom)
    assert 'data-resources="0"' in root_attrs(dom)  # nothing fetched: the cell works offline
    assert 'data-rendered="ok"' in dom  # the report's own script ran to its end
    assert [o["output_type"] for o in outputs(nb, 1)] == ["execute_result"]
    assert data["verdict"] in dom
    for s in data["suggestions"]:
        assert s["title"] in dom


def test_analyze_traces_in_the_kernel_is_the_cli_diagnosis(executed):
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", str(executed["trace"]), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(executed["analyzed"].read_text()) == json.loads(r.stdout)
    assert html_of(executed["nb"], 2) == html_of(executed["nb"], 1)  # same run, same report


def drawn_text(state: dict[str, Any], model_id: str) -> str:
    """What an Output widget showed last, through the Output widgets nested in it."""
    text = []
    for o in state[model_id]["state"]["outputs"]:
        data = o.get("data", {})
        if WIDGET in data:
            text.append(drawn_text(state, data[WIDGET]["model_id"]))
        else:
            text.append(data.get("text/plain", ""))
    return " ".join(text)


def test_progress_of_a_longer_analysis_is_drawn_in_the_cell(executed):
    nb = executed["nb"]
    cell = outputs(nb, 3)
    # one Output holding the progress (closed at the end, so rich's empty trailing output
    # stays inside it), then the answer: nothing else in the cell
    assert [list(o.get("data", {})) for o in cell] == [
        ["text/plain", WIDGET],
        ["text/plain"],
    ], cell
    assert cell[1]["data"]["text/plain"] == "'data-starved'"
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    text = drawn_text(state, cell[0]["data"][WIDGET]["model_id"])
    assert "reading" in text or "analyzing" in text, text


def test_without_ipywidgets_the_answer_alone(executed):
    assert outputs(executed["nb"], 4) == [
        {
            "output_type": "execute_result",
            "metadata": {},
            "data": {"text/plain": "'data-starved'"},
            "execution_count": 5,
        }
    ]
