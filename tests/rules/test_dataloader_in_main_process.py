"""``dataloader-in-main-process``: a PyTorch DataLoader with num_workers=0."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import pipelined, spread
from gpudiag.analyze.rules import dataloader_in_main_process as rule
from tests.helpers.synth import periodic
from tests.rules.kit import evidence, situation

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def found(inp: float, workers: int | None = 0, **config: str):
    tl = periodic(input_frac=inp, compute_frac=0.5)
    tl.input_wait_names = {LOADER: 10 * inp * 1000}
    tl.pipeline["dataloader_workers"] = workers
    cfg = {"framework": "pytorch", "input_kind": "dataloader", **config}
    return rule.detect(evidence(tl, cfg))


@pytest.mark.parametrize("kind", ["pydataset", "generator", "array", "unknown"])
def test_withheld_for_the_dataloader_keras_torch_makes_itself(kind):
    """Keras's torch backend wraps these inputs in a DataLoader of its own (num_workers=0):
    its num_workers is not the user's to set."""
    assert found(0.4, framework="torch", input_kind=kind) is None
    assert found(0.4, framework="torch", input_kind="dataloader") is not None


@pytest.mark.parametrize(
    ("inp", "severity"), [(T.INPUT_HIGH + 0.01, "high"), (T.INPUT_HIGH - 0.01, "moderate")]
)
def test_severity_from_the_input_share(inp, severity):
    f = found(inp)
    assert f.severity == severity
    assert f.evidence["dataloader_share_pct"] == pytest.approx(100 * inp, abs=0.1)


def test_withheld_when_the_loader_has_workers_or_the_count_is_unknown():
    assert found(0.3, workers=4) is None  # dataloader-starved speaks then
    assert found(0.3, workers=None) is None


def test_workers_from_the_cores_the_run_has():
    f = found(0.4)
    (sug,) = rule.advise(f, situation({"cores": 8}, input=0.4))
    assert "num_workers=8" in sug.detail
    assert sug.expected_gain == pytest.approx(spread(0.4, 8))
    assert sug.expected_gain_range[1] == pytest.approx(round(pipelined(0.4, 8), 2))
    (dflt,) = rule.advise(f, situation(input=0.4))
    assert f"num_workers={rule.DEFAULT_WORKERS}" in dflt.detail
