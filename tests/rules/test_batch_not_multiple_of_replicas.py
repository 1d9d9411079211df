"""``batch-not-multiple-of-replicas``: a global batch that does not split over the replicas."""

from __future__ import annotations

import pytest

from gpudiag.analyze import ranking, rules
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.rules import batch_not_multiple_of_replicas as rule
from gpudiag.trace.model.runconfig import RunConfig
from tests.rules.kit import detect, lint, situation


@pytest.mark.parametrize(
    ("batch", "replicas", "fires"),
    [(98, 4, True), (96, 4, False), (97, 1, False), (3, 4, True), (None, 4, False)],
)
def test_fires_only_on_a_remainder_over_several_replicas(batch, replicas, fires):
    f = detect(rule, lint(global_batch=batch, replicas=replicas))
    assert (f is not None) is fires
    if f is not None:
        assert f.severity == "high" and f.source == "lint"
        assert f.evidence["remainder"] == batch % replicas


def test_names_the_two_nearest_batches_that_divide():
    f = detect(rule, lint(global_batch=98, replicas=4))
    assert "96 or 100" in f.evidence["fix"]
    # below one sample per replica the smallest even split is one each
    assert "4 or 4" in detect(rule, lint(global_batch=3, replicas=4)).evidence["fix"]


def test_the_fix_is_a_correctness_fix_shown_first_whatever_its_gain():
    f = detect(rule, lint(global_batch=98, replicas=4))
    (sug,) = rule.advise(f, situation())
    assert sug.expected_gain == 1.0 and sug.expected_gain_range == []
    slow = Finding("xla-off", "info", "t", {"compute_share_pct": 90.0})
    ranked = ranking.advise([slow, f], situation({"framework": "tensorflow"}, compute=0.9))
    assert ranked[0].finding == rule.ID


def test_withheld_when_the_batch_already_divides():
    found = rules.lint(RunConfig(global_batch=96, replicas=4))
    assert rule.ID not in [f.id for f in found]
    assert rule.ID in [f.id for f in rules.lint(RunConfig(global_batch=98, replicas=4))]
