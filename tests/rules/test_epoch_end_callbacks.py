"""``epoch-end-callbacks``: callbacks' epoch hooks take a large share of the fit."""

from __future__ import annotations

import pytest

from gpudiag.analyze.fit_account import fit_account
from gpudiag.analyze.fit_gain import PART_HIGH, PART_NOTE, PART_SHARE
from gpudiag.analyze.rules import epoch_end_callbacks as rule
from tests.helpers.fit_synth import fit_timeline
from tests.rules.kit import evidence, situation, titles

KERAS_CHECKPOINT = {"class": "ModelCheckpoint", "save_freq": "epoch", "timed": True}


def callback_for(share: float) -> float:
    rest = fit_account(fit_timeline()).wall_s
    return share * rest / (1 - share) / 3


def found(share: float = 0.4, **kw):
    ev = evidence(fit_timeline(callback_s=callback_for(share), **kw))
    f = rule.detect(ev)
    s = situation()
    s.fit = ev.fit
    return f, (rule.advise(f, s) if f is not None else [])


@pytest.mark.parametrize(("share", "fires"), [(PART_NOTE + 0.01, True), (PART_NOTE - 0.01, False)])
def test_share_threshold(share, fires):
    assert (found(share)[0] is not None) is fires


@pytest.mark.parametrize(
    ("share", "severity"),
    [
        (PART_HIGH + 0.01, "high"),
        (PART_HIGH - 0.01, "moderate"),
        (PART_SHARE + 0.01, "moderate"),
        (PART_SHARE - 0.01, "info"),
    ],
)
def test_severity_and_the_callback_named(share, severity):
    f, _ = found(share)
    assert f.severity == severity
    assert f.evidence["callbacks_pct"] == pytest.approx(100 * share, abs=0.2)
    assert f.title.endswith(f"(ModelCheckpoint {3 * callback_for(share):.1f} s)")


def test_a_checkpoints_remedies_bounded_by_its_own_time():
    _, sugs = found(0.4, facts=[dict(KERAS_CHECKPOINT, save_weights_only=False)])
    assert titles(sugs) == [
        "Checkpoint every 3 epochs",
        "Save the weights only",
        "Save to local disk, copy in the background",
    ]
    acc = fit_account(fit_timeline(callback_s=callback_for(0.4)))
    bound = acc.wall_s / (acc.wall_s - acc.parts["callbacks"])
    assert all(s.expected_gain_range[-1] <= bound + 0.01 for s in sugs)
    assert "save_freq=150" in sugs[0].detail  # 3 epochs of 50 batches
    assert sugs[2].expected_gain == 1.0  # not estimated: where the copy goes is not known


def test_save_weights_only_not_offered_when_set():
    _, sugs = found(facts=[dict(KERAS_CHECKPOINT, save_weights_only=True)])
    assert "Save the weights only" not in titles(sugs)


def test_tensorboard_histograms_only_where_on():
    board = {"class": "TensorBoard", "histogram_freq": 1, "write_images": False, "timed": True}
    _, sugs = found(callback="TensorBoard", facts=[board])
    assert titles(sugs) == ["Write fewer TensorBoard summaries"]
    assert "now histogram_freq=1" in sugs[0].detail and "update_freq" not in sugs[0].detail
    _, sugs = found(callback="TensorBoard", facts=[dict(board, update_freq="batch")])
    assert "update_freq='epoch'" in sugs[0].detail
    _, sugs = found(callback="TensorBoard", facts=[dict(board, histogram_freq=0)])
    assert titles(sugs) == ["Run TensorBoard every 3 epochs"]


def test_a_users_own_callback_run_less_often():
    _, sugs = found(callback="SlowMetric", facts=[{"class": "SlowMetric", "timed": True}])
    assert titles(sugs) == ["Run SlowMetric every 3 epochs"]
    assert sugs[0].expected_gain > 1.0


def test_untimed_callbacks_are_named_with_gains_bounded_by_all_of_it():
    facts = [dict(KERAS_CHECKPOINT, timed=False), {"class": "History"}]
    f, sugs = found(timed=False, facts=facts)
    assert f.evidence["callbacks"] == "ModelCheckpoint" and not f.evidence["timed"]
    assert sugs and all(s.expected_gain_range[0] == 1.0 for s in sugs)


def test_gpudiags_own_time_raises_nothing():
    ev = evidence(fit_timeline(own_s=callback_for(0.4)))
    assert ev.fit.share("gpudiag") > PART_SHARE and rule.detect(ev) is None
