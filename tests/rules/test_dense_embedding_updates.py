"""``dense-embedding-updates``: an optimizer updating a large embedding densely, on both sides
of its thresholds (the same cause planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import (
    dense_embedding_updates,
)
from tests.rules.kit import evidence, situation

CPU = {"device_type": "CPU"}


EMB = {
    "optimizer": "Adam",
    "optimizer_sparse": False,
    "embedding_layer": "embedding",
    "embedding_rows": 300_000,
    "embedding_values": 300_000 * 64,
    "embedding_lookups": 5,
    "global_batch": 32,
    "params": 300_000 * 64 + 65,
}


@pytest.mark.parametrize(
    ("change", "fires"),
    [
        ({}, True),
        ({"optimizer_sparse": True}, False),
        ({"embedding_values": dense_embedding_updates.MIN_VALUES - 1}, False),
        ({"embedding_values": dense_embedding_updates.MIN_VALUES}, True),
        # a batch that looks up more than a tenth of the rows: the dense update is little waste
        ({"embedding_rows": 1500, "embedding_values": 1500 * 1000}, False),
    ],
)
def test_dense_embedding_lint_thresholds(change, fires):
    assert (dense_embedding_updates.check(_cfg({**EMB, **change})) is not None) is fires


def _cfg(d):
    from gpudiag.trace.model.runconfig import RunConfig

    return RunConfig(**d)


def test_dense_embedding_withdrawn_where_the_profile_shows_the_update_small():
    f = dense_embedding_updates.check(_cfg(EMB))
    ev = evidence(config=EMB, compute_frac=0.9)
    ev.timeline.meta.extra.update(optimizer_us=900.0, op_us=1000.0)
    kept = dense_embedding_updates.refine(f, ev)
    assert kept is not None and kept.severity == "high"
    assert kept.evidence["table_update_pct"] == pytest.approx(81.0, abs=0.5)
    sugs = dense_embedding_updates.advise(kept, situation(config=EMB, compute=0.9))
    assert [s.remedy for s in sugs] == ["sparse-embedding-updates", "smaller-vocabulary"]
    assert sugs[0].expected_gain_range[-1] <= 1 / (1 - 0.81) + 1e-6
    ev.timeline.meta.extra.update(optimizer_us=40.0, op_us=1000.0)  # 3.6% of the step
    assert dense_embedding_updates.refine(f, ev) is None
