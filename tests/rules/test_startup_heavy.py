"""``startup-heavy`` (info): start-up and compilation take most of a short fit."""

from __future__ import annotations

import pytest

from gpudiag.analyze.fit_account import fit_account
from gpudiag.analyze.rules import startup_heavy as rule
from tests.helpers.fit_synth import fit_timeline
from tests.rules.kit import evidence, situation


@pytest.mark.parametrize(("compile_s", "fires"), [(0.25, True), (0.15, False)])
def test_share_threshold(compile_s, fires):
    # 0.3 s of steps; start-up (0.1 s + compilation) is half the fit at 0.2 s of compilation
    tl = fit_timeline(compile_s=compile_s)
    share = fit_account(tl).share("startup")
    assert bool(share >= rule.STARTUP_SHARE) is fires
    f = rule.detect(evidence(tl))
    assert (f is not None) is fires
    if f is not None:
        assert f.severity == "info" and f.evidence["startup_pct"] == pytest.approx(
            100 * share, abs=0.1
        )
        assert rule.advise(f, situation()) == []  # a cost paid once: nothing to fix


def test_no_finding_without_a_fit():
    assert rule.detect(evidence(steps=10)) is None
