"""``communication-hidden``: much communication, hidden under compute: reported, not fixed."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.rules import communication_hidden as rule
from tests.rules.kit import evidence, situation


def found(total: float, exposed: float = 0.0, libs: dict | None = None):
    ev = evidence(overlap_sync_frac=total - exposed, sync_frac=exposed, compute_frac=0.6)
    ev.timeline.meta.extra["communication_us"] = libs or {}
    return rule.detect(ev)


@pytest.mark.parametrize(
    ("total", "fires"), [(rule.TOTAL_NOTE + 0.01, True), (rule.TOTAL_NOTE - 0.01, False)]
)
def test_total_threshold(total, fires):
    assert (found(total) is not None) is fires


@pytest.mark.parametrize(
    ("exposed", "fires"), [(T.SYNC_NOTE - 0.01, True), (T.SYNC_NOTE + 0.01, False)]
)
def test_exposed_communication_is_left_to_exposed_collectives(exposed, fires):
    assert (found(0.4, exposed) is not None) is fires


def test_names_the_library_and_what_is_hidden():
    f = found(0.5, 0.02, {"DeepEP": 4000.0, "NCCL": 1000.0})
    assert f.severity == "info" and f.title.startswith("DeepEP communication")
    assert f.evidence["collective_pct"] == pytest.approx(50.0)
    assert f.evidence["libraries_ms"] == {"DeepEP": 4.0, "NCCL": 1.0}


def test_advises_nothing():
    assert rule.advise(found(0.5), situation(compute=0.6)) == []
