"""``partial-last-batch``: a short last batch leaves some replicas few or no samples."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import partial_last_batch as rule
from tests.rules.kit import detect, lint, situation

RAGGED = {"global_batch": 64, "replicas": 4, "samples": 1000, "drop_remainder": False}


@pytest.mark.parametrize(
    ("change", "fires"),
    [
        ({}, True),
        ({"samples": 1024}, False),  # divides: no last short batch
        ({"replicas": 1}, False),  # one replica gets the whole short batch
        ({"drop_remainder": None}, False),  # unknown is not "off"
    ],
)
def test_fires_on_a_kept_short_batch_over_several_replicas(change, fires):
    f = detect(rule, lint(**{**RAGGED, **change}))
    assert (f is not None) is fires
    if f is not None:
        assert f.evidence["last_batch"] == 1000 % 64
        assert f.source == "lint"


def test_batchnorm_makes_it_high():
    assert detect(rule, lint(**RAGGED)).severity == "moderate"
    f = detect(rule, lint(**RAGGED, batchnorm=True))
    assert f.severity == "high" and "BatchNormalization" in f.title


def test_advises_drop_remainder_as_a_correctness_fix():
    (sug,) = rule.advise(detect(rule, lint(**RAGGED)), situation())
    assert "drop_remainder=True" in sug.detail and sug.expected_gain == 1.0


def test_withheld_when_drop_remainder_is_on():
    assert detect(rule, lint(**{**RAGGED, "drop_remainder": True})) is None
