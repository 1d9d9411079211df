"""``slow-source``: records read from files one after another, uncached."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import slow_source as rule
from tests.rules.kit import detect, lint, situation


def test_fires_on_an_uncached_sequential_file_source():
    f = detect(rule, lint(file_source="TFRecordDataset"))
    assert f is not None and f.severity == "info" and "TFRecordDataset" in f.title
    assert detect(rule, lint()) is None


@pytest.mark.parametrize("in_place", [{"cache": True}, {"interleave": True}])
def test_withheld_when_cache_or_interleave_is_on(in_place):
    assert detect(rule, lint(file_source="TFRecordDataset", **in_place)) is None


def test_advice_needs_an_input_wait_above_two_percent():
    f = detect(rule, lint(file_source="TFRecordDataset"))
    assert rule.advise(f, situation(input=0.02)) == []
    (sug,) = rule.advise(f, situation(input=0.03))
    assert sug.title == "Read the source in parallel"


def test_the_gain_is_a_range_not_a_claim():
    (sug,) = rule.advise(detect(rule, lint(file_source="x")), situation(input=0.5))
    assert sug.expected_gain == 1.0  # depends on the storage: not estimated
    assert sug.expected_gain_range == [1.0, 2.0]  # the whole wait removed
