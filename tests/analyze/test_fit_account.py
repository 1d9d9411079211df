"""The fit account (analyze/fit_account.py) on fits whose every part is known, the headline
it puts first and the step gains restated over the fit (analyze/fit_gain.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.diagnosis import Suggestion
from gpudiag.analyze.fit_account import PARTS, fit_account
from gpudiag.analyze.fit_gain import headline, over_fit
from tests.helpers.fit_synth import fit_timeline
from tests.helpers.synth import periodic


def seconds(**kw):
    acc = fit_account(fit_timeline(**kw))
    assert acc.measured
    assert sum(acc.parts.values()) == pytest.approx(acc.wall_s, rel=1e-6)
    return acc, acc.parts


def test_each_part_is_found_where_it_was_put():
    acc, p = seconds(validation_s=1.0, callback_s=0.6, first_wait_s=0.3, teardown_s=0.1, own_s=0.02)
    assert p["validation"] == pytest.approx(3.0, abs=1e-3)
    assert p["callbacks"] == pytest.approx(1.8, abs=1e-3)
    assert p["gpudiag"] == pytest.approx(0.06, abs=1e-3)
    # three epochs of first-batch wait and teardown; the first epoch's compilation apart
    assert p["epoch_start"] == pytest.approx(3 * 0.4, abs=1e-3)
    assert acc.compile_s == pytest.approx(0.5, abs=1e-3)
    assert p["startup"] == pytest.approx(0.1 + 0.5, abs=1e-3)
    assert p["steps"] == pytest.approx(3 * 50 * 0.002, abs=1e-3)
    assert p["other"] == pytest.approx(0.0, abs=1e-3)
    assert acc.epoch_start_s == pytest.approx([0.4, 0.4, 0.4], abs=1e-3)
    assert acc.callbacks == pytest.approx({"ModelCheckpoint": 1.8}, abs=1e-3)
    assert acc.steps_per_epoch == 50


def test_gpudiags_own_time_is_never_the_callbacks():
    _, p = seconds(callback_s=0.2, own_s=0.3)
    assert p["callbacks"] == pytest.approx(0.6, abs=1e-3)
    assert p["gpudiag"] == pytest.approx(0.9, abs=1e-3)


def test_a_callback_listed_before_gpudiag_is_not_counted_in_the_last_step():
    _, p = seconds(callback_s=0.6, callback_first=True, teardown_s=0.1)
    assert p["callbacks"] == pytest.approx(1.8, abs=1e-3)
    assert p["epoch_start"] == pytest.approx(0.3, abs=1e-3)  # the teardown alone
    assert p["steps"] == pytest.approx(0.3, abs=1e-3)


def test_untimed_callbacks_are_the_time_between_epochs_nothing_else_explains():
    acc, p = seconds(callback_s=0.5, own_s=0.01, timed=False)
    assert not acc.callbacks_timed
    assert p["callbacks"] == pytest.approx(1.5, abs=1e-3)
    assert p["gpudiag"] == pytest.approx(0.03, abs=1e-3)


def test_a_one_off_stall_between_epochs_is_left_over_not_an_epoch_start():
    _, p = seconds(stall_s=1.0)
    assert p["epoch_start"] == pytest.approx(0.0, abs=1e-3)
    assert p["other"] == pytest.approx(1.0, abs=1e-3)


def test_a_one_off_wait_at_one_epochs_start_is_not_the_refill_of_every_epoch():
    _, p = seconds(first_wait_s=0.2, spike_s=1.5)
    # the last epoch's 1.7 s capped at twice the least later epoch's 0.2 s; the first
    # epoch's at the later ones' median
    assert p["epoch_start"] == pytest.approx(0.3 + 0.2 + 0.4, abs=1e-3)
    assert p["other"] == pytest.approx(1.3, abs=1e-3)


def test_one_epoch_cannot_tell_its_start_from_compilation():
    acc, p = seconds(epochs=1, first_wait_s=0.3)
    assert p["epoch_start"] == 0.0
    assert p["startup"] == pytest.approx(0.1 + 0.5 + 0.3, abs=1e-3)
    assert acc.epoch_start_s == []


def test_a_killed_fit_without_its_fit_span_still_accounts_from_its_epochs():
    acc = fit_account(fit_timeline(validation_s=0.5, fit_span=False))
    assert acc.measured
    assert acc.parts["validation"] == pytest.approx(1.5, abs=1e-3)


def test_a_profile_of_steps_only_is_not_measured_and_says_so():
    acc = fit_account(periodic(steps=10))
    assert not acc.measured and "not measured" in acc.reason
    d = diagnose([periodic(steps=10)])
    assert d.run["fit"] == {"measured": False, "reason": acc.reason}


def test_the_headline_speaks_to_the_fit_when_the_steps_are_a_minority():
    d = diagnose([fit_timeline(validation_s=1.0, callback_s=0.6)])
    fit = d.run["fit"]
    assert set(fit["shares"]) == set(PARTS)
    assert fit["shares"]["steps"] < 0.5
    assert d.reason.startswith(f"training steps are {100 * fit['shares']['steps']:.0f}% of")
    assert "validation" in d.reason.split(". In the training steps")[0]
    assert "In the training steps: the device computes" in d.reason
    assert d.verdict == "compute-bound"  # the step verdict is the steps'


def test_no_fit_headline_where_the_steps_hold_most_of_the_fit():
    d = diagnose([fit_timeline(steps=2000, compile_s=0.1)])
    assert d.run["fit"]["shares"]["steps"] > 0.5
    assert headline(fit_account(fit_timeline(steps=2000))) == ""
    assert not d.reason.startswith("training steps are")


def test_a_long_start_up_alone_keeps_the_step_figures():
    """A fixed cost a longer fit amortises: no restatement, no fit headline."""
    acc = fit_account(fit_timeline(compile_s=5.0))
    assert acc.share("steps") < 0.5 and headline(acc) == ""


def test_step_gains_are_restated_over_the_fit():
    acc = fit_account(fit_timeline(validation_s=1.0))
    p = acc.share("steps")
    sug = Suggestion("Run 8 steps per execution", "", 3.0, "basis", "host-overhead", [2.0, 4.0])
    fit = Suggestion("Validate every 3 epochs", "", 1.5, "basis", "validation-heavy", [1.5, 1.5])
    (a, b) = over_fit([sug, fit], acc)
    assert a.expected_gain == pytest.approx(1 / ((1 - p) + p / 3.0))
    assert a.expected_gain_range[0] == pytest.approx(1 / ((1 - p) + p / 2.0), abs=0.01)
    assert "3.00× on the training steps" in a.basis
    assert b.expected_gain == 1.5  # already a gain of the fit
