"""``small-model-multi-gpu``: replicas for a model or per-replica batch too small to hide the
all-reduce."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import small_model_multi_gpu as rule
from tests.rules.kit import detect, lint, situation

P, B = rule.SMALL_MODEL_PARAMS, rule.SMALL_PER_REPLICA_BATCH


@pytest.mark.parametrize(
    ("params", "per_replica", "fires"),
    [
        (P - 1, 4 * B, True),  # small model, big batch
        (P, 4 * B, False),
        (10 * P, B - 1, True),  # big model, small batch
        (10 * P, B, False),
        (None, B, False),  # unknown size is not small
    ],
)
def test_thresholds(params, per_replica, fires):
    f = detect(rule, lint(replicas=2, global_batch=2 * per_replica, params=params))
    assert (f is not None) is fires


def test_one_replica_is_never_flagged():
    assert detect(rule, lint(replicas=1, global_batch=4, params=10)) is None


def test_advises_more_work_per_all_reduce_when_sync_is_exposed():
    f = detect(rule, lint(replicas=2, global_batch=8, params=10, framework="tensorflow"))
    one, sug = rule.advise(f, situation({"replicas": 2, "global_batch": 8}, sync=0.2))
    assert one.title == "Train on one replica (fewer devices)"
    assert sug.title == "Give each replica more work per all-reduce"
    assert "now 4 per replica" in sug.detail and "fewer devices" in sug.detail
    assert sug.expected_gain > 1.1


def test_only_fewer_replicas_while_the_all_reduce_costs_nothing():
    f = detect(rule, lint(replicas=2, global_batch=8, params=10))
    titles = [s.title for s in rule.advise(f, situation(sync=0.02))]
    assert titles == ["Train on one replica (fewer devices)"]
    assert len(rule.advise(f, situation(sync=0.03))) == 2


def test_one_replica_gain_from_the_shares():
    """compute 10% x 2 on one device, host work 90% paid once instead of twice: 1/0.65."""
    f = detect(rule, lint(replicas=2, global_batch=8, params=10))
    (one,) = rule.advise(f, situation(compute=0.1, other=0.9))
    assert one.expected_gain == pytest.approx(1 / (0.1 * 2 + 0.9 / 2), abs=0.01)
    assert one.expected_gain_range == [1.0, pytest.approx(1 / (0.1 + 0.45), abs=0.01)]
