"""``validation-heavy``: validation inside fit takes a large share of the fit."""

from __future__ import annotations

import pytest

from gpudiag.analyze.fit_account import fit_account
from gpudiag.analyze.fit_gain import PART_HIGH, PART_NOTE, PART_SHARE
from gpudiag.analyze.rules import validation_heavy as rule
from tests.helpers.fit_synth import fit_timeline
from tests.rules.kit import evidence, situation, titles


def share_of(validation_s: float) -> float:
    return fit_account(fit_timeline(validation_s=validation_s)).share("validation")


def validation_for(share: float) -> float:
    """The validation seconds that make ``share`` of the synthetic fit."""
    rest = fit_account(fit_timeline()).wall_s
    return share * rest / (1 - share) / 3


def found(share: float, **config):
    tl = fit_timeline(validation_s=validation_for(share))
    ev = evidence(tl, config={"framework": "tensorflow", **config})
    return rule.detect(ev), ev


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
def test_severity(share, severity):
    f, _ = found(share)
    assert f.severity == severity
    assert f.evidence["validation_pct"] == pytest.approx(100 * share, abs=0.2)


def remedies(share: float = 0.4, **config):
    f, ev = found(share, **config)
    s = situation({"framework": "tensorflow", "global_batch": 16, **config}, other=0.9)
    s.fit, s.step_ms = ev.fit, 2.0
    return rule.advise(f, s)


def test_remedies_each_bounded_by_the_validation_it_removes():
    sugs = remedies()
    assert titles(sugs) == [
        "Validate every 3 epochs",
        "Validate in 4× larger batches",
        "Run 8 steps per execution",
        "Validate on a smaller set",
    ]
    acc = fit_account(fit_timeline(validation_s=validation_for(0.4)))
    everything = acc.wall_s / (acc.wall_s - acc.parts["validation"])
    for s in sugs:
        assert 1.0 < s.expected_gain <= s.expected_gain_range[-1] + 0.005 <= everything + 0.01
    # two of three runs go: exactly that much of the fit
    two_thirds = acc.wall_s / (acc.wall_s - acc.parts["validation"] * 2 / 3)
    assert sugs[0].expected_gain == pytest.approx(two_thirds)
    assert "validation_batch_size=64" in sugs[1].detail


def test_steps_per_execution_not_offered_when_on():
    assert "Run 8 steps per execution" not in titles(remedies(steps_per_execution=4))


def test_steps_per_execution_counts_the_training_steps_where_host_overhead_holds():
    f, ev = found(0.4)

    def gain(*findings):
        s = situation({"framework": "tensorflow"}, findings=findings, other=0.9)
        s.fit, s.step_ms = ev.fit, 2.0
        return next(x for x in rule.advise(f, s) if x.title == "Run 8 steps per execution")

    alone, both = gain(), gain("host-overhead")
    assert both.expected_gain > alone.expected_gain
    assert "training steps with host overhead 90%" in both.basis
    # every second of both parts removed at most: bounded by them
    bound = ev.fit.wall_s / (ev.fit.wall_s - ev.fit.parts["validation"] - ev.fit.parts["steps"])
    assert both.expected_gain_range[-1] <= bound


def test_validation_freq_only_where_validation_ran_every_epoch():
    tl = fit_timeline(validation_s=1.0)
    tl.spans["evaluation"] = tl.spans["evaluation"][:1]  # validated once in three epochs
    ev = evidence(tl, config={"framework": "tensorflow"})
    f = rule.detect(ev)
    s = situation({"framework": "tensorflow"}, other=0.9)
    s.fit = ev.fit
    assert f is not None and not any("every" in t for t in titles(rule.advise(f, s)))


def test_no_finding_without_a_fit():
    ev = evidence(steps=10)
    assert not ev.fit.measured and rule.detect(ev) is None
