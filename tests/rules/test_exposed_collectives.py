"""``exposed-collectives``: gradient all-reduce not hidden under compute."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import batch_scaled
from gpudiag.analyze.rules import exposed_collectives as rule
from tests.rules.kit import evidence, situation, text


def found(sync: float, tl_extra: dict | None = None, **config):
    ev = evidence(config=config, sync_frac=sync, overlap_sync_frac=0.1, compute_frac=0.5)
    ev.timeline.meta.extra.update(tl_extra or {})
    return rule.detect(ev)


@pytest.mark.parametrize(
    ("sync", "found_as"),
    [
        (T.SYNC_NOTE + 0.01, "moderate"),
        (T.SYNC_NOTE - 0.01, None),
        (T.SYNC_HIGH + 0.01, "high"),
        (T.SYNC_HIGH - 0.01, "moderate"),
    ],
)
def test_thresholds(sync, found_as):
    f = found(sync)
    assert (f.severity if f else None) == found_as


def test_evidence_separates_exposed_from_hidden():
    f = found(0.2)
    assert f.evidence["exposed_sync_pct"] == pytest.approx(20.0)
    assert f.evidence["collective_pct"] == pytest.approx(30.0)
    assert f.evidence["overlapped_pct"] == pytest.approx(33.3, abs=0.1)


def test_advises_a_bigger_batch_amortising_the_all_reduce():
    f = found(0.2, framework="tensorflow")
    cfg = {"framework": "tensorflow", "replicas": 2, "global_batch": 64}
    (sug,) = rule.advise(f, situation(cfg, sync=0.2))
    assert sug.title == "Give each replica more work per all-reduce"
    assert "(now 32 per replica)" in sug.detail
    assert sug.expected_gain == pytest.approx(batch_scaled(0.2, rule.BATCH_FACTOR))


def test_pytorch_hears_about_ddp_and_no_sync():
    (sug,) = rule.advise(found(0.2), situation({"framework": "pytorch"}, sync=0.2))
    assert "no_sync()" in sug.detail and "bucket_cap_mb" in sug.detail


def test_expert_all_to_all_is_overlapped_not_batched():
    f = found(0.2, {"communication_us": {"DeepEP": 100.0}})
    assert f.title.startswith("Expert all-to-all")
    (sug,) = rule.advise(f, situation({"framework": "pytorch"}, sync=0.2))
    assert sug.title == "Overlap expert all-to-all with compute"
    assert "accumulate" not in sug.detail


def test_inference_gets_no_gradient_advice():
    f = found(0.2, training=False)
    assert f.title.startswith("Communication")
    sugs = rule.advise(f, situation({"training": False}, sync=0.2))
    assert "gradient" not in text(sugs).lower()
