"""``dataloader-starved``: a PyTorch DataLoader with workers still leaves the GPU waiting."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import pipelined
from gpudiag.analyze.rules import dataloader_starved as rule
from tests.helpers.synth import periodic
from tests.rules.kit import evidence, situation

LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def found(inp: float, workers: int | None = 4, **config: str):
    tl = periodic(input_frac=inp, compute_frac=0.5)
    tl.input_wait_names = {LOADER: 10 * inp * 1000}
    tl.pipeline["dataloader_workers"] = workers
    cfg = {"framework": "pytorch", "input_kind": "dataloader", **config}
    return rule.detect(evidence(tl, cfg))


def test_withheld_for_the_dataloader_keras_torch_makes_itself():
    assert found(0.4, framework="torch", input_kind="pydataset") is None
    assert found(0.4, framework="torch", input_kind="dataloader") is not None


@pytest.mark.parametrize(
    ("inp", "found_as"),
    [
        (T.INPUT_MODERATE + 0.01, "moderate"),
        (T.INPUT_MODERATE - 0.01, None),
        (T.INPUT_HIGH + 0.01, "high"),
        (T.INPUT_HIGH - 0.01, "moderate"),
    ],
)
def test_thresholds(inp, found_as):
    f = found(inp)
    assert (f.severity if f else None) == found_as


def test_main_process_loading_is_left_to_dataloader_in_main_process():
    assert found(0.3, workers=0) is None
    assert found(0.3, workers=None) is None


def test_evidence_per_step():
    f = found(0.3)
    assert f.evidence["dataloader_wait_per_step_ms"] == 0.3
    assert f.evidence["num_workers"] == 4


def test_advises_more_workers_and_gpu_decoding():
    (sug,) = rule.advise(found(0.3), situation({"framework": "pytorch"}, input=0.3))
    assert "prefetch_factor" in sug.detail and "persistent_workers" in sug.detail
    assert sug.expected_gain == pytest.approx(pipelined(0.3, rule.MORE_WORKERS))
    assert sug.expected_gain_range[0] == 1.0  # nothing if the host CPU is saturated
