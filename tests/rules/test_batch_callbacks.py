"""``batch-callbacks``: per-batch callback work, on both sides of its thresholds (the same cause
planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.fit_gain import PART_NOTE
from gpudiag.analyze.rules import (
    batch_callbacks,
)
from tests.helpers.fit_synth import fit_timeline
from tests.rules.kit import evidence, situation

CPU = {"device_type": "CPU"}


def _batch_tl(seconds: float, predict_calls: int = 0):
    tl = fit_timeline()
    row = {"s": seconds, "calls": 150}
    if predict_calls:
        row.update(predict_calls=predict_calls, predict_s=seconds * 0.95)
    tl.meta.extra["batch_callbacks"] = {"PredictEvery": row}
    return tl


def _steps_s() -> float:
    return evidence(fit_timeline()).fit.parts["steps"]


@pytest.mark.parametrize(("share", "fires"), [(PART_NOTE + 0.01, True), (PART_NOTE - 0.01, False)])
def test_batch_callbacks_share_threshold(share, fires):
    wall = evidence(fit_timeline()).fit.wall_s
    ev = evidence(_batch_tl(share * wall))
    assert (batch_callbacks.detect(ev) is not None) is fires


def test_batch_callbacks_remedies_bounded_by_their_own_time():
    wall = evidence(fit_timeline()).fit.wall_s
    seconds = min(0.4 * wall, 0.9 * _steps_s())
    ev = evidence(_batch_tl(seconds, predict_calls=75))
    f = batch_callbacks.detect(ev)
    s = situation()
    s.fit = ev.fit
    sugs = batch_callbacks.advise(f, s)
    assert [x.remedy for x in sugs] == ["predict-on-batch", "callback-less-often"]
    bound = ev.fit.wall_s / (ev.fit.wall_s - ev.fit.parts["batch_callbacks"])
    assert all(x.expected_gain_range[-1] <= bound + 0.01 for x in sugs)
