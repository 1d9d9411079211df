"""``input-wait``: the device waits for its next batch."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.rules import input_wait as rule
from tests.rules.kit import evidence, situation, titles

NATIVE = {"input_kind": "tf.data", "sequential_maps": 1, "root_prefetch": True, "cores": 4}


@pytest.mark.parametrize(
    ("inp", "found"),
    [
        (T.INPUT_MODERATE + 0.01, "moderate"),
        (T.INPUT_MODERATE - 0.01, None),
        (T.INPUT_HIGH + 0.01, "high"),
        (T.INPUT_HIGH - 0.01, "moderate"),
    ],
)
def test_thresholds(inp, found):
    f = rule.detect(evidence(input_frac=inp, compute_frac=0.5))
    assert (f.severity if f else None) == found


def test_names_where_the_host_waited():
    f = rule.detect(evidence(input_frac=0.3))
    assert f.evidence["waiting_in"] == {"IteratorGetNextOp::DoCompute": 3.0}  # 10 × 0.3 ms
    assert f.evidence["steps"] == 10


def test_no_finding_without_analysed_steps():
    from gpudiag.trace.model.timeline import Timeline

    assert rule.detect(evidence(Timeline())) is None


def test_native_tf_data_gets_a_parallel_map():
    f = rule.detect(evidence(input_frac=0.4))
    assert "Parallelise the tf.data map" in titles(rule.advise(f, situation(NATIVE, input=0.4)))


def test_unknown_input_gets_asked_what_it_runs():
    f = rule.detect(evidence(input_frac=0.4))
    (sug,) = rule.advise(f, situation({"cores": 4}, input=0.4))
    assert sug.title == "Find out what the input pipeline spends its time on"
    assert sug.expected_gain == 1.0


@pytest.mark.parametrize(
    ("in_place", "withheld"),
    [
        ({"sequential_maps": 0, "parallel_maps": 1}, "Parallelise the tf.data map"),
        ({"root_prefetch": None}, "Prefetch so input overlaps compute"),
        ({"prefetch": True, "root_prefetch": False}, "Prefetch so input overlaps compute"),
    ],
)
def test_withheld_when_already_in_place(in_place, withheld):
    f = rule.detect(evidence(input_frac=0.4))
    off = {**NATIVE, "root_prefetch": False}
    assert withheld in titles(rule.advise(f, situation(off, input=0.4)))
    assert withheld not in titles(rule.advise(f, situation({**off, **in_place}, input=0.4)))


def test_a_pytorch_dataloader_is_left_to_the_dataloader_rules():
    f = rule.detect(evidence(input_frac=0.4))
    assert rule.advise(f, situation({"input_kind": "dataloader", "cores": 4}, input=0.4)) == []
