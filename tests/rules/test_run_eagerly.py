"""``run-eagerly``: the lint before the first step, the dispatch share the profile shows, the
remedy bounded by it; not on torch (where Keras's run_eagerly changes nothing)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.gain import removed
from gpudiag.analyze.lints import judge
from gpudiag.analyze.rules import run_eagerly as rule
from gpudiag.trace.model.runconfig import RunConfig
from tests.rules.kit import evidence, lint, situation

EAGER = {"framework": "tensorflow", "run_eagerly": True}


@pytest.mark.parametrize("framework", ["tensorflow", "jax"])
def test_linted_before_the_first_step(framework):
    pre = judge(RunConfig(framework=framework, api="keras", run_eagerly=True))  # as recorded
    assert rule.ID in [f.id for f in pre.findings]
    assert "run_eagerly=False" in pre.fixes[rule.ID]


@pytest.mark.parametrize(
    "config",
    [
        {"framework": "tensorflow", "run_eagerly": False},
        {"framework": "jax", "run_eagerly": None},  # unknown is not "on"
        # Keras's torch backend runs eagerly whatever run_eagerly says: nothing to change
        {"framework": "torch", "run_eagerly": True},
    ],
)
def test_not_raised(config):
    assert rule.check(lint(**config).config) is None


def test_the_profile_gives_the_dispatch_share_and_the_bounded_gain():
    ev = evidence(config=EAGER, compute_frac=0.2)
    f = rule.refine(rule.check(ev.config), ev)
    other = ev.breakdown.shares["other"]
    assert f.evidence["dispatch_share_pct"] == pytest.approx(100 * other, abs=0.1)
    assert f.severity == "high"
    (sug,) = rule.advise(f, situation(EAGER, compute=0.2))
    mid = rule.REMOVED[1]
    assert sug.expected_gain == pytest.approx(removed(other * mid), abs=0.01)
    assert sug.expected_gain_range[-1] == pytest.approx(removed(other), abs=0.01)
    assert "run_eagerly=False" in sug.detail and "tf.function" in sug.detail


@pytest.mark.parametrize(("compute", "severity"), [(0.45, "high"), (0.55, "moderate")])
def test_severity_follows_the_dispatch_share(compute, severity):
    ev = evidence(config=EAGER, compute_frac=compute)
    f = rule.refine(rule.check(ev.config), ev)
    assert f.severity == severity


def test_a_profile_that_shows_eager_ops_raises_it_without_the_lint():
    ev = evidence(config=EAGER, compute_frac=0.2)
    f = rule.refine(None, ev)
    assert f is not None and f.source == "trace"
    assert rule.refine(None, evidence(config={"framework": "tensorflow"})) is None
