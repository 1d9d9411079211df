"""``no-prefetch``: nothing overlaps input with compute (TF's automatic prefetch off too)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import no_prefetch as rule
from tests.rules.kit import detect, lint, situation, titles

OFF = {"input_kind": "tf.data", "prefetch": False, "root_prefetch": False}
PREFETCH = "Prefetch so input overlaps compute"


@pytest.mark.parametrize(
    ("change", "fires"),
    [
        ({}, True),
        ({"prefetch": True}, False),  # the user's own prefetch
        ({"root_prefetch": True}, False),  # TF's automatic one
        ({"root_prefetch": None}, False),  # unknown: TF injects one by default
        ({"input_kind": "generator"}, False),  # Keras prefetches generators itself
    ],
)
def test_fires_only_when_both_prefetches_are_off(change, fires):
    assert (detect(rule, lint(**{**OFF, **change})) is not None) is fires


def test_severity_follows_the_work_left_unoverlapped():
    assert detect(rule, lint(**OFF)).severity == "info"
    assert detect(rule, lint(**OFF, sequential_maps=1)).severity == "moderate"
    assert detect(rule, lint(**OFF, python_ops=True)).severity == "moderate"


def test_advises_a_prefetch_worth_the_overlap():
    f = detect(rule, lint(**OFF))
    sugs = rule.advise(f, situation({**OFF, "cores": 4}, input=0.3, compute=0.6))
    sug = next(s for s in sugs if s.title == PREFETCH)
    assert sug.expected_gain == pytest.approx(1 / 0.7)


@pytest.mark.parametrize("in_place", [{"prefetch": True}, {"root_prefetch": True}])
def test_withheld_when_a_prefetch_is_on(in_place):
    f = detect(rule, lint(**OFF))
    cfg = {**OFF, "cores": 4, **in_place}
    assert PREFETCH not in titles(rule.advise(f, situation(cfg, input=0.3, compute=0.6)))
